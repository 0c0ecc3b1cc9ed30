package openworkflow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

func TestCancelWhilePendingMeansTheRunNeverExecutes(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "c-pending"}, func(ctx ow.Context, _ int) (int, error) {
		calls.inc("body")
		return 1, nil
	})
	e.register(wf)
	id := start(e, wf, 0)
	if _, err := e.client.CancelRun(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	if e.tick() != 0 || calls.get("body") != 0 {
		t.Fatal("a canceled run was executed")
	}
	_, err := e.client.Handle(id).Result(e.ctx)
	if !errors.Is(err, ow.ErrRunCanceled) {
		t.Fatalf("Result: %v, want ErrRunCanceled", err)
	}
}

func TestCancelWhileParkedMeansTheRunNeverWakes(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "c-parked"}, func(ctx ow.Context, _ int) (int, error) {
		if err := ow.Sleep(ctx, "nap", time.Minute); err != nil {
			return 0, err
		}
		calls.inc("after")
		return 1, nil
	})
	e.register(wf)
	id := start(e, wf, 0)
	e.tick()
	if _, err := e.client.CancelRun(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	e.drain()
	e.requireStatus(id, backend.RunCanceled)
	if calls.get("after") != 0 {
		t.Fatal("code after the sleep ran for a canceled run")
	}
}

func TestCancelWhileExecutingCancelsTheStepContextAndCommitsNothingMore(t *testing.T) {
	// Heartbeats are an hour apart: only the backend's wake-up event can
	// bring the cancel to the started worker in time.
	e := newEnv(t, func(o *ow.WorkerOptions) { o.HeartbeatInterval, o.LeaseDuration = time.Hour, 2*time.Hour })
	stepStarted := make(chan struct{})
	stepCanceled := make(chan struct{})
	var calls counter
	wf := ow.Define(ow.Spec{Name: "c-executing"}, func(ctx ow.Context, _ int) (int, error) {
		if _, err := ow.Run(ctx, "block", func(ctx context.Context) (int, error) {
			close(stepStarted)
			<-ctx.Done()
			close(stepCanceled)
			return 0, ctx.Err()
		}); err != nil {
			return 0, err
		}
		calls.inc("next")
		return ow.Run(ctx, "next", func(context.Context) (int, error) { return 1, nil })
	})
	e.register(wf)
	id := start(e, wf, 0)
	if err := e.worker.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stepStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("step did not start")
	}
	if _, err := e.client.CancelRun(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stepCanceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the step's context was not canceled after the run was canceled")
	}
	if err := e.worker.Stop(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.requireStatus(id, backend.RunCanceled)
	if calls.get("next") != 0 {
		t.Fatal("the workflow went on after the cancel")
	}
	for _, s := range e.steps(id) {
		if s.Status != backend.StepRunning {
			t.Fatalf("step %s recorded %s after the cancel; nothing should be committed", s.StepName, s.Status)
		}
	}
}

func TestCancelReachesTheStepWithinOneHeartbeatWithoutNotifications(t *testing.T) {
	// The worker's backend drops wake-up events, as when the cancel comes
	// from another process on SQLite: only the heartbeat can notice it.
	e := newEnv(t, func(o *ow.WorkerOptions) { o.HeartbeatInterval = 100 * time.Millisecond })
	e.worker = ow.NewWorker(deaf{e.b}, ow.WorkerOptions{Now: e.clock.Now, HeartbeatInterval: 100 * time.Millisecond})
	stepStarted := make(chan struct{})
	wf := ow.Define(ow.Spec{Name: "c-heartbeat"}, func(ctx ow.Context, _ int) (int, error) {
		return ow.Run(ctx, "block", func(ctx context.Context) (int, error) {
			close(stepStarted)
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(20 * time.Second):
				return 1, nil
			}
		})
	})
	e.register(wf)
	id := start(e, wf, 0)
	done := make(chan time.Time, 1)
	go func() { e.tick(); done <- time.Now() }()
	<-stepStarted
	canceledAt := time.Now()
	if _, err := e.client.CancelRun(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-done:
		if at.Sub(canceledAt) > 5*time.Second {
			t.Fatalf("cancel took %v to stop the pass", at.Sub(canceledAt))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pass did not stop after the cancel")
	}
	e.requireStatus(id, backend.RunCanceled)
}

// deaf is a backend whose wake-up events never arrive.
type deaf struct{ backend.Backend }

func (deaf) Subscribe(context.Context) (<-chan backend.Event, error) {
	return nil, backend.ErrNotSupported
}
