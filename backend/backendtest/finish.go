package backendtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

func testCompleteWorkflowRun(t *testing.T, s *suite) {
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
		b := s.newBackend(t)
		w := newWorkerID()
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		failRun(t, b, r.ID, w, `{"message":"first try"}`, backend.RetryPolicy{InitialInterval: time.Millisecond, BackoffCoefficient: 1, MaximumInterval: time.Millisecond})
		w2 := newWorkerID()
		claimEventually(t, b, w2, longLease, r.ID)
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
		_, err := b.CompleteWorkflowRun(t.Context(), backend.CompleteWorkflowRunParams{WorkflowRunID: r.ID, WorkerID: w, Output: json.RawMessage(`"second"`)})
		requireErrorIs(t, "second complete", err, backend.ErrNotOwner)
		requireRun(t, "run after the refused second complete", getRun(t, b, r.ID), first)
	})

	t.Run("refuses to complete an unknown run", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		_, err := b.CompleteWorkflowRun(t.Context(), backend.CompleteWorkflowRunParams{WorkflowRunID: "wrun_missing", WorkerID: newWorkerID()})
		requireErrorIsAny(t, "complete of an unknown run", err, backend.ErrRunNotFound, backend.ErrNotOwner)
	})
}

func testFailWorkflowRun(t *testing.T, s *suite) {
	minutely := backend.RetryPolicy{InitialInterval: time.Minute, BackoffCoefficient: 2, MaximumInterval: time.Hour}
	cases := []struct {
		name      string
		policy    backend.RetryPolicy
		attempts  *int          // nil: the backend reads the run's attempts (1)
		wantRetry time.Duration // 0: terminal failure
	}{
		{"reschedules the first failure after the initial interval", minutely, nil, time.Minute},
		{"multiplies the interval by the coefficient per attempt, from the caller's attempts", minutely, ptr(3), 4 * time.Minute},
		{"caps the interval at the maximum", minutely, ptr(10), time.Hour},
		{"retries forever when MaximumAttempts is 0", minutely, ptr(5000), time.Hour},
		{"fails for good when the attempts reach MaximumAttempts", backend.RetryPolicy{InitialInterval: time.Minute, BackoffCoefficient: 2, MaximumInterval: time.Hour, MaximumAttempts: 3}, ptr(3), 0},
		{"retries while the attempts are below MaximumAttempts", backend.RetryPolicy{InitialInterval: time.Minute, BackoffCoefficient: 2, MaximumInterval: time.Hour, MaximumAttempts: 3}, ptr(2), 2 * time.Minute},
		{"fails for good at the first failure with the default workflow policy", backend.DefaultWorkflowRetryPolicy, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			w := newWorkerID()
			claimed := startRun(t, b, w, backend.CreateWorkflowRunParams{})
			errJSON := json.RawMessage(`{"name":"Error","message":"boom","stack":"at f (x.go:1)"}`)
			start := time.Now()
			got, err := b.FailWorkflowRun(t.Context(), backend.FailWorkflowRunParams{WorkflowRunID: claimed.ID, WorkerID: w, Error: errJSON, RetryPolicy: c.policy, Attempts: c.attempts})
			if err != nil {
				t.Fatal(err)
			}
			win := since(start)

			want := *claimed
			want.WorkerID = nil
			want.StartedAt = nil
			want.Error = errJSON
			if c.wantRetry == 0 {
				want.Status = backend.RunFailed
				want.AvailableAt = nil
				want.FinishedAt = requireTimeIn(t, "finished_at", got.FinishedAt, win)
			} else {
				want.Status = backend.RunPending
				want.AvailableAt = requireTimeIn(t, "available_at", got.AvailableAt, win.add(c.wantRetry))
			}
			requireRun(t, "failed run", got, &want)
			requireRun(t, "failed run read back", getRun(t, b, claimed.ID), &want)
			requireNothingClaimable(t, b)
		})
	}

	t.Run("backs off longer on each failure as the run's attempts grow", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		// 20 ms before the first retry, 20 s before the second.
		policy := backend.RetryPolicy{InitialInterval: 20 * time.Millisecond, BackoffCoefficient: 1000, MaximumInterval: time.Hour}
		w1 := newWorkerID()
		r := startRun(t, b, w1, backend.CreateWorkflowRunParams{})
		start := time.Now()
		first := failRun(t, b, r.ID, w1, `{"message":"one"}`, policy)
		requireTimeIn(t, "available_at after the first failure", first.AvailableAt, since(start).add(20*time.Millisecond))

		w2 := newWorkerID()
		again := claimEventually(t, b, w2, longLease, r.ID)
		if again.Attempts != 2 {
			t.Fatalf("attempts after the second claim = %d, want 2", again.Attempts)
		}
		start = time.Now()
		second := failRun(t, b, r.ID, w2, `{"message":"two"}`, policy)
		requireTimeIn(t, "available_at after the second failure", second.AvailableAt, since(start).add(20*time.Second))
		if second.Status != backend.RunPending || !jsonEqual(second.Error, json.RawMessage(`{"message":"two"}`)) {
			t.Fatalf("after the second failure: status %s, error %s; want pending with the second error", second.Status, showJSON(second.Error))
		}
	})
}

func testRescheduleWorkflowRun(t *testing.T, s *suite) {
	t.Run("sets an owned run pending at the given time with the step's error", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		claimed := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		at := ms(time.Now().Add(farFuture))
		errJSON := json.RawMessage(`{"name":"StepError","message":"step s failed"}`)
		got, err := b.RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), backend.RescheduleWorkflowRunParams{WorkflowRunID: claimed.ID, WorkerID: w, Error: errJSON, AvailableAt: at})
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
		_, err := b.RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), backend.RescheduleWorkflowRunParams{
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
		_, err := b.RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), backend.RescheduleWorkflowRunParams{
			WorkflowRunID: claimed.ID, WorkerID: newWorkerID(), Error: json.RawMessage(`{"message":"x"}`), AvailableAt: time.Now()})
		requireErrorIs(t, "reschedule by a stranger", err, backend.ErrNotOwner)
		requireRun(t, "run after the refused reschedule", getRun(t, b, claimed.ID), claimed)
	})
}
