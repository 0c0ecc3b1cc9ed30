package openworkflow_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

func TestPanicInWorkflowCodeFailsTheRunWithItsStackAndSparesTheWorker(t *testing.T) {
	e := newEnv(t)
	boom := ow.Define(ow.Spec{Name: "boom"}, func(ctx ow.Context, _ int) (int, error) {
		var m map[string]int
		m["x"] = 1 // nil map write panics
		return 0, nil
	})
	fine := ow.Define(ow.Spec{Name: "fine"}, func(ctx ow.Context, _ int) (int, error) { return 1, nil })
	e.register(boom, fine)
	bad := start(e, boom, 0)
	e.drain()
	r := e.requireStatus(bad, backend.RunFailed)
	errJSON := errorOf(e, r)
	if errJSON["name"] != "PanicError" || !strings.Contains(errJSON["stack"].(string), "failure_test.go") {
		t.Fatalf("error %s: want a PanicError with the stack", r.Error)
	}
	good := start(e, fine, 0)
	e.drain()
	if output[int](e, good) != 1 {
		t.Fatal("the worker did not go on after a panic")
	}
}

func TestPanicInAStepIsARetryableStepFailure(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "step-panic"}, func(ctx ow.Context, _ int) (string, error) {
		return ow.Run(ctx, "risky", func(context.Context) (string, error) {
			if calls.inc("risky") == 1 {
				panic("first time unlucky")
			}
			return "ok", nil
		})
	})
	e.register(wf)
	id := start(e, wf, 0)
	e.tick()
	steps := e.steps(id)
	if len(steps) != 1 || steps[0].Status != backend.StepFailed || !strings.Contains(string(steps[0].Error), "first time unlucky") {
		t.Fatalf("steps %+v: want one failed attempt carrying the panic", steps)
	}
	e.clock.Advance(time.Second)
	e.drain()
	if output[string](e, id) != "ok" {
		t.Fatal("step not retried after a panic")
	}
}

func stepsWorkflow(name string) *ow.Workflow[int, int] {
	return ow.Define(ow.Spec{Name: name}, func(ctx ow.Context, n int) (int, error) {
		for i := range n {
			if _, err := ow.Run(ctx, fmt.Sprintf("s%d", i), func(context.Context) (int, error) { return i, nil }); err != nil {
				return 0, err
			}
		}
		return n, nil
	})
}

func TestARunMayRecordExactlyOneThousandStepAttempts(t *testing.T) {
	e := newEnv(t)
	wf := stepsWorkflow("thousand")
	e.register(wf)
	id := start(e, wf, ow.StepLimit)
	e.drain()
	if output[int](e, id) != ow.StepLimit {
		t.Fatal("a run with exactly the limit did not complete")
	}
}

func TestTheThousandAndFirstStepAttemptFailsTheRunWithoutRetry(t *testing.T) {
	e := newEnv(t)
	wf := stepsWorkflow("too-many")
	e.register(wf)
	id := start(e, wf, ow.StepLimit+1)
	e.drain()
	r := e.requireStatus(id, backend.RunFailed)
	got := errorOf(e, r)
	if got["code"] != "STEP_LIMIT_EXCEEDED" || got["limit"] != float64(1000) || got["stepCount"] != float64(1000) {
		t.Fatalf("error %s", r.Error)
	}
	if n := len(e.steps(id)); n != ow.StepLimit {
		t.Fatalf("%d attempts recorded, want %d", n, ow.StepLimit)
	}
}

// readCounter counts GetWorkflowRun calls.
type readCounter struct {
	backend.Backend
	mu    sync.Mutex
	reads int
}

func (r *readCounter) GetWorkflowRun(ctx context.Context, id string) (*backend.WorkflowRun, error) {
	r.mu.Lock()
	r.reads++
	r.mu.Unlock()
	return r.Backend.GetWorkflowRun(ctx, id)
}

func TestResultWaitsForTheOutcomeWithoutPolling(t *testing.T) {
	e := newRealTimeEnv(t)
	gate := make(chan struct{})
	wf := ow.Define(ow.Spec{Name: "quick"}, func(ctx ow.Context, in int) (int, error) {
		return ow.Run(ctx, "inc", func(context.Context) (int, error) { <-gate; return in + 1, nil })
	})
	reads := &readCounter{Backend: e.b}
	h, err := wf.Start(e.ctx, ow.NewClient(reads), 41)
	if err != nil {
		t.Fatal(err)
	}
	ctx := startWorker(t, e.b, ow.WorkerOptions{}, wf)
	// The step holds the run for 1 s. Result's fallback poll
	// (resultFallbackPoll) comes at 2 s: a Result that missed or ignored
	// the completion event would return only then, or later if it polled
	// less often; one that polls more often reads the run more than twice.
	go func() { time.Sleep(time.Second); close(gate) }()
	waited := time.Now()
	got, err := h.Result(ctx)
	if took := time.Since(waited); took >= 1900*time.Millisecond {
		t.Fatalf("Result returned %v after the wait began, at its fallback poll: the completion event did not wake it", took)
	}
	if err != nil || got != 42 {
		t.Fatalf("Result = %d, %v", got, err)
	}
	reads.mu.Lock()
	defer reads.mu.Unlock()
	if reads.reads > 2 {
		t.Fatalf("Result read the run %d times while waiting 1 s: want 2 (before the wait, after the completion event)", reads.reads)
	}
}
