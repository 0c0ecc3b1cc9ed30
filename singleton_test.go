package openworkflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// A cancel start stops the key's running run between steps: the step in
// progress sees its context canceled, commits nothing, and the workflow's
// next step never runs; the new run completes.
func TestSingletonCancelStopsTheRunningRunBetweenSteps(t *testing.T) {
	e := newEnv(t, func(o *ow.WorkerOptions) { o.HeartbeatInterval, o.LeaseDuration = 100*time.Millisecond, time.Hour })
	stepStarted := make(chan struct{}, 2)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "deploy", Singleton: &ow.Singleton{Key: "main", Mode: ow.SingletonCancel}}, func(ctx ow.Context, n int) (int, error) {
		if _, err := ow.Run(ctx, "build", func(ctx context.Context) (int, error) {
			stepStarted <- struct{}{}
			if n == 1 {
				<-ctx.Done() // the first run builds until it is canceled
				return 0, ctx.Err()
			}
			return n, nil
		}); err != nil {
			return 0, err
		}
		calls.inc("release")
		return ow.Run(ctx, "release", func(context.Context) (int, error) { return n, nil })
	})
	e.register(wf)
	first := start(e, wf, 1) // Spec.Singleton: a cancel start of key main
	if err := e.worker.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.worker.Stop(context.Background()) })
	select {
	case <-stepStarted:
	case <-time.After(30 * time.Second):
		t.Fatal("the first run's step did not start")
	}
	h, err := wf.Start(e.ctx, e.client, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 60*time.Second)
	defer cancel()
	if out, err := h.Result(ctx); err != nil || out != 2 {
		t.Fatalf("the new run's result: %v, %v; want 2", out, err)
	}
	if _, err := e.client.Handle(first).Result(ctx); !errors.Is(err, ow.ErrRunCanceled) {
		t.Fatalf("the first run's result: %v, want ErrRunCanceled", err)
	}
	if err := e.worker.Stop(e.ctx); err != nil {
		t.Fatal(err)
	}
	if calls.get("release") != 1 {
		t.Fatalf("the release step ran %d times, want once (the new run's only)", calls.get("release"))
	}
	for _, s := range e.steps(first) {
		if s.Status == backend.StepCompleted {
			t.Fatalf("the canceled run's step %s completed", s.StepName)
		}
	}
}

// Skip returns the active run's handle; WithSingletonSkipError adds an
// error wrapping ErrSingletonSkipped; WithSingleton overrides the Spec.
func TestSingletonSkipAnswersTheActiveRun(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "report", Singleton: &ow.Singleton{Key: "daily", Mode: ow.SingletonSkip}}, func(ctx ow.Context, n int) (int, error) { return n, nil })
	e.register(wf)
	h1, err := wf.Start(e.ctx, e.client, 1)
	if err != nil || h1.SingletonSkipped {
		t.Fatalf("first start: %v (skipped %v)", err, h1 != nil && h1.SingletonSkipped)
	}
	h2, err := wf.Start(e.ctx, e.client, 2)
	if err != nil || !h2.SingletonSkipped || h2.ID != h1.ID {
		t.Fatalf("second start: %v, handle %+v; want run %s skipped, no error", err, h2, h1.ID)
	}
	h3, err := wf.Start(e.ctx, e.client, 3, ow.WithSingletonSkipError())
	if !errors.Is(err, ow.ErrSingletonSkipped) || h3 == nil || h3.ID != h1.ID {
		t.Fatalf("skip start with WithSingletonSkipError: %v, %+v; want ErrSingletonSkipped and run %s", err, h3, h1.ID)
	}
	other, err := wf.Start(e.ctx, e.client, 4, ow.WithSingleton("weekly", ow.SingletonSkip))
	if err != nil || other.SingletonSkipped || other.ID == h1.ID {
		t.Fatalf("a start of another key: %v, %+v; want a new run", err, other)
	}
	e.drain()
	if got := output[int](e, h1.ID); got != 1 {
		t.Fatalf("the key's run output %d, want 1", got)
	}
	h4, err := wf.Start(e.ctx, e.client, 5)
	if err != nil || h4.SingletonSkipped {
		t.Fatalf("a start after the key's run completed: %v (skipped %v), want a new run", err, h4.SingletonSkipped)
	}
}

// Registering a workflow whose Spec.Singleton cannot work fails, naming it.
func TestRegisterRefusesABadSingleton(t *testing.T) {
	e := newEnv(t)
	bad := ow.Define(ow.Spec{Name: "bad-singleton", Singleton: &ow.Singleton{Key: "k", Mode: "latest"}}, func(ctx ow.Context, n int) (int, error) { return n, nil })
	err := e.worker.Register(bad)
	if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "bad-singleton") || !strings.Contains(err.Error(), "singleton.mode") {
		t.Fatalf("Register = %v, want an invalid-argument error naming the workflow and singleton.mode", err)
	}
}
