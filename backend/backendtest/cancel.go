package backendtest

import (
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

func testCancelWorkflowRun(t *testing.T, s *suite) {
	cancelable := []struct {
		name string
		// setup brings a new run into the state and returns it as read back.
		setup func(t *testing.T, b backend.Backend) *backend.WorkflowRun
	}{
		{"cancels a pending run", func(t *testing.T, b backend.Backend) *backend.WorkflowRun {
			return createRun(t, b, backend.CreateWorkflowRunParams{})
		}},
		{"cancels a delayed pending run", func(t *testing.T, b backend.Backend) *backend.WorkflowRun {
			return createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: ptr(time.Now().Add(farFuture))})
		}},
		{"cancels a running run", func(t *testing.T, b backend.Backend) *backend.WorkflowRun {
			return startRun(t, b, newWorkerID(), backend.CreateWorkflowRunParams{})
		}},
		{"cancels a parked run", func(t *testing.T, b backend.Backend) *backend.WorkflowRun {
			w := newWorkerID()
			r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
			park(t, b, r.ID, w, time.Now().Add(farFuture))
			return getRun(t, b, r.ID)
		}},
		{"cancels a run waiting for a retry", func(t *testing.T, b backend.Backend) *backend.WorkflowRun {
			w := newWorkerID()
			r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
			return retryRun(t, b, r.ID, w, `{"message":"x"}`, time.Now().Add(farFuture))
		}},
	}
	for _, c := range cancelable {
		t.Run(c.name+": canceled, no worker, not available, finished now, never claimed", func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			before := c.setup(t, b)
			start := time.Now()
			got := cancelRun(t, b, before.ID)

			want := *before
			want.Status = backend.RunCanceled
			want.WorkerID = nil
			want.AvailableAt = nil
			want.FinishedAt = requireTimeIn(t, "finished_at", got.FinishedAt, since(start))
			requireRun(t, "canceled run", got, &want)
			requireRun(t, "canceled run read back", getRun(t, b, before.ID), &want)
			requireNothingClaimable(t, b)
		})
	}

	t.Run("is idempotent for a canceled run", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		first := cancelRun(t, b, createRun(t, b, backend.CreateWorkflowRunParams{}).ID)
		again := cancelRun(t, b, first.ID)
		requireRun(t, "second cancel", again, first)
		requireRun(t, "run read back after the second cancel", getRun(t, b, first.ID), first)
	})

	terminal := []struct {
		name   string
		finish func(t *testing.T, b backend.Backend, runID, worker string)
	}{
		{"refuses to cancel a completed run with ErrRunTerminal", func(t *testing.T, b backend.Backend, runID, worker string) {
			completeRun(t, b, runID, worker, `"done"`)
		}},
		{"refuses to cancel a failed run with ErrRunTerminal", func(t *testing.T, b backend.Backend, runID, worker string) {
			failRun(t, b, runID, worker, `{"message":"x"}`)
		}},
	}
	for _, c := range terminal {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			w := newWorkerID()
			r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
			c.finish(t, b, r.ID, w)
			finished := getRun(t, b, r.ID)
			_, err := b.CancelWorkflowRun(t.Context(), r.ID)
			requireErrorIs(t, "cancel of a "+string(finished.Status)+" run", err, backend.ErrRunTerminal)
			requireRun(t, "run after the refused cancel", getRun(t, b, r.ID), finished)
		})
	}

	t.Run("refuses to cancel an unknown run with ErrRunNotFound", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		_, err := b.CancelWorkflowRun(t.Context(), "wrun_missing")
		requireErrorIs(t, "cancel of an unknown run", err, backend.ErrRunNotFound)
	})
}
