package backendtest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

// runForker returns b's RunForker, skipping the test when b has none.
func runForker(t testing.TB, b backend.Backend) backend.RunForker {
	t.Helper()
	f, ok := b.(backend.RunForker)
	if !ok {
		t.Skip("the backend does not implement backend.RunForker")
	}
	return f
}

// finishedStep records a finished attempt (completed with output, or
// failed when output is "") of run, owned by worker.
func finishedStep(t testing.TB, b backend.Backend, runID, worker, name string, kind backend.StepKind, output string) *backend.StepAttempt {
	t.Helper()
	a := createStep(t, b, runID, worker, name, kind, "")
	var err error
	if output == "" {
		a, err = Single(b).FailStepAttempt(t.Context(), FailStepAttemptParams{WorkflowRunID: runID, StepAttemptID: a.ID, WorkerID: worker, Error: json.RawMessage(`{"message":"x"}`)})
	} else {
		a, err = Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: runID, StepAttemptID: a.ID, WorkerID: worker, Output: json.RawMessage(output)})
	}
	if err != nil {
		t.Fatalf("finish step %s: %v", name, err)
	}
	return a
}

func runSteps(t testing.TB, b backend.Backend, runID string) []backend.StepAttempt {
	t.Helper()
	page, err := b.ListStepAttempts(t.Context(), backend.ListStepAttemptsParams{WorkflowRunID: runID, Limit: backend.MaxPageSize})
	if err != nil {
		t.Fatalf("ListStepAttempts(%s): %v", runID, err)
	}
	return page.Data
}

// forkedSteps returns the attempts a fork copied, after checking that its
// history ends with the fork's mark (backend.RunForker).
func forkedSteps(t testing.TB, b backend.Backend, fork *backend.WorkflowRun) []backend.StepAttempt {
	t.Helper()
	steps := runSteps(t, b, fork.ID)
	if len(steps) == 0 {
		t.Fatalf("fork %s has no attempt, want at least its mark", fork.ID)
	}
	mark := steps[len(steps)-1]
	if mark.Kind != backend.StepRetry || mark.Status != backend.StepCompleted || mark.StepName != "__fork:"+mark.ID {
		t.Fatalf("the fork's last attempt = %+v, want its mark: a completed retry attempt named __fork:<id>", mark)
	}
	requireJSON(t, "the fork mark's output", mark.Output, json.RawMessage(`{"attempts":1}`))
	if fork.Attempts != 1 {
		t.Fatalf("the fork's attempts = %d, want 1 (its copied history counts as a claim)", fork.Attempts)
	}
	return steps[:len(steps)-1]
}

func testForkWorkflowRun(t *testing.T, s *suite) {
	t.Run("a fork is a pending run of the same workflow and input holding copies of the completed attempts before the step", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		f := runForker(t, b)
		w := newWorkerID()
		src := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "order", Version: ptr("v2"), Input: json.RawMessage(`{"id":7,"note":"a\u0000b"}`)})
		fetch := finishedStep(t, b, src.ID, w, "fetch", backend.StepFunction, `{"items":3,"nul":"x\u0000y"}`)
		finishedStep(t, b, src.ID, w, "charge", backend.StepFunction, "") // a failed attempt: retried below
		charge := finishedStep(t, b, src.ID, w, "charge", backend.StepFunction, `"ch_1"`)
		finishedStep(t, b, src.ID, w, "ship", backend.StepFunction, `"shipped"`)
		finishedStep(t, b, src.ID, w, "notify", backend.StepFunction, `true`)
		failRun(t, b, src.ID, w, `{"message":"the mail server is down"}`)
		srcSteps := runSteps(t, b, src.ID)
		srcRun := getRun(t, b, src.ID)
		ch := subscribe(t, b)

		fork, err := f.ForkWorkflowRun(t.Context(), backend.ForkWorkflowRunParams{WorkflowRunID: src.ID, FromStep: "ship"})
		if err != nil {
			t.Fatalf("ForkWorkflowRun: %v", err)
		}
		awaitEvent(t, ch, "EventWorkAvailable for the fork", isWork)
		if fork.ID == src.ID || fork.Status != backend.RunPending || fork.WorkflowName != "order" || fork.Version == nil || *fork.Version != "v2" ||
			fork.IdempotencyKey != nil || fork.ParentStepAttemptID != nil || fork.DeadlineAt != nil || fork.FinishedAt != nil {
			t.Fatalf("fork = %+v, want a new pending run of order v2", fork)
		}
		requireJSON(t, "fork input", fork.Input, src.Input)
		requireRun(t, "the fork read back", getRun(t, b, fork.ID), fork)

		got := forkedSteps(t, b, fork)
		want := []*backend.StepAttempt{fetch, charge}
		if len(got) != len(want) {
			t.Fatalf("the fork holds %d attempts, want %d (fetch and the completed charge)", len(got), len(want))
		}
		for i, a := range got {
			if a.ID == want[i].ID || a.WorkflowRunID != fork.ID {
				t.Fatalf("attempt %d of the fork = id %s of run %s, want a new id in run %s", i, a.ID, a.WorkflowRunID, fork.ID)
			}
			copied := *want[i]
			copied.ID, copied.WorkflowRunID = a.ID, fork.ID
			requireStep(t, "copied attempt "+a.StepName, &a, &copied)
		}
		if after := runSteps(t, b, src.ID); len(after) != len(srcSteps) {
			t.Fatalf("the forked run has %d attempts after the fork, want its %d", len(after), len(srcSteps))
		}
		// The lineage, both ways: the fork names its origin and the step;
		// the forked run, otherwise unchanged, lists the fork.
		if of, ok := backend.ForkOfRun(fork.Context); !ok || of != (backend.ForkOf{RunID: src.ID, FromStep: "ship"}) {
			t.Fatalf("the fork's context %s records origin %+v (%v), want %s from ship", fork.Context, of, ok, src.ID)
		}
		after := getRun(t, b, src.ID)
		if forks := backend.ForksOfRun(after.Context); len(forks) != 1 || forks[0] != fork.ID {
			t.Fatalf("the forked run's context %s lists forks %q, want [%s]", after.Context, forks, fork.ID)
		}
		srcRun.Context = json.RawMessage(`{"forks":["` + fork.ID + `"]}`)
		requireRun(t, "the forked run after the fork", after, srcRun)
		if claimed := claimRun(t, b, newWorkerID(), longLease, fork.ID); claimed.Attempts != 2 {
			t.Fatalf("the fork's first claim has attempts %d, want 2: a worker must read its history", claimed.Attempts)
		}
	})

	t.Run("a fork from the first step reuses nothing, and one from a later attempt name reuses all before it", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		f := runForker(t, b)
		w := newWorkerID()
		src := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
		finishedStep(t, b, src.ID, w, "a", backend.StepFunction, `1`)
		finishedStep(t, b, src.ID, w, "a:1", backend.StepFunction, `2`)
		completeRun(t, b, src.ID, w, `3`)
		fork, err := f.ForkWorkflowRun(t.Context(), backend.ForkWorkflowRunParams{WorkflowRunID: src.ID, FromStep: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if steps := forkedSteps(t, b, fork); len(steps) != 0 {
			t.Fatalf("a fork from the first step holds %d attempts, want none", len(steps))
		}
		fork, err = f.ForkWorkflowRun(t.Context(), backend.ForkWorkflowRunParams{WorkflowRunID: src.ID, FromStep: "a:1"})
		if err != nil {
			t.Fatal(err)
		}
		if steps := forkedSteps(t, b, fork); len(steps) != 1 || steps[0].StepName != "a" {
			t.Fatalf("a fork from a:1 holds %+v, want a's attempt", steps)
		}
	})

	t.Run("an unknown step, a missing run, a hook before the step and bad params are refused and create nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		f := runForker(t, b)
		w := newWorkerID()
		src := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
		finishedStep(t, b, src.ID, w, "fetch", backend.StepFunction, `1`)
		finishedStep(t, b, src.ID, w, "save", backend.StepFunction, `2`)

		_, err := f.ForkWorkflowRun(t.Context(), backend.ForkWorkflowRunParams{WorkflowRunID: src.ID, FromStep: "fecth"})
		requireErrorIs(t, "fork from an unknown step", err, backend.ErrInvalidArgument)
		for _, part := range []string{`"fecth"`, `"fetch"`, `"save"`, src.ID} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("the error %q does not name %s", err, part)
			}
		}
		_, err = f.ForkWorkflowRun(t.Context(), backend.ForkWorkflowRunParams{WorkflowRunID: "wrun_missing", FromStep: "fetch"})
		requireErrorIs(t, "fork of a missing run", err, backend.ErrRunNotFound)
		for _, p := range []backend.ForkWorkflowRunParams{{FromStep: "fetch"}, {WorkflowRunID: src.ID}, {WorkflowRunID: src.ID, FromStep: "a\x00"}} {
			_, err = f.ForkWorkflowRun(t.Context(), p)
			requireErrorIs(t, "fork with bad params", err, backend.ErrInvalidArgument)
		}

		wantRuns := 1 // the forked run
		if _, ok := b.(backend.HookStore); ok {
			wantRuns++ // and the fork from the hook's step
			hp := hookParams(src, w, "approval", "fork-"+randomHex(4))
			hs := hookStore(t, b)
			if _, err := hs.CreateHook(t.Context(), hp); err != nil {
				t.Fatal(err)
			}
			hookStep := finishedStep(t, b, src.ID, w, "approval", backend.StepHook, `{"hookId":"`+hp.ID+`"}`)
			finishedStep(t, b, src.ID, w, "charge", backend.StepFunction, `3`)
			_, err = f.ForkWorkflowRun(t.Context(), backend.ForkWorkflowRunParams{WorkflowRunID: src.ID, FromStep: "charge"})
			requireErrorIs(t, "fork after a hook's creation", err, backend.ErrInvalidArgument)
			if !strings.Contains(err.Error(), `"approval"`) {
				t.Errorf("the error %q does not name the hook's step", err)
			}
			if _, err := f.ForkWorkflowRun(t.Context(), backend.ForkWorkflowRunParams{WorkflowRunID: src.ID, FromStep: hookStep.StepName}); err != nil {
				t.Errorf("fork from the hook's step: %v, want it allowed", err)
			}
		}
		page, err := b.ListWorkflowRuns(t.Context(), backend.ListWorkflowRunsParams{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(page.Data); n != wantRuns {
			t.Fatalf("%d runs after the refused forks, want %d", n, wantRuns)
		}
	})
}
