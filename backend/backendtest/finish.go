package backendtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

func testCompleteRun(t *testing.T, s *suite) {
	t.Run("marks an owned run completed with its output, keeping its worker id", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		claimed := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		start := time.Now()
		got := completeRun(t, b, claimed.ID, w, `{"total":42}`)

		want := *claimed
		want.Status = backend.RunCompleted
		want.Output = json.RawMessage(`{"total":42}`)
		want.AvailableAt = nil
		want.FinishedAt = requireTimeIn(t, "finished_at", got.FinishedAt, since(start))
		requireRun(t, "completed run", got, &want)
		requireRun(t, "completed run read back", getRun(t, b, claimed.ID), &want)
	})

	t.Run("stores a nil output as JSON null", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		completeRun(t, b, r.ID, w, "")
		requireJSON(t, "output", getRun(t, b, r.ID).Output, json.RawMessage(`null`))
	})

	t.Run("clears the error left by an earlier failed attempt", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		retryRun(t, b, r.ID, w, `{"message":"first try"}`, clk.Now().Add(time.Second))
		clk.Advance(time.Second)
		w2 := newWorkerID()
		claimRun(t, b, w2, longLease, r.ID)
		got := completeRun(t, b, r.ID, w2, `"second try"`)
		if got.Error != nil || got.Status != backend.RunCompleted {
			t.Fatalf("completed run = {status %s, error %s}, want {completed, NULL}", got.Status, showJSON(got.Error))
		}
	})

	t.Run("refuses to complete a run twice, keeping the first output", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		first := completeRun(t, b, r.ID, w, `"first"`)
		_, err := Single(b).CompleteWorkflowRun(t.Context(), CompleteWorkflowRunParams{WorkflowRunID: r.ID, WorkerID: w, Output: json.RawMessage(`"second"`)})
		requireErrorIs(t, "second complete", err, backend.ErrNotOwner)
		requireRun(t, "run after the refused second complete", getRun(t, b, r.ID), first)
	})
}

// testFailRun specifies WriteFailRun: the worker has decided the
// failure is terminal (the retry policy is the engine's, see the root
// package's failedRun). Rescheduling is WriteRescheduleRun, below.
func testFailRun(t *testing.T, s *suite) {
	t.Run("fails an owned run for good with its error, clearing its worker and start", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		claimed := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		errJSON := json.RawMessage(`{"name":"Error","message":"boom","stack":"at f (x.go:1)"}`)
		start := time.Now()
		got := failRun(t, b, claimed.ID, w, string(errJSON))
		want := *claimed
		want.Status = backend.RunFailed
		want.WorkerID = nil
		want.StartedAt = nil
		want.AvailableAt = nil
		want.Error = errJSON
		want.FinishedAt = requireTimeIn(t, "finished_at", got.FinishedAt, since(start))
		requireRun(t, "failed run", got, &want)
		requireRun(t, "failed run read back", getRun(t, b, claimed.ID), &want)
		requireNothingClaimable(t, b)
	})

	t.Run("refuses to fail another worker's run, with ErrNotOwner", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		claimed := startRun(t, b, newWorkerID(), backend.CreateWorkflowRunParams{})
		_, err := Single(b).FailWorkflowRun(t.Context(), FailWorkflowRunParams{WorkflowRunID: claimed.ID, WorkerID: newWorkerID(), Error: json.RawMessage(`{"message":"x"}`)})
		requireErrorIs(t, "fail by a stranger", err, backend.ErrNotOwner)
		requireRun(t, "run after the refused failure", getRun(t, b, claimed.ID), claimed)
	})

	t.Run("a retried run is claimed again with its attempts counted", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w1 := newWorkerID()
		r := startRun(t, b, w1, backend.CreateWorkflowRunParams{})
		first := retryRun(t, b, r.ID, w1, `{"message":"one"}`, clk.Now().Add(time.Second))
		if first.Status != backend.RunPending {
			t.Fatalf("after a retry the run is %s, want pending", first.Status)
		}
		requireNothingClaimable(t, b)
		clk.Advance(time.Second)
		again := claimRun(t, b, newWorkerID(), longLease, r.ID)
		if again.Attempts != 2 || !jsonEqual(again.Error, json.RawMessage(`{"message":"one"}`)) {
			t.Fatalf("claimed again with attempts %d and error %s, want 2 and the first failure's error", again.Attempts, showJSON(again.Error))
		}
	})
}

func testRescheduleRun(t *testing.T, s *suite) {
	t.Run("sets an owned run pending at the given time with the step's error", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		claimed := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		at := ms(time.Now().Add(farFuture))
		errJSON := json.RawMessage(`{"name":"StepError","message":"step s failed"}`)
		got, err := Single(b).RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), RescheduleWorkflowRunParams{WorkflowRunID: claimed.ID, WorkerID: w, Error: errJSON, AvailableAt: at})
		if err != nil {
			t.Fatal(err)
		}
		want := *claimed
		want.Status = backend.RunPending
		want.WorkerID = nil
		want.StartedAt = nil
		want.Error = errJSON
		want.AvailableAt = &at
		requireRun(t, "rescheduled run", got, &want)
		requireRun(t, "rescheduled run read back", getRun(t, b, claimed.ID), &want)
		requireNothingClaimable(t, b)
	})

	t.Run("makes the run claimable at the given time", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		claimed := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		_, err := Single(b).RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), RescheduleWorkflowRunParams{
			WorkflowRunID: claimed.ID, WorkerID: w, Error: json.RawMessage(`{"message":"x"}`), AvailableAt: time.Now().Add(-time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		again := claimRun(t, b, newWorkerID(), longLease, claimed.ID)
		if again.Attempts != 2 {
			t.Fatalf("attempts = %d, want 2", again.Attempts)
		}
	})

	t.Run("refuses to reschedule another worker's run, with ErrNotOwner", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		claimed := startRun(t, b, newWorkerID(), backend.CreateWorkflowRunParams{})
		_, err := Single(b).RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), RescheduleWorkflowRunParams{
			WorkflowRunID: claimed.ID, WorkerID: newWorkerID(), Error: json.RawMessage(`{"message":"x"}`), AvailableAt: time.Now()})
		requireErrorIs(t, "reschedule by a stranger", err, backend.ErrNotOwner)
		requireRun(t, "run after the refused reschedule", getRun(t, b, claimed.ID), claimed)
	})
}
