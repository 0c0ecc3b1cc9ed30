package interop

import (
	"context"
	"sync"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// The Go twins of the workflows of harness.mjs. JSON field names are the
// TypeScript object keys, so the same run can be begun by one SDK and
// finished by the other.

// recorder records which Go step functions really ran, as "runID/step".
type recorder struct {
	mu    sync.Mutex
	steps []string
}

func (r *recorder) record(runID, step string) {
	r.mu.Lock()
	r.steps = append(r.steps, runID+"/"+step)
	r.mu.Unlock()
}

// of returns the steps recorded for a run, in order.
func (r *recorder) of(runID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.steps {
		if len(s) > len(runID) && s[:len(runID)] == runID && s[len(runID)] == '/' {
			out = append(out, s[len(runID)+1:])
		}
	}
	return out
}

type echoIn struct {
	Msg string `json:"msg"`
	N   int    `json:"n"`
}

type echoOut struct {
	Echo    echoIn  `json:"echo"`
	By      string  `json:"by"`
	RunID   string  `json:"runId"`
	Version *string `json:"version"`
}

// goEcho is the Go twin of the "echo" kind.
func goEcho(spec ow.Spec) *ow.Workflow[echoIn, echoOut] {
	return ow.Define(spec, func(ctx ow.Context, in echoIn) (echoOut, error) {
		info := ctx.RunInfo()
		var v *string
		if info.Version != "" {
			v = &info.Version
		}
		return echoOut{Echo: in, By: "go", RunID: info.ID, Version: v}, nil
	})
}

type stepsIn struct {
	N       int `json:"n"`
	SleepMs int `json:"sleepMs"`
}

type aOut struct {
	N int `json:"n"`
}

type stepsOut struct {
	A  aOut   `json:"a"`
	A1 string `json:"a1"`
	B  string `json:"b"`
	By string `json:"by"`
}

// goStepsSleep is the Go twin of the "steps-sleep" kind: steps "a", "a"
// (key "a:1"), a durable sleep "nap", then step "b".
func goStepsSleep(name string, rec *recorder) *ow.Workflow[stepsIn, stepsOut] {
	return ow.Define(ow.Spec{Name: name}, func(ctx ow.Context, in stepsIn) (stepsOut, error) {
		id := ctx.RunInfo().ID
		var out stepsOut
		var err error
		if out.A, err = ow.Run(ctx, "a", func(context.Context) (aOut, error) {
			rec.record(id, "a")
			return aOut{N: in.N + 1}, nil
		}); err != nil {
			return out, err
		}
		if out.A1, err = ow.Run(ctx, "a", func(context.Context) (string, error) {
			rec.record(id, "a:1")
			return "second-a", nil
		}); err != nil {
			return out, err
		}
		if err := ow.Sleep(ctx, "nap", time.Duration(in.SleepMs)*time.Millisecond); err != nil {
			return out, err
		}
		if out.B, err = ow.Run(ctx, "b", func(context.Context) (string, error) {
			rec.record(id, "b")
			return "b-go", nil
		}); err != nil {
			return out, err
		}
		out.By = "go"
		return out, nil
	})
}

type childIn struct {
	N int `json:"n"`
}

type childOut struct {
	Child   string `json:"child"`
	Doubled int    `json:"doubled"`
}

// goChildDouble is the Go twin of the "child-double" kind.
func goChildDouble(name string) *ow.Workflow[childIn, childOut] {
	return ow.Define(ow.Spec{Name: name}, func(ctx ow.Context, in childIn) (childOut, error) {
		d, err := ow.Run(ctx, "double", func(context.Context) (int, error) { return in.N * 2, nil })
		return childOut{Child: "go", Doubled: d}, err
	})
}

type signalIn struct {
	Signal string `json:"signal"`
	Data   any    `json:"data,omitempty"`
}

type waitOut struct {
	Got      any    `json:"got"`
	Received bool   `json:"received"`
	By       string `json:"by"`
}

// goWaitSignal waits for in.Signal (60 s) and returns what arrived.
func goWaitSignal(name string) *ow.Workflow[signalIn, waitOut] {
	return ow.Define(ow.Spec{Name: name}, func(ctx ow.Context, in signalIn) (waitOut, error) {
		data, ok, err := ow.WaitForSignal[any](ctx, in.Signal, ow.WithTimeout(time.Minute))
		if err != nil {
			return waitOut{}, err
		}
		return waitOut{Got: data, Received: ok, By: "go"}, nil
	})
}

type sendOut struct {
	Sent []string `json:"sent"`
	By   string   `json:"by"`
}

// goSendSignal sends in.Signal with in.Data as a durable step.
func goSendSignal(name string) *ow.Workflow[signalIn, sendOut] {
	return ow.Define(ow.Spec{Name: name}, func(ctx ow.Context, in signalIn) (sendOut, error) {
		ids, err := ow.SendSignal(ctx, "", in.Signal, in.Data)
		return sendOut{Sent: ids, By: "go"}, err
	})
}
