package backendtest

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/clock"
)

// retryFailed retries a failed run (RetryWorkflowRun).
func retryFailed(t testing.TB, b backend.Backend, runID string, deadline *time.Time) *backend.WorkflowRun {
	t.Helper()
	r, err := b.RetryWorkflowRun(t.Context(), backend.RetryWorkflowRunParams{WorkflowRunID: runID, DeadlineAt: deadline})
	if err != nil {
		t.Fatalf("RetryWorkflowRun(%s): %v", runID, err)
	}
	return r
}

// failedWithSteps starts a run on worker w, records a completed step
// "first" and a failed step "second", and fails the run for good. It
// returns the failed run and its two attempts as read back.
func failedWithSteps(t *testing.T, b backend.Backend, w string) (*backend.WorkflowRun, []backend.StepAttempt) {
	t.Helper()
	r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
	requireApplied(t, "the run's steps and failure", applyGroups(t, b, []backend.Write{
		insertStep(r.ID, w, "first", backend.StepCompleted, `"one"`, ""),
		insertStep(r.ID, w, "second", backend.StepFailed, "", `{"message":"refused"}`),
		failWrite(r.ID, w, `{"message":"refused"}`),
	}))
	return getRun(t, b, r.ID), stepsOf(t, b, r.ID)
}

// requireRetryMark checks that a is the mark of a retry made at now of a
// run that had attempts claims.
func requireRetryMark(t testing.TB, a *backend.StepAttempt, run *backend.WorkflowRun, attempts int, now time.Time) {
	t.Helper()
	out, _ := json.Marshal(map[string]int{"attempts": attempts})
	at := ms(now)
	want := &backend.StepAttempt{
		NamespaceID: run.NamespaceID, ID: a.ID, WorkflowRunID: run.ID,
		StepName: "__retry:" + a.ID, Kind: backend.StepRetry, Status: backend.StepCompleted,
		Config: json.RawMessage(`{}`), Output: out,
		StartedAt: &at, FinishedAt: &at, CreatedAt: at, UpdatedAt: at,
	}
	requireStep(t, "retry mark", a, want)
}

func testRetryWorkflowRun(t *testing.T, s *suite) {
	t.Run("retries a failed run: pending and due now, no error, finish or worker, attempts and completed steps kept, a retry mark added", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		failed, steps := failedWithSteps(t, b, w)
		clk.Advance(time.Minute)
		now := clk.Now()

		got := retryFailed(t, b, failed.ID, nil)
		want := *failed
		want.Status = backend.RunPending
		want.AvailableAt = requireTimeAt(t, "available_at", got.AvailableAt, now)
		want.Error, want.FinishedAt, want.WorkerID, want.DeadlineAt = nil, nil, nil, nil
		want.UpdatedAt = *requireTimeAt(t, "updated_at", &got.UpdatedAt, now)
		requireRun(t, "retried run", got, &want)
		requireRun(t, "retried run read back", getRun(t, b, failed.ID), &want)

		after := stepsOf(t, b, failed.ID)
		if len(after) != 3 {
			t.Fatalf("%d attempts after the retry, want the 2 before and the mark", len(after))
		}
		requireStepsAs(t, "attempts before the mark", after[:2], steps)
		requireRetryMark(t, &after[2], failed, failed.Attempts, now)

		claimed := claimRun(t, b, newWorkerID(), longLease, failed.ID)
		if claimed.Attempts != failed.Attempts+1 {
			t.Fatalf("claim after the retry: attempts %d, want %d", claimed.Attempts, failed.Attempts+1)
		}
	})

	t.Run("marks each retry with the run's attempts at that time", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		failed, _ := failedWithSteps(t, b, newWorkerID())
		retryFailed(t, b, failed.ID, nil)
		w := newWorkerID()
		claimRun(t, b, w, longLease, failed.ID)
		failRun(t, b, failed.ID, w, `{"message":"again"}`)
		clk.Advance(time.Second)
		again := getRun(t, b, failed.ID)
		retryFailed(t, b, failed.ID, nil)
		steps := stepsOf(t, b, failed.ID)
		requireRetryMark(t, &steps[len(steps)-1], again, again.Attempts, clk.Now())
		if again.Attempts != failed.Attempts+1 {
			t.Fatalf("attempts after the second failure %d, want %d", again.Attempts, failed.Attempts+1)
		}
	})

	t.Run("sets the deadline given, which the claim's sweep then keeps", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		failed, _ := failedWithSteps(t, b, newWorkerID())
		deadline := clk.Now().Add(time.Minute)
		got := retryFailed(t, b, failed.ID, &deadline)
		requireTimeAt(t, "deadline_at of the retried run", got.DeadlineAt, deadline)
		clk.Set(deadline.Add(time.Millisecond))
		requireNothingClaimable(t, b)
		swept := getRun(t, b, failed.ID)
		if swept.Status != backend.RunFailed || !jsonEqual(swept.Error, backend.DeadlineExceededError()) {
			t.Fatalf("run past its new deadline: status %s, error %s; want failed with %s", swept.Status, swept.Error, backend.DeadlineExceededError())
		}
	})

	t.Run("retries a run failed by its deadline, with no deadline unless given one", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		deadline := clk.Now().Add(time.Minute)
		r := startRun(t, b, newWorkerID(), backend.CreateWorkflowRunParams{DeadlineAt: &deadline})
		clk.Set(deadline.Add(time.Millisecond))
		requireNothingClaimable(t, b) // the sweep fails it
		if got := getRun(t, b, r.ID); got.Status != backend.RunFailed {
			t.Fatalf("run past its deadline is %s, want failed", got.Status)
		}
		got := retryFailed(t, b, r.ID, nil)
		if got.DeadlineAt != nil {
			t.Fatalf("retried without a deadline: deadline_at %v, want none", got.DeadlineAt)
		}
		claimRun(t, b, newWorkerID(), longLease, r.ID)
	})

	notFailed := []struct {
		name  string
		setup func(t *testing.T, b backend.Backend, clk *clock.Fake) *backend.WorkflowRun
	}{
		{"pending", func(t *testing.T, b backend.Backend, _ *clock.Fake) *backend.WorkflowRun {
			return createRun(t, b, backend.CreateWorkflowRunParams{})
		}},
		{"running", func(t *testing.T, b backend.Backend, _ *clock.Fake) *backend.WorkflowRun {
			return startRun(t, b, newWorkerID(), backend.CreateWorkflowRunParams{})
		}},
		{"parked", func(t *testing.T, b backend.Backend, clk *clock.Fake) *backend.WorkflowRun {
			w := newWorkerID()
			r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
			park(t, b, r.ID, w, clk.Now().Add(farFuture))
			return getRun(t, b, r.ID)
		}},
		{"waiting for an automatic retry", func(t *testing.T, b backend.Backend, clk *clock.Fake) *backend.WorkflowRun {
			w := newWorkerID()
			r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
			return retryRun(t, b, r.ID, w, `{"message":"x"}`, clk.Now().Add(farFuture))
		}},
		{"completed", func(t *testing.T, b backend.Backend, _ *clock.Fake) *backend.WorkflowRun {
			w := newWorkerID()
			r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
			return completeRun(t, b, r.ID, w, `1`)
		}},
		{"canceled", func(t *testing.T, b backend.Backend, _ *clock.Fake) *backend.WorkflowRun {
			return cancelRun(t, b, createRun(t, b, backend.CreateWorkflowRunParams{}).ID)
		}},
	}
	for _, c := range notFailed {
		t.Run("refuses a "+c.name+" run with ErrRunNotFailed and changes nothing", func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			b := s.newBackendOn(t, clk)
			r := c.setup(t, b, clk)
			before, steps := getRun(t, b, r.ID), stepsOf(t, b, r.ID)
			clk.Advance(time.Second)
			_, err := b.RetryWorkflowRun(t.Context(), backend.RetryWorkflowRunParams{WorkflowRunID: r.ID})
			requireErrorIs(t, "retry of a "+c.name+" run", err, backend.ErrRunNotFailed)
			requireRun(t, "run after the refused retry", getRun(t, b, r.ID), before)
			requireStepsAs(t, "attempts after the refused retry", stepsOf(t, b, r.ID), steps)
		})
	}

	t.Run("refuses a failed run whose history holds a completed NotRetryableStep with ErrRunNotRetryable, and changes nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		requireApplied(t, "the run's mark, steps and failure", applyGroups(t, b, []backend.Write{
			insertStep(r.ID, w, "charge", backend.StepCompleted, `"ch_1"`, ""),
			insertStep(r.ID, w, backend.NotRetryableStep, backend.StepCompleted, `{"reason":"its compensations began"}`, ""),
			insertStep(r.ID, w, "ship", backend.StepFailed, "", `{"message":"refused"}`),
			failWrite(r.ID, w, `{"message":"refused"}`),
		}))
		before, steps := getRun(t, b, r.ID), stepsOf(t, b, r.ID)
		_, err := b.RetryWorkflowRun(t.Context(), backend.RetryWorkflowRunParams{WorkflowRunID: r.ID})
		requireErrorIs(t, "retry of a marked run", err, backend.ErrRunNotRetryable)
		requireRun(t, "run after the refused retry", getRun(t, b, r.ID), before)
		requireStepsAs(t, "attempts after the refused retry", stepsOf(t, b, r.ID), steps)
	})

	t.Run("refuses an unknown run with ErrRunNotFound", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		for _, id := range []string{"wrun_missing", "wrun_\x00", "wrun_\xff"} {
			_, err := b.RetryWorkflowRun(t.Context(), backend.RetryWorkflowRunParams{WorkflowRunID: id})
			requireErrorIs(t, "retry of unknown run "+id, err, backend.ErrRunNotFound)
		}
	})

	t.Run("refuses a failed run of another namespace with ErrRunNotFound", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		failed, _ := failedWithSteps(t, b, newWorkerID())
		other := s.newBackend(t)
		_, err := other.RetryWorkflowRun(t.Context(), backend.RetryWorkflowRunParams{WorkflowRunID: failed.ID})
		requireErrorIs(t, "retry from another namespace", err, backend.ErrRunNotFound)
		requireRun(t, "run after the refused retry", getRun(t, b, failed.ID), failed)
	})

	t.Run("retries a run once when two clients retry it at the same time", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace()
		b1, b2 := s.backendIn(t, ns), s.backendIn(t, ns)
		for round := range 5 {
			failed, _ := failedWithSteps(t, b1, newWorkerID())
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, b := range []backend.Backend{b1, b2} {
				wg.Go(func() {
					_, errs[i] = b.RetryWorkflowRun(t.Context(), backend.RetryWorkflowRunParams{WorkflowRunID: failed.ID})
				})
			}
			wg.Wait()
			ok, refused := 0, 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case errors.Is(err, backend.ErrRunNotFailed):
					refused++
				default:
					t.Fatalf("round %d: concurrent retry: %v", round, err)
				}
			}
			if ok != 1 || refused != 1 {
				t.Fatalf("round %d: %d retries succeeded and %d were refused, want 1 and 1 (%v)", round, ok, refused, errs)
			}
			marks := 0
			for _, a := range stepsOf(t, b1, failed.ID) {
				if a.Kind == backend.StepRetry {
					marks++
				}
			}
			if marks != 1 {
				t.Fatalf("round %d: %d retry marks, want 1", round, marks)
			}
			claimRun(t, b1, newWorkerID(), longLease, failed.ID)
		}
	})

	t.Run("announces work available", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		failed, _ := failedWithSteps(t, b, newWorkerID())
		ch := subscribe(t, b)
		retryFailed(t, b, failed.ID, nil)
		awaitEvent(t, ch, "EventWorkAvailable after a retry", isWork)
	})
}
