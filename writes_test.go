package openworkflow_test

import (
	"context"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// countingBackend records every group commit the worker makes.
type countingBackend struct {
	backend.Backend
	mu      sync.Mutex
	commits [][]backend.Write
}

func (c *countingBackend) ApplyWrites(ctx context.Context, ws []backend.Write) []error {
	c.mu.Lock()
	c.commits = append(c.commits, append([]backend.Write(nil), ws...))
	c.mu.Unlock()
	return c.Backend.ApplyWrites(ctx, ws)
}

func (c *countingBackend) kinds() [][]backend.WriteKind {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]backend.WriteKind
	for _, ws := range c.commits {
		var ks []backend.WriteKind
		for _, w := range ws {
			ks = append(ks, w.Kind)
		}
		out = append(out, ks)
	}
	return out
}

func TestAFastStepCostsOneWriteAndTheLastSharesTheRunsCompletionCommit(t *testing.T) {
	e := newEnv(t)
	cb := &countingBackend{Backend: e.b}
	e.worker = ow.NewWorker(cb, ow.WorkerOptions{Now: e.clock.Now, RunningStepAfter: time.Hour})
	wf := ow.Define(ow.Spec{Name: "three"}, func(ctx ow.Context, in int) (int, error) {
		for _, name := range []string{"a", "b", "c"} {
			v, err := ow.Run(ctx, name, func(context.Context) (int, error) { return in + 1, nil })
			if err != nil {
				return 0, err
			}
			in = v
		}
		return in, nil
	})
	e.register(wf)
	id := start(e, wf, 0)
	e.drain()
	if got := output[int](e, id); got != 3 {
		t.Fatalf("output %d", got)
	}
	ins, done := backend.WriteInsertStep, backend.WriteCompleteRun
	want := [][]backend.WriteKind{{ins}, {ins}, {ins, done}}
	got := cb.kinds()
	if len(got) != len(want) {
		t.Fatalf("commits %v, want %v (one write per step; last step with the completion)", got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("commits %v, want %v", got, want)
		}
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("commits %v, want %v", got, want)
			}
		}
	}
	for _, s := range e.steps(id) {
		if s.Status != backend.StepCompleted || s.FinishedAt == nil {
			t.Fatalf("step %+v not recorded completed", s)
		}
	}
}

func TestASlowStepShowsAsRunningWhileItExecutes(t *testing.T) {
	e := newEnv(t)
	cb := &countingBackend{Backend: e.b}
	e.worker = ow.NewWorker(cb, ow.WorkerOptions{Now: e.clock.Now, RunningStepAfter: time.Millisecond})
	seenRunning := make(chan bool, 1)
	var id string
	wf := ow.Define(ow.Spec{Name: "slow-step"}, func(ctx ow.Context, _ int) (int, error) {
		return ow.Run(ctx, "slow", func(context.Context) (int, error) {
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				if steps := e.steps(id); len(steps) == 1 && steps[0].Status == backend.StepRunning {
					seenRunning <- true
					return 1, nil
				}
				time.Sleep(5 * time.Millisecond)
			}
			seenRunning <- false
			return 1, nil
		})
	})
	e.register(wf)
	id = start(e, wf, 0)
	e.drain()
	if !<-seenRunning {
		t.Fatal("a step executing longer than RunningStepAfter never showed as running")
	}
	steps := e.steps(id)
	if len(steps) != 1 || steps[0].Status != backend.StepCompleted {
		t.Fatalf("steps %+v: want the one attempt, completed", steps)
	}
}
