package backendtest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// testHookDisposal: a run's end disposes its hooks, and frees their
// tokens.
func testHookDisposal(t *testing.T, s *suite) {
	ends := []struct {
		name string
		end  func(t *testing.T, b backend.Backend, run *backend.WorkflowRun, worker string)
	}{
		{"completes", func(t *testing.T, b backend.Backend, run *backend.WorkflowRun, worker string) {
			completeRun(t, b, run.ID, worker, `"done"`)
		}},
		{"fails", func(t *testing.T, b backend.Backend, run *backend.WorkflowRun, worker string) {
			failRun(t, b, run.ID, worker, `{"message":"boom"}`)
		}},
		{"is canceled while parked", func(t *testing.T, b backend.Backend, run *backend.WorkflowRun, worker string) {
			park(t, b, run.ID, worker, time.Now().Add(farFuture))
			cancelRun(t, b, run.ID)
		}},
	}
	for _, e := range ends {
		t.Run("disposes a run's hooks when it "+e.name+", and another run may take the token", func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			hs := hookStore(t, b)
			w := newWorkerID()
			run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
			h1 := createHook(t, b, run, w, "first", "disposable-1")
			h2 := createHook(t, b, run, w, "second", "disposable-2")
			resumeHook(t, b, "disposable-1", `"kept"`)
			e.end(t, b, run, w)

			for _, token := range []string{"disposable-1", "disposable-2"} {
				_, err := hs.GetHookByToken(t.Context(), token)
				requireErrorIs(t, "GetHookByToken of a disposed hook", err, backend.ErrHookNotFound)
				_, _, err = hs.ResumeHook(t.Context(), token, json.RawMessage(`"late"`))
				requireErrorIs(t, "ResumeHook of a disposed hook", err, backend.ErrHookNotFound)
			}
			requirePayloads(t, b, h1.ID, `"kept"`)
			requirePayloads(t, b, h2.ID)
			listed := listHooks(t, b, run.ID)
			if len(listed) != 2 {
				t.Fatalf("ListHooks of the ended run = %d hooks, want 2", len(listed))
			}
			for _, h := range listed {
				if h.Live {
					t.Fatalf("hook %s of the ended run is still live", h.ID)
				}
			}

			w2 := newWorkerID()
			next := startRun(t, b, w2, backend.CreateWorkflowRunParams{})
			reused := createHook(t, b, next, w2, "first", "disposable-1")
			got, err := hs.GetHookByToken(t.Context(), "disposable-1")
			if err != nil {
				t.Fatal(err)
			}
			requireHook(t, "the token's new hook", got, reused)
			resumeHook(t, b, "disposable-1", `"fresh"`)
			requirePayloads(t, b, reused.ID, `"fresh"`)
			requirePayloads(t, b, h1.ID, `"kept"`)
		})
	}
}

// hookWaiter is a run with a hook, parked (or owned) in a hook-wait
// attempt on it.
type hookWaiter struct {
	run      *backend.WorkflowRun // as claimed
	worker   string
	hook     *backend.Hook
	wait     *backend.StepAttempt
	parkedAt *time.Time // nil while owned
}

// startHookWaiter starts a run holding a hook with token, in a hook-wait
// attempt on it after payload afterSeq, parked unless owned.
func startHookWaiter(t testing.TB, b backend.Backend, token string, afterSeq int64, owned bool) hookWaiter {
	t.Helper()
	w := newWorkerID()
	run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "waits-for-a-hook"})
	h := createHook(t, b, run, w, "approval", token)
	wt := hookWaiter{run: run, worker: w, hook: h}
	wt.wait = createStep(t, b, run.ID, w, "approval/receive", backend.StepHookWait, hookWaitContext(h.ID, afterSeq))
	if !owned {
		wt.park(t, b)
	}
	return wt
}

// park parks the waiter's run far in the future.
func (wt *hookWaiter) park(t testing.TB, b backend.Backend) {
	t.Helper()
	wt.parkedAt = ptr(ms(time.Now().Add(farFuture)))
	park(t, b, wt.run.ID, wt.worker, *wt.parkedAt)
}

// requireStillParked checks that the waiter's run was not woken.
func (wt *hookWaiter) requireStillParked(t testing.TB, b backend.Backend) {
	t.Helper()
	want := *wt.run
	want.WorkerID = nil
	want.AvailableAt = wt.parkedAt
	requireRun(t, "parked run that got no payload for its wait", getRun(t, b, wt.run.ID), &want)
}

// testHookWakeUps: a delivery wakes a run parked on the hook, before or
// after the park, and no other.
func testHookWakeUps(t *testing.T, s *suite) {
	t.Run("wakes a run parked on the hook at once, announcing work", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wt := startHookWaiter(t, b, "wake-me", 0, false)
		var ch <-chan backend.Event
		if _, err := b.Subscribe(t.Context()); !errors.Is(err, backend.ErrNotSupported) {
			ch = subscribe(t, b)
		}
		start := time.Now()
		resumeHook(t, b, "wake-me", `{"approved":true}`)
		if ch != nil {
			awaitEvent(t, ch, "EventWorkAvailable after the delivery", isWork)
		}
		requireWoken(t, b, wt.run, since(start))
		requireStep(t, "wait attempt after the delivery", getStep(t, b, wt.wait.ID), wt.wait)
		requirePayloads(t, b, wt.hook.ID, `{"approved":true}`)
	})

	t.Run("leaves a run that is still executing untouched, and its park then due at once", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wt := startHookWaiter(t, b, "early", 0, true)
		resumeHook(t, b, "early", `"before the park"`)
		requireRun(t, "owned run after the delivery", getRun(t, b, wt.run.ID), wt.run)
		start := time.Now()
		wt.park(t, b)
		requireWoken(t, b, wt.run, since(start))
	})

	t.Run("does not wake a run whose wait is after the payloads delivered", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wt := startHookWaiter(t, b, "seen", 0, true)
		resumeHook(t, b, "seen", `1`)
		// The pass received payload 1 and now waits for the next one.
		second := createStep(t, b, wt.run.ID, wt.worker, "approval/receive:1", backend.StepHookWait, hookWaitContext(wt.hook.ID, 1))
		if _, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: wt.run.ID,
			StepAttemptID: wt.wait.ID, WorkerID: wt.worker, Output: json.RawMessage(`{"seq":1,"data":1}`)}); err != nil {
			t.Fatal(err)
		}
		wt.park(t, b)
		wt.requireStillParked(t, b)
		start := time.Now()
		resumeHook(t, b, "seen", `2`)
		requireWoken(t, b, wt.run, since(start))
		requireStep(t, "second wait after the delivery", getStep(t, b, second.ID), second)
	})

	t.Run("does not wake a run parked on another hook", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wt := startHookWaiter(t, b, "awaited", 0, true)
		createHook(t, b, wt.run, wt.worker, "other", "not-awaited")
		wt.park(t, b)
		idle := startHookWaiter(t, b, "idle", 0, false)
		resumeHook(t, b, "not-awaited", `"ignored for now"`)
		wt.requireStillParked(t, b)
		idle.requireStillParked(t, b)
		requireNothingClaimable(t, b)
	})
}
