package backendtest

import (
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// pauser returns b's [backend.RunPauser], skipping the test when b has
// none.
func pauser(t *testing.T, b backend.Backend) backend.RunPauser {
	t.Helper()
	p, ok := b.(backend.RunPauser)
	if !ok {
		t.Skip("backend does not implement backend.RunPauser")
	}
	return p
}

func pauseRun(t *testing.T, b backend.Backend, runID, reason string) *backend.RunControlResult {
	t.Helper()
	res, err := pauser(t, b).PauseWorkflowRun(t.Context(), backend.PauseWorkflowRunParams{WorkflowRunID: runID, Reason: reason})
	if err != nil {
		t.Fatalf("PauseWorkflowRun(%s): %v", runID, err)
	}
	return res
}

func resumeRun(t *testing.T, b backend.Backend, runID string) *backend.RunControlResult {
	t.Helper()
	res, err := resumeRunErr(t, b, runID)
	if err != nil {
		t.Fatalf("ResumeWorkflowRun(%s): %v", runID, err)
	}
	return res
}

func resumeRunErr(t *testing.T, b backend.Backend, runID string) (*backend.RunControlResult, error) {
	t.Helper()
	return pauser(t, b).ResumeWorkflowRun(t.Context(), backend.ResumeWorkflowRunParams{WorkflowRunID: runID, MarkID: id.New(id.PrefixStep)})
}

// requirePausedHeld checks what makes a paused run untakeable by any
// claim, OpenWorkflow's TypeScript one (available_at <= now) included:
// available_at and go_queued_at NULL, status kept, Paused.
func requirePausedHeld(t *testing.T, what string, r *backend.WorkflowRun, status backend.RunStatus) {
	t.Helper()
	if !r.Paused() || r.PausedAt == nil {
		t.Fatalf("%s: Paused() = false (pausedAt %v), want a paused run", what, r.PausedAt)
	}
	if r.AvailableAt != nil || r.QueuedAt != nil {
		t.Fatalf("%s: available_at %v, queued_at %v; want both NULL so that no claim (TypeScript's included) sees it", what, r.AvailableAt, r.QueuedAt)
	}
	if r.Status != status {
		t.Fatalf("%s: status %s, want %s kept (paused is not a status)", what, r.Status, status)
	}
}

func testPauseResume(t *testing.T, s *suite) {
	t.Run("a pending run paused keeps its status, is claimed by no one, and resumed is due at its start time again", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		r := createRun(t, b, backend.CreateWorkflowRunParams{})
		res := pauseRun(t, b, r.ID, "investigating")
		if !res.Acted {
			t.Fatal("first pause: Acted false, want true")
		}
		requirePausedHeld(t, "paused run", res.Run, backend.RunPending)
		if res.Run.PauseReason == nil || *res.Run.PauseReason != "investigating" {
			t.Fatalf("pause reason %v, want investigating", res.Run.PauseReason)
		}
		requirePausedHeld(t, "paused run read back", getRun(t, b, r.ID), backend.RunPending)
		requireNothingClaimable(t, b)

		again := pauseRun(t, b, r.ID, "another reason")
		if again.Acted || again.Run.PauseReason == nil || *again.Run.PauseReason != "investigating" {
			t.Fatalf("second pause: acted %v, reason %v; want not acted and the first reason kept", again.Acted, again.Run.PauseReason)
		}

		clk.Advance(time.Minute)
		up := resumeRun(t, b, r.ID)
		if !up.Acted || up.Run.Paused() || up.Run.PausedAt != nil || up.Run.PauseReason != nil {
			t.Fatalf("resume: acted %v, pausedAt %v, reason %v; want acted and the pause cleared", up.Acted, up.Run.PausedAt, up.Run.PauseReason)
		}
		if up.Run.AvailableAt == nil || !up.Run.AvailableAt.Equal(*r.AvailableAt) {
			t.Fatalf("resumed available_at %v, want the start time %v restored", up.Run.AvailableAt, r.AvailableAt)
		}
		claimRun(t, b, newWorkerID(), longLease, r.ID)

		if again := resumeRun(t, b, r.ID); again.Acted {
			t.Fatal("resume of a run neither paused nor canceled: Acted true, want false")
		}
	})

	t.Run("a pause is durable: another backend on the same namespace sees the run paused and claims nothing", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		r := createRun(t, b, backend.CreateWorkflowRunParams{})
		pauseRun(t, b, r.ID, "")
		other := s.backendInOn(t, b.NamespaceID(), clk)
		got := getRun(t, other, r.ID)
		requirePausedHeld(t, "paused run read by another backend", got, backend.RunPending)
		if got.PauseReason != nil {
			t.Fatalf("reason %q, want none", *got.PauseReason)
		}
		requireNothingClaimable(t, other)
	})

	t.Run("pausing a terminal run fails with ErrRunTerminal, a missing one with ErrRunNotFound, a long reason with ErrInvalidArgument", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		done := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		completeRun(t, b, done.ID, w, `1`)
		canceled := createRun(t, b, backend.CreateWorkflowRunParams{})
		cancelRun(t, b, canceled.ID)
		p := pauser(t, b)
		for _, id := range []string{done.ID, canceled.ID} {
			_, err := p.PauseWorkflowRun(t.Context(), backend.PauseWorkflowRunParams{WorkflowRunID: id})
			requireErrorIs(t, "pause of a terminal run", err, backend.ErrRunTerminal)
		}
		_, err := p.PauseWorkflowRun(t.Context(), backend.PauseWorkflowRunParams{WorkflowRunID: "wrun_missing"})
		requireErrorIs(t, "pause of a missing run", err, backend.ErrRunNotFound)
		pending := createRun(t, b, backend.CreateWorkflowRunParams{})
		_, err = p.PauseWorkflowRun(t.Context(), backend.PauseWorkflowRunParams{WorkflowRunID: pending.ID, Reason: strings.Repeat("x", backend.MaxPauseReasonLength+1)})
		requireErrorIs(t, "pause with a long reason", err, backend.ErrInvalidArgument)
		if getRun(t, b, pending.ID).Paused() {
			t.Fatal("a refused pause paused the run")
		}
	})

	t.Run("an executing run paused: its step is recorded, the heartbeat says paused, its park is accepted and held, and resume makes it due", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		pauseRun(t, b, r.ID, "")
		requirePausedHeld(t, "executing run paused", getRun(t, b, r.ID), backend.RunRunning)
		if got := getRun(t, b, r.ID); got.WorkerID == nil || *got.WorkerID != w {
			t.Fatalf("worker %v, want the run still leased to %s (its step finishes)", got.WorkerID, w)
		}

		err := b.ExtendWorkflowRunLease(t.Context(), backend.ExtendWorkflowRunLeaseParams{WorkflowRunID: r.ID, WorkerID: w, LeaseDuration: longLease})
		requireErrorIs(t, "heartbeat of a paused run", err, backend.ErrRunPaused)
		requirePausedHeld(t, "paused run after its heartbeat", getRun(t, b, r.ID), backend.RunRunning)

		requireApplied(t, "the step in progress and the hand-back", applyGroups(t, b, []backend.Write{
			insertStep(r.ID, w, "in-progress", backend.StepCompleted, `"done"`, ""),
			parkWrite(r.ID, w, clk.Now()),
		}))
		if steps := stepsOf(t, b, r.ID); len(steps) != 1 || steps[0].Status != backend.StepCompleted {
			t.Fatalf("steps after the hand-back: %+v, want the one completed step", steps)
		}
		got := getRun(t, b, r.ID)
		requirePausedHeld(t, "handed-back paused run", got, backend.RunRunning)
		if got.WorkerID != nil {
			t.Fatalf("worker %s, want none after the hand-back", *got.WorkerID)
		}
		clk.Advance(time.Hour)
		requireNothingClaimable(t, b)

		up := resumeRun(t, b, r.ID)
		if up.Run.AvailableAt == nil || up.Run.AvailableAt.After(clk.Now()) {
			t.Fatalf("resumed available_at %v, want due (at or before %v)", up.Run.AvailableAt, clk.Now())
		}
		claimRun(t, b, newWorkerID(), longLease, r.ID)
	})

	t.Run("a parked run's wake-up while paused is held; resume makes it due at once, not at its old wake-up", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		wait := createStep(t, b, r.ID, w, "wait", backend.StepSignalWait, signalWaitContext("go"))
		wake := clk.Now().Add(24 * time.Hour)
		park(t, b, r.ID, w, wake)
		pauseRun(t, b, r.ID, "")
		if _, err := b.SendSignal(t.Context(), backend.SendSignalParams{Signal: "go", Data: []byte(`1`)}); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := b.GetSignalDelivery(t.Context(), wait.ID); err != nil || !ok {
			t.Fatalf("delivery to the paused run's wait: delivered %v, %v; want it recorded", ok, err)
		}
		requirePausedHeld(t, "paused run signaled", getRun(t, b, r.ID), backend.RunRunning)
		requireNothingClaimable(t, b)
		up := resumeRun(t, b, r.ID)
		if up.Run.AvailableAt == nil || up.Run.AvailableAt.After(clk.Now()) {
			t.Fatalf("resumed available_at %v, want due now (%v), not the old wake-up %v", up.Run.AvailableAt, clk.Now(), wake)
		}
		claimRun(t, b, newWorkerID(), longLease, r.ID)
	})

	t.Run("a paused run's deadline keeps running: the claim's sweep fails it", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		r := createRun(t, b, backend.CreateWorkflowRunParams{DeadlineAt: ptr(clk.Now().Add(time.Minute))})
		pauseRun(t, b, r.ID, "")
		clk.Advance(2 * time.Minute)
		requireNothingClaimable(t, b)
		got := getRun(t, b, r.ID)
		if got.Status != backend.RunFailed || got.Paused() {
			t.Fatalf("status %s, paused %v; want failed by its deadline and no longer paused", got.Status, got.Paused())
		}
	})

	t.Run("cancel acts at once on a paused run", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		r := createRun(t, b, backend.CreateWorkflowRunParams{})
		pauseRun(t, b, r.ID, "")
		got := cancelRun(t, b, r.ID)
		if got.Status != backend.RunCanceled || got.Paused() {
			t.Fatalf("status %s, paused %v; want canceled, not paused", got.Status, got.Paused())
		}
	})

	t.Run("a canceled run resumes in place: pending and due, steps kept, a resume mark added, claimable; its interrupted step has no completed attempt", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		requireApplied(t, "a completed step", applyGroups(t, b, []backend.Write{
			insertStep(r.ID, w, "first", backend.StepCompleted, `"one"`, ""),
			insertStep(r.ID, w, "second", backend.StepRunning, "", ""),
		}))
		canceled := cancelRun(t, b, r.ID)
		clk.Advance(time.Minute)
		up := resumeRun(t, b, r.ID)
		got := up.Run
		if !up.Acted || got.ID != r.ID || got.Status != backend.RunPending || got.FinishedAt != nil || got.Error != nil || got.WorkerID != nil {
			t.Fatalf("resumed run %+v, want the same run pending without finish time, error or worker", got)
		}
		if got.Attempts != canceled.Attempts {
			t.Fatalf("attempts %d, want %d kept (the next claim reads the history)", got.Attempts, canceled.Attempts)
		}
		requireTimeAt(t, "available_at", got.AvailableAt, clk.Now())
		steps := stepsOf(t, b, r.ID)
		byName := map[string]backend.StepAttempt{}
		for _, a := range steps {
			byName[strings.SplitN(a.StepName, ":", 2)[0]] = a
		}
		mark := byName["__resume"]
		if len(steps) != 3 || byName["first"].Status != backend.StepCompleted || byName["second"].Status == backend.StepCompleted ||
			mark.Kind != backend.StepRetry || mark.StepName != "__resume:"+mark.ID || mark.Status != backend.StepCompleted ||
			steps[2].ID != mark.ID {
			t.Fatalf("steps after the resume: %+v; want first completed, second not completed, then (last) a __resume: mark", steps)
		}
		claimed := claimRun(t, b, newWorkerID(), longLease, r.ID)
		if claimed.Attempts != canceled.Attempts+1 {
			t.Fatalf("claimed attempts %d, want %d", claimed.Attempts, canceled.Attempts+1)
		}
	})

	t.Run("resume refuses a completed run (ErrRunTerminal), a failed one (ErrRunNotCanceled), a canceled one past its deadline (ErrDeadlinePassed), a missing one (ErrRunNotFound)", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		done := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		completeRun(t, b, done.ID, w, `1`)
		_, err := resumeRunErr(t, b, done.ID)
		requireErrorIs(t, "resume of a completed run", err, backend.ErrRunTerminal)

		failed := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		failRun(t, b, failed.ID, w, `{"message":"no"}`)
		_, err = resumeRunErr(t, b, failed.ID)
		requireErrorIs(t, "resume of a failed run", err, backend.ErrRunNotCanceled)

		late := createRun(t, b, backend.CreateWorkflowRunParams{DeadlineAt: ptr(clk.Now().Add(time.Minute))})
		cancelRun(t, b, late.ID)
		clk.Advance(2 * time.Minute)
		_, err = resumeRunErr(t, b, late.ID)
		requireErrorIs(t, "resume of a canceled run past its deadline", err, backend.ErrDeadlinePassed)
		if got := getRun(t, b, late.ID); got.Status != backend.RunCanceled {
			t.Fatalf("refused resume left status %s, want canceled", got.Status)
		}

		_, err = resumeRunErr(t, b, "wrun_missing")
		requireErrorIs(t, "resume of a missing run", err, backend.ErrRunNotFound)
	})
}
