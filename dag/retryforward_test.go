package dag_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/dag"
)

// A compensated run is over: retrying it forward would run the failed
// step again and carry on after its compensations undid the steps before
// it (the card refunded, the email sent anyway). RetryRun refuses it, and
// a compensating one, with ErrRunNotRetryable, and changes nothing; a run
// that failed with nothing to compensate can still be retried.
func TestACompensatedRunIsNotRetriedForward(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		var fail atomic.Bool
		fail.Store(true)
		fx.handle("work", nil)
		fx.handle("undo", nil)
		fx.handle("email", func(context.Context, dag.StepContext) (any, error) {
			if fail.Load() {
				return nil, errors.New("smtp down")
			}
			return "sent", nil
		})
		fx.define(dag.Definition{Name: "order", Steps: []dag.Step{
			{Name: "charge", Handler: "work", Compensate: "undo"},
			{Name: "email", Handler: "email", Retries: dag.Retries(0), DependsOn: []string{"charge"}},
		}})
		fx.define(dag.Definition{Name: "plain", Steps: []dag.Step{
			{Name: "email", Handler: "email", Retries: dag.Retries(0)},
		}})
		fx.startWorker(ow.WorkerOptions{}, "order", "plain")

		runID := fx.start("order", nil)
		if st := fx.finish(runID); st.Status != dag.StatusCompensated {
			t.Fatalf("run %s, want compensated", st.Status)
		}
		fail.Store(false) // a retry would now get past email
		_, err := fx.c.RetryRun(fx.ctx, backend.RetryWorkflowRunParams{WorkflowRunID: runID})
		var nr *ow.RunNotRetryableError
		if !errors.Is(err, ow.ErrRunNotRetryable) || !errors.As(err, &nr) || nr.RunID != runID || nr.Reason == "" {
			t.Fatalf("RetryRun of a compensated run: %v, want ErrRunNotRetryable", err)
		}
		run, err := fx.c.GetRun(fx.ctx, runID)
		if err != nil || run.Status != "failed" {
			t.Fatalf("the refused retry left the run %v (%v), want failed", run.Status, err)
		}
		if st, err := fx.eng.Status(fx.ctx, runID); err != nil || st.Status != dag.StatusCompensated {
			t.Fatalf("after the refused retry the run reads %v (%v), want compensated", st.Status, err)
		}
		if n := fx.rec.count("email", false); n != 1 {
			t.Fatalf("email ran %d times, want 1: the retry was refused", n)
		}

		// A fork is a new run: allowed. Forked from the failed step, it
		// reuses charge's result (not charged again, not undone in the
		// fork), runs email again and completes; the compensated run is
		// left as it was.
		fork, err := fx.c.ForkRun(fx.ctx, runID, "email")
		if err != nil {
			t.Fatalf("fork of a compensated run from its failed step: %v", err)
		}
		if st := fx.finish(fork.ID); st.Status != dag.StatusCompleted || st.Steps["charge"].Status != dag.StatusCompleted {
			t.Fatalf("the fork ended %s (charge %s), want completed", st.Status, st.Steps["charge"].Status)
		}
		if n, u := fx.rec.count("charge", false), fx.rec.count("charge", true); n != 1 || u != 1 {
			t.Fatalf("charge ran %d times and was undone %d times, want once each (the fork reuses its result)", n, u)
		}
		if st, err := fx.eng.Status(fx.ctx, runID); err != nil || st.Status != dag.StatusCompensated {
			t.Fatalf("after the fork the original reads %v (%v), want compensated", st.Status, err)
		}

		// A run with nothing to compensate failed; retrying it runs email
		// again, and it completes.
		fail.Store(true) // before the start: a worker may take the run at once
		plainID := fx.start("plain", nil)
		if st := fx.finish(plainID); st.Status != dag.StatusFailed {
			t.Fatalf("plain run %s, want failed", st.Status)
		}
		fail.Store(false)
		if _, err := fx.c.RetryRun(fx.ctx, backend.RetryWorkflowRunParams{WorkflowRunID: plainID}); err != nil {
			t.Fatalf("RetryRun of a run with nothing compensated: %v", err)
		}
		waitFor(t, time.Minute, "the retried plain run to complete", func() (bool, error) {
			run, err := fx.c.GetRun(fx.ctx, plainID)
			return err == nil && run.Status == "completed", err
		})
	})
}

// A run held in its compensation is refused too, with the same error.
func TestACompensatingRunIsNotRetryable(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		inUndo := make(chan struct{})
		release := make(chan struct{})
		fx.handle("work", nil)
		fx.handle("boom", func(context.Context, dag.StepContext) (any, error) {
			return nil, ow.NonRetryable(errors.New("declined"))
		})
		fx.handle("undo", func(ctx context.Context, _ dag.StepContext) (any, error) {
			close(inUndo)
			select {
			case <-release:
				return "undone", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		fx.define(dag.Definition{Name: "held", Steps: []dag.Step{
			{Name: "charge", Handler: "work", Compensate: "undo"},
			{Name: "email", Handler: "boom", DependsOn: []string{"charge"}},
		}})
		fx.startWorker(ow.WorkerOptions{}, "held")
		runID := fx.start("held", nil)
		select {
		case <-inUndo:
		case <-fx.ctx.Done():
			t.Fatal("the compensation never started")
		}
		_, err := fx.c.RetryRun(fx.ctx, backend.RetryWorkflowRunParams{WorkflowRunID: runID})
		close(release)
		if !errors.Is(err, ow.ErrRunNotRetryable) {
			t.Fatalf("RetryRun of a compensating run: %v, want ErrRunNotRetryable", err)
		}
		if st := fx.finish(runID); st.Status != dag.StatusCompensated || !slices.Equal(st.Compensations, []string{"charge"}) {
			t.Fatalf("run %s, chain %v; want compensated by charge's undo", st.Status, st.Compensations)
		}
	})
}
