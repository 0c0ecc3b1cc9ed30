package backendtest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// runContinuer returns b's RunContinuer, skipping the test when b has none.
func runContinuer(t testing.TB, b backend.Backend) backend.RunContinuer {
	t.Helper()
	c, ok := b.(backend.RunContinuer)
	if !ok {
		t.Skip("the backend does not implement backend.RunContinuer")
	}
	return c
}

// continueRun continues run (leased to worker) as new with input.
func continueRun(t testing.TB, b backend.Backend, runID, worker, input string) *backend.WorkflowRun {
	t.Helper()
	next, err := runContinuer(t, b).ContinueWorkflowRun(t.Context(), backend.ContinueWorkflowRunParams{
		WorkflowRunID: runID, WorkerID: worker, Input: rawOrNil(input)})
	if err != nil {
		t.Fatalf("ContinueWorkflowRun(%s): %v", runID, err)
	}
	return next
}

// runsOf lists the runs of workflow name (up to a page).
func runsOf(t testing.TB, b backend.Backend, name string) []*backend.WorkflowRun {
	t.Helper()
	page, err := b.ListWorkflowRuns(t.Context(), backend.ListWorkflowRunsParams{WorkflowName: name, Limit: backend.MaxPageSize})
	if err != nil {
		t.Fatalf("ListWorkflowRuns(%s): %v", name, err)
	}
	out := make([]*backend.WorkflowRun, len(page.Data))
	for i := range page.Data {
		out[i] = &page.Data[i]
	}
	return out
}

// testContinueWorkflowRun specifies RunContinuer (continue-as-new, issue
// 21): one fenced transaction ends the run and starts its successor,
// lineage both ways, signals and parent moved to the successor.
func testContinueWorkflowRun(t *testing.T, s *suite) {
	t.Run("the run completes naming its successor, a pending run of the same workflow with the new input and the run's settings", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		deadline := ms(time.Now().Add(48 * time.Hour))
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{
			WorkflowName: "counter", Version: ptr("v1"), IdempotencyKey: ptr("counter-1"), Input: json.RawMessage(`{"n":0}`),
			Priority: 7, ConcurrencyKey: ptr("tenant-a"), DeadlineAt: &deadline,
			Context: json.RawMessage(`{"schedule":{"name":"nightly","scheduledAt":"2025-03-01T02:00:00.000Z","triggered":false},"forks":["wrun_x"]}`),
		})
		finishedStep(t, b, run.ID, w, "add", backend.StepFunction, `1`)
		ch := subscribe(t, b)
		before := time.Now()

		next := continueRun(t, b, run.ID, w, `{"n":1}`)
		awaitEvents(t, ch, map[string]func(backend.Event) bool{
			"EventRunFinished for the continued run": isFinished(run.ID),
			"EventWorkAvailable for its successor":   isWork,
		})

		if next.ID == run.ID || next.Status != backend.RunPending || next.WorkflowName != "counter" || next.Version == nil || *next.Version != "v1" ||
			next.IdempotencyKey != nil || next.Attempts != 0 || next.Priority != 7 || next.ConcurrencyKey == nil || *next.ConcurrencyKey != "tenant-a" ||
			next.DeadlineAt == nil || !next.DeadlineAt.Equal(deadline) || next.ParentStepAttemptID != nil || next.WorkerID != nil || next.FinishedAt != nil {
			t.Fatalf("successor = %+v; want a pending run of counter v1, no idempotency key, priority 7, key tenant-a, the same deadline", next)
		}
		requireJSON(t, "successor input", next.Input, json.RawMessage(`{"n":1}`))
		requireTimeIn(t, "successor available_at", next.AvailableAt, since(before))
		requireRun(t, "the successor read back", getRun(t, b, next.ID), next)
		if steps := runSteps(t, b, next.ID); len(steps) != 0 {
			t.Fatalf("the successor has %d attempts, want an empty history", len(steps))
		}

		old := getRun(t, b, run.ID)
		if old.Status != backend.RunCompleted || old.FinishedAt == nil || old.AvailableAt != nil || old.IdempotencyKey == nil || *old.IdempotencyKey != "counter-1" {
			t.Fatalf("continued run = %+v; want completed, finished, keeping its idempotency key", old)
		}
		requireJSON(t, "the continued run's output", old.Output, json.RawMessage(`{"continuedAsNew":{"runId":"`+next.ID+`"}}`))
		// Lineage, both ways, and the schedule link carried.
		if to, ok := backend.ContinuedTo(old.Context); !ok || to != next.ID {
			t.Fatalf("the continued run's context %s names successor %q (%v), want %s", old.Context, to, ok, next.ID)
		}
		if from, ok := backend.ContinuationOf(next.Context); !ok || from != (backend.Continuation{RunID: run.ID, Generation: 1}) {
			t.Fatalf("the successor's context %s records %+v (%v), want %s generation 1", next.Context, from, ok, run.ID)
		}
		if sr, ok := backend.ScheduledRunOf(next.Context); !ok || sr.Name != "nightly" {
			t.Fatalf("the successor's context %s records schedule %+v (%v), want nightly", next.Context, sr, ok)
		}
		if backend.ForksOfRun(next.Context) != nil {
			t.Fatalf("the successor's context %s lists the old run's forks", next.Context)
		}
		// The idempotency key still finds the first run.
		again := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "counter", Version: ptr("v1"), IdempotencyKey: ptr("counter-1"), Input: json.RawMessage(`{"n":0}`)})
		if again.ID != run.ID || !again.Reused {
			t.Fatalf("a start with the first run's key returned %s (reused %v), want the first run %s", again.ID, again.Reused, run.ID)
		}
		// The successor is claimable and continues the chain.
		claimed := claimRun(t, b, w, longLease, next.ID)
		third := continueRun(t, b, claimed.ID, w, `{"n":2}`)
		if from, ok := backend.ContinuationOf(third.Context); !ok || from != (backend.Continuation{RunID: next.ID, Generation: 2}) {
			t.Fatalf("the third run's context %s records %+v (%v), want %s generation 2", third.Context, from, ok, next.ID)
		}
	})

	t.Run("the successor of a paused run is paused with the same reason, so the chain stays held until resumed", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		if _, ok := b.(backend.RunPauser); !ok {
			t.Skip("the backend does not implement backend.RunPauser")
		}
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "counter", Version: ptr("v1")})
		// Paused while it executes: the worker may still continue it
		// before its next heartbeat says so.
		pauseRun(t, b, run.ID, "hold the chain")
		next := continueRun(t, b, run.ID, w, `{"n":1}`)
		requirePausedHeld(t, "successor of a paused run", next, backend.RunPending)
		if next.PauseReason == nil || *next.PauseReason != "hold the chain" {
			t.Fatalf("successor's pause reason = %v, want the run's", next.PauseReason)
		}
		requireNothingClaimable(t, b)
		if res := resumeRun(t, b, next.ID); !res.Acted || res.Run.Paused() {
			t.Fatalf("resume of the successor: acted %v, paused %v; want acted and unpaused", res.Acted, res.Run.Paused())
		}
		claimRun(t, b, newWorkerID(), time.Minute, next.ID)
	})

	t.Run("the successor has the run's search attributes, so a query finds every run of the chain", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		store, ok := b.(backend.SearchAttributeStore)
		if !ok {
			t.Skip("the backend does not implement backend.SearchAttributeStore")
		}
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "counter",
			SearchAttributes: backend.SearchAttributes{"customer": "c-42", "tags": []any{"a", "b"}, "n": int64(3)}})
		next := continueRun(t, b, run.ID, w, `{"n":1}`)
		got, err := store.SearchAttributesOf(t.Context(), []string{run.ID, next.ID})
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(got[run.ID])
		gotJSON, _ := json.Marshal(got[next.ID])
		if len(got[run.ID]) != 3 || string(gotJSON) != string(wantJSON) {
			t.Fatalf("successor's attributes = %s, want the run's %s", gotJSON, wantJSON)
		}
		requireQuery(t, b, backend.ListWorkflowRunsParams{}, `attrs.customer = "c-42" AND attrs.tags = "b"`, []string{next.ID, run.ID})
	})

	t.Run("a version and a start time given are the successor's", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "counter", Version: ptr("v1")})
		at := ms(time.Now().Add(time.Hour))
		next, err := runContinuer(t, b).ContinueWorkflowRun(t.Context(), backend.ContinueWorkflowRunParams{
			WorkflowRunID: run.ID, WorkerID: w, Version: ptr("v2"), AvailableAt: at, Context: json.RawMessage(`{"traceContext":{"traceparent":"x"}}`)})
		if err != nil {
			t.Fatal(err)
		}
		if next.Version == nil || *next.Version != "v2" || next.AvailableAt == nil || !next.AvailableAt.Equal(at) {
			t.Fatalf("successor = version %v, available %v; want v2 at %s", next.Version, next.AvailableAt, at)
		}
		requireJSON(t, "successor input", next.Input, json.RawMessage(`null`))
		requireJSON(t, "successor context", next.Context, json.RawMessage(`{"traceContext":{"traceparent":"x"},"continuedFrom":{"runId":"`+run.ID+`","generation":1}}`))
		requireNothingClaimable(t, b)
	})

	t.Run("a worker that lost the run creates nothing and changes nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		c := runContinuer(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "lost"})
		// The lease moves to another worker (as after an expiry).
		park(t, b, run.ID, w, time.Now())
		other := newWorkerID()
		claimRun(t, b, other, longLease, run.ID)
		held := getRun(t, b, run.ID)
		_, err := c.ContinueWorkflowRun(t.Context(), backend.ContinueWorkflowRunParams{WorkflowRunID: run.ID, WorkerID: w, Input: json.RawMessage(`1`)})
		requireErrorIs(t, "continue by the worker that lost the run", err, backend.ErrNotOwner)
		if runs := runsOf(t, b, "lost"); len(runs) != 1 {
			t.Fatalf("%d runs of the workflow after a refused continuation, want 1", len(runs))
		}
		requireRun(t, "the run after a refused continuation", getRun(t, b, run.ID), held)

		cancelRun(t, b, run.ID)
		_, err = c.ContinueWorkflowRun(t.Context(), backend.ContinueWorkflowRunParams{WorkflowRunID: run.ID, WorkerID: other})
		requireErrorIs(t, "continue a canceled run", err, backend.ErrNotOwner)
		_, err = c.ContinueWorkflowRun(t.Context(), backend.ContinueWorkflowRunParams{WorkflowRunID: "wrun_missing", WorkerID: other})
		requireErrorIs(t, "continue a missing run", err, backend.ErrRunNotFound)
		_, err = c.ContinueWorkflowRun(t.Context(), backend.ContinueWorkflowRunParams{WorkflowRunID: run.ID, WorkerID: other, Input: json.RawMessage(`{"a":`)})
		requireErrorIs(t, "continue with an input that is not JSON", err, backend.ErrInvalidArgument)
		if runs := runsOf(t, b, "lost"); len(runs) != 1 {
			t.Fatalf("%d runs of the workflow after refused continuations, want 1", len(runs))
		}
	})

	t.Run("signals stored for the run and not received move to the successor in order; received ones stay", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "inbox"})
		signalRun(t, b, run.ID, "msg", `"first"`, nil)
		wait := createStep(t, b, run.ID, w, "msg", backend.StepSignalWait, signalWaitContext("msg"))
		receive(t, b, run.ID, w, wait, "msg", json.RawMessage(`"first"`))
		finishWait(t, b, run.ID, w, wait)
		signalRun(t, b, run.ID, "msg", `"second"`, ptr("k2"))
		signalRun(t, b, run.ID, "msg", `"third"`, nil)
		signalRun(t, b, run.ID, "other", `"x"`, nil)

		next := continueRun(t, b, run.ID, w, ``)
		if _, err := b.SignalRun(t.Context(), backend.SignalRunParams{WorkflowRunID: run.ID, Signal: "msg", Data: json.RawMessage(`"late"`)}); !errors.Is(err, backend.ErrRunTerminal) {
			t.Fatalf("SignalRun to the continued run: %v, want ErrRunTerminal (the sender addresses the successor)", err)
		}
		// The key moved with its signal: a resend is a duplicate.
		if sig := signalRun(t, b, next.ID, "msg", `"second"`, ptr("k2")); !sig.Duplicate {
			t.Fatalf("a resend of the moved keyed signal = %+v, want a duplicate", sig)
		}
		claimRun(t, b, w, longLease, next.ID)
		for i, want := range []string{`"second"`, `"third"`} {
			wait := createStep(t, b, next.ID, w, "msg#"+string(rune('0'+i)), backend.StepSignalWait, signalWaitContext("msg"))
			receive(t, b, next.ID, w, wait, "msg", json.RawMessage(want))
			finishWait(t, b, next.ID, w, wait)
		}
		o := createStep(t, b, next.ID, w, "other", backend.StepSignalWait, signalWaitContext("other"))
		receive(t, b, next.ID, w, o, "other", json.RawMessage(`"x"`))
		last := createStep(t, b, next.ID, w, "msg#9", backend.StepSignalWait, signalWaitContext("msg"))
		receive(t, b, next.ID, w, last, "msg", nil)
	})

	t.Run("a parent waiting on the run waits on its successor and wakes when the chain ends", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		pw, cw := newWorkerID(), newWorkerID()
		f := startFamily(t, b, pw)
		park(t, b, f.parent.ID, pw, time.Now().Add(time.Hour))
		claimRun(t, b, cw, longLease, f.child.ID)
		next := continueRun(t, b, f.child.ID, cw, `"more"`)
		if next.ParentStepAttemptID == nil || *next.ParentStepAttemptID != f.step.ID || next.ParentStepAttemptNamespaceID == nil || *next.ParentStepAttemptNamespaceID != b.NamespaceID() {
			t.Fatalf("successor's parent link = %v/%v, want the parent's step %s", next.ParentStepAttemptNamespaceID, next.ParentStepAttemptID, f.step.ID)
		}
		step := getStep(t, b, f.step.ID)
		if step.ChildWorkflowRunID == nil || *step.ChildWorkflowRunID != next.ID || step.Status != backend.StepRunning {
			t.Fatalf("the parent's step = %+v, want it running and linked to the successor %s", step, next.ID)
		}
		if p := getRun(t, b, f.parent.ID); p.AvailableAt == nil || p.AvailableAt.Before(time.Now().Add(30*time.Minute)) {
			t.Fatalf("the parent is due at %v after the child continued, want it still parked (the chain goes on)", p.AvailableAt)
		}
		claimRun(t, b, cw, longLease, next.ID)
		completeRun(t, b, next.ID, cw, `"done"`)
		if p := getRun(t, b, f.parent.ID); p.AvailableAt == nil || p.AvailableAt.After(time.Now()) {
			t.Fatalf("the parent is due at %v after the chain's last run completed, want now", p.AvailableAt)
		}
	})

	t.Run("a schedule's last run becomes the successor, so its overlap rule sees the chain running", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ss := scheduleStore(t, b)
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", WorkflowName: "report", Cron: "*/10 * * * * *", Input: json.RawMessage(`1`)})
		clk.Advance(10*time.Second + 3*time.Millisecond)
		r := fire(t, ss)
		requireOutcomes(t, r, fakeEpoch, "started@10s")
		runID := r.Firings[0].Ticks[0].RunID
		w := newWorkerID()
		claimRun(t, b, w, longLease, runID)
		next := continueRun(t, b, runID, w, `2`)
		if got := getSchedule(t, ss, "s"); got.LastRunID == nil || *got.LastRunID != next.ID {
			t.Fatalf("the schedule's last run = %v after its run continued, want the successor %s", got.LastRunID, next.ID)
		}
		requireScheduledRun(t, b, next.ID, "s", fakeEpoch.Add(10*time.Second), false, `2`)
		// The next tick finds the chain's run still pending: the default
		// overlap policy skips it.
		clk.Advance(10 * time.Second)
		if r := fire(t, ss); len(r.Firings) != 1 || len(r.Firings[0].Ticks) != 1 || r.Firings[0].Ticks[0].RunID != "" {
			t.Fatalf("the next tick while the chain runs: %v, want it not to start a run", outcomes(r, fakeEpoch))
		}
	})
}
