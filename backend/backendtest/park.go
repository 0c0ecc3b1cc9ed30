package backendtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// requireWoken checks that the parked run claimed (as it was when its
// worker claimed it) is now parked with available_at inside w (woken "now"),
// and that a worker can claim it at once.
func requireWoken(t testing.TB, b backend.Backend, claimed *backend.WorkflowRun, w window) {
	t.Helper()
	got := getRun(t, b, claimed.ID)
	want := *claimed
	want.WorkerID = nil
	want.AvailableAt = requireTimeIn(t, "available_at of the woken run", got.AvailableAt, w)
	requireRun(t, "woken run", got, &want)
	claimRun(t, b, newWorkerID(), longLease, claimed.ID)
}

// requireParkedUntil checks that the run claimed is parked until at and
// not claimable.
func requireParkedUntil(t testing.TB, b backend.Backend, claimed *backend.WorkflowRun, at time.Time) {
	t.Helper()
	want := *claimed
	want.WorkerID = nil
	want.AvailableAt = &at
	requireRun(t, "parked run", getRun(t, b, claimed.ID), &want)
	requireNothingClaimable(t, b)
}

func testParkRun(t *testing.T, s *suite) {
	t.Run("parks an owned run: still running, no worker, available at the given time", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		claimed := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		at := ms(time.Now().Add(farFuture))
		park(t, b, claimed.ID, w, at)
		requireParkedUntil(t, b, claimed, at)
	})

	t.Run("makes a parked run claimable again when its time comes", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		claimed := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		park(t, b, claimed.ID, w, clk.Now().Add(time.Minute))
		clk.Advance(time.Minute - time.Millisecond)
		requireNothingClaimable(t, b)
		clk.Advance(time.Millisecond)
		next := newWorkerID()
		again := claimRun(t, b, next, longLease, claimed.ID)
		if again.Attempts != 2 || again.WorkerID == nil || *again.WorkerID != next || again.Status != backend.RunRunning {
			t.Fatalf("reclaimed parked run = {attempts %d, worker %v, status %s}, want {2, %s, running}", again.Attempts, again.WorkerID, again.Status, next)
		}
	})

	t.Run("refuses to park a run owned by another worker, with ErrNotOwner", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		claimed := startRun(t, b, newWorkerID(), backend.CreateWorkflowRunParams{})
		err := Single(b).SleepWorkflowRun(t.Context(), SleepWorkflowRunParams{WorkflowRunID: claimed.ID, WorkerID: newWorkerID(), AvailableAt: time.Now()})
		requireErrorIs(t, "park by a stranger", err, backend.ErrNotOwner)
		requireRun(t, "run after the refused park", getRun(t, b, claimed.ID), claimed)
	})

	t.Run("refuses to park a canceled run, with ErrNotOwner", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		claimed := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		canceled := cancelRun(t, b, claimed.ID)
		err := Single(b).SleepWorkflowRun(t.Context(), SleepWorkflowRunParams{WorkflowRunID: claimed.ID, WorkerID: w, AvailableAt: time.Now()})
		requireErrorIs(t, "park of a canceled run", err, backend.ErrNotOwner)
		requireRun(t, "canceled run after the refused park", getRun(t, b, claimed.ID), canceled)
	})

	t.Run("refuses new step attempts from the worker that parked the run", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		claimed := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		park(t, b, claimed.ID, w, time.Now().Add(farFuture))
		_, err := Single(b).CreateStepAttempt(t.Context(), CreateStepAttemptParams{WorkflowRunID: claimed.ID, WorkerID: w, StepName: "late", Kind: backend.StepFunction})
		requireErrorIs(t, "step created after parking", err, backend.ErrNotOwner)
	})

	t.Run("reconciles wake-ups that arrived before the park", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name string
			// arrive makes the wake-up happen while the parent is still
			// owned; it returns the parent as claimed.
			arrive   func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun
			wantWake bool
		}{
			{"wakes the run at once when its child already completed", func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun {
				f := startFamily(t, b, worker)
				wc := newWorkerID()
				claimRun(t, b, wc, longLease, f.child.ID)
				completeRun(t, b, f.child.ID, wc, `"child done"`)
				return f.parent
			}, true},
			{"wakes the run at once when its child already failed for good", func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun {
				f := startFamily(t, b, worker)
				wc := newWorkerID()
				claimRun(t, b, wc, longLease, f.child.ID)
				failRun(t, b, f.child.ID, wc, `{"message":"child failed"}`)
				return f.parent
			}, true},
			{"wakes the run at once when its child was already canceled", func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun {
				f := startFamily(t, b, worker)
				cancelRun(t, b, f.child.ID)
				return f.parent
			}, true},
			{"wakes the run at once when a signal was already delivered to its wait", func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun {
				parent := startRun(t, b, worker, backend.CreateWorkflowRunParams{})
				createStep(t, b, parent.ID, worker, "approval", backend.StepSignalWait, signalWaitContext("approve"))
				sendSignal(t, b, "approve", `{"ok":true}`)
				return parent
			}, true},
			{"keeps the park time while the child is still running", func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun {
				f := startFamily(t, b, worker)
				claimRun(t, b, newWorkerID(), longLease, f.child.ID)
				return f.parent
			}, false},
			{"keeps the park time when the child's failure will be retried", func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun {
				f := startFamily(t, b, worker)
				wc := newWorkerID()
				claimRun(t, b, wc, longLease, f.child.ID)
				retryRun(t, b, f.child.ID, wc, `{"message":"transient"}`, time.Now().Add(farFuture))
				return f.parent
			}, false},
			{"keeps the park time when a signal was sent before the wait existed", func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun {
				parent := startRun(t, b, worker, backend.CreateWorkflowRunParams{})
				sendSignal(t, b, "approve", `{"ok":true}`)
				createStep(t, b, parent.ID, worker, "approval", backend.StepSignalWait, signalWaitContext("approve"))
				return parent
			}, false},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				b := s.newBackend(t)
				w := newWorkerID()
				parent := c.arrive(t, b, w)
				at := ms(time.Now().Add(farFuture))
				start := time.Now()
				park(t, b, parent.ID, w, at)
				if c.wantWake {
					requireWoken(t, b, parent, since(start))
				} else {
					requireParkedUntil(t, b, parent, at)
				}
			})
		}
	})
}

func testParentWakeUps(t *testing.T, s *suite) {
	cases := []struct {
		name string
		// finish ends the child (claimed by worker wc when claimed is true).
		finish   func(t *testing.T, b backend.Backend, child, wc string)
		claim    bool
		wantWake bool
	}{
		{"wakes a parked parent at once when its child completes", func(t *testing.T, b backend.Backend, child, wc string) {
			completeRun(t, b, child, wc, `{"child":"output"}`)
		}, true, true},
		{"wakes a parked parent at once when its child fails for good", func(t *testing.T, b backend.Backend, child, wc string) {
			failRun(t, b, child, wc, `{"message":"child failed"}`)
		}, true, true},
		{"wakes a parked parent at once when its pending child is canceled", func(t *testing.T, b backend.Backend, child, wc string) {
			cancelRun(t, b, child)
		}, false, true},
		{"wakes a parked parent at once when its running child is canceled", func(t *testing.T, b backend.Backend, child, wc string) {
			cancelRun(t, b, child)
		}, true, true},
		{"does not wake the parent when its child's failure will be retried", func(t *testing.T, b backend.Backend, child, wc string) {
			got := retryRun(t, b, child, wc, `{"message":"transient"}`, time.Now().Add(farFuture))
			if got.Status != backend.RunPending {
				t.Fatalf("child status after a retryable failure = %s, want pending", got.Status)
			}
		}, true, false},
		{"does not wake the parent when its child is rescheduled after a failed step", func(t *testing.T, b backend.Backend, child, wc string) {
			_, err := Single(b).RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), RescheduleWorkflowRunParams{
				WorkflowRunID: child, WorkerID: wc, Error: json.RawMessage(`{"message":"step failed"}`), AvailableAt: time.Now().Add(farFuture)})
			if err != nil {
				t.Fatal(err)
			}
		}, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			wp, wc := newWorkerID(), newWorkerID()
			f := startFamily(t, b, wp)
			if c.claim {
				claimRun(t, b, wc, longLease, f.child.ID)
			}
			at := ms(time.Now().Add(farFuture))
			park(t, b, f.parent.ID, wp, at)
			start := time.Now()
			c.finish(t, b, f.child.ID, wc)
			if c.wantWake {
				requireWoken(t, b, f.parent, since(start))
			} else {
				requireParkedUntil(t, b, f.parent, at)
			}
		})
	}

	t.Run("does not touch a parent that is still running when its child completes", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wp, wc := newWorkerID(), newWorkerID()
		f := startFamily(t, b, wp)
		claimRun(t, b, wc, longLease, f.child.ID)
		completeRun(t, b, f.child.ID, wc, `1`)
		requireRun(t, "running parent after its child completed", getRun(t, b, f.parent.ID), f.parent)
	})

	t.Run("does not wake a parked parent whose workflow step is no longer running", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wp, wc := newWorkerID(), newWorkerID()
		f := startFamily(t, b, wp)
		if _, err := Single(b).FailStepAttempt(t.Context(), FailStepAttemptParams{WorkflowRunID: f.parent.ID, StepAttemptID: f.step.ID, WorkerID: wp, Error: json.RawMessage(`{"message":"timed out"}`)}); err != nil {
			t.Fatal(err)
		}
		at := ms(time.Now().Add(farFuture))
		park(t, b, f.parent.ID, wp, at)
		claimRun(t, b, wc, longLease, f.child.ID)
		completeRun(t, b, f.child.ID, wc, `1`)
		requireParkedUntil(t, b, f.parent, at)
	})
}
