package backendtest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/clock"
)

// fencedWorld is a run that worker A owned, with the attempts A created
// while it did, seen after A lost the run at time now (the fake clock's).
type fencedWorld struct {
	run                        *backend.WorkflowRun
	toComplete, toFail, toLink *backend.StepAttempt
	child                      *backend.WorkflowRun
	now                        time.Time
}

// fencedWrites are every worker-side write, made as worker a on world.
var fencedWrites = []struct {
	name  string
	write func(t *testing.T, b backend.Backend, w fencedWorld, a string) error
}{
	{"heartbeat (ExtendWorkflowRunLease)", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		return b.ExtendWorkflowRunLease(t.Context(), backend.ExtendWorkflowRunLeaseParams{WorkflowRunID: w.run.ID, WorkerID: a, LeaseDuration: 3 * longLease})
	}},
	{"WriteInsertStep", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := Single(b).CreateStepAttempt(t.Context(), CreateStepAttemptParams{WorkflowRunID: w.run.ID, WorkerID: a, StepName: "late", Kind: backend.StepFunction})
		return err
	}},
	{"WriteFinishStep completing an attempt", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: w.run.ID, StepAttemptID: w.toComplete.ID, WorkerID: a, Output: json.RawMessage(`"stale"`)})
		return err
	}},
	{"WriteFinishStep failing an attempt", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := Single(b).FailStepAttempt(t.Context(), FailStepAttemptParams{WorkflowRunID: w.run.ID, StepAttemptID: w.toFail.ID, WorkerID: a, Error: json.RawMessage(`{"message":"stale"}`)})
		return err
	}},
	{"WriteLinkChild", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := Single(b).SetStepAttemptChildWorkflowRun(t.Context(), SetStepAttemptChildWorkflowRunParams{
			WorkflowRunID: w.run.ID, StepAttemptID: w.toLink.ID, WorkerID: a, ChildWorkflowRunNamespaceID: b.NamespaceID(), ChildWorkflowRunID: w.child.ID})
		return err
	}},
	{"WriteCompleteRun", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := Single(b).CompleteWorkflowRun(t.Context(), CompleteWorkflowRunParams{WorkflowRunID: w.run.ID, WorkerID: a, Output: json.RawMessage(`"stale"`)})
		return err
	}},
	{"WriteFailRun", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := Single(b).FailWorkflowRun(t.Context(), FailWorkflowRunParams{WorkflowRunID: w.run.ID, WorkerID: a, Error: json.RawMessage(`{"message":"stale"}`)})
		return err
	}},
	{"WriteParkRun", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		return Single(b).SleepWorkflowRun(t.Context(), SleepWorkflowRunParams{WorkflowRunID: w.run.ID, WorkerID: a, AvailableAt: w.now.Add(-time.Minute)})
	}},
	{"WriteRescheduleRun", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := Single(b).RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), RescheduleWorkflowRunParams{
			WorkflowRunID: w.run.ID, WorkerID: a, Error: json.RawMessage(`{"message":"stale"}`), AvailableAt: w.now.Add(-time.Minute)})
		return err
	}},
}

func testOwnershipFencing(t *testing.T, s *suite) {
	losses := []struct {
		name string
		// lose makes worker a lose the run; other is a second backend of
		// the same namespace, standing for another process; both run on
		// clk.
		lose func(t *testing.T, clk *clock.Fake, b, other backend.Backend, runID, a string)
	}{
		{"after the lease expired and another worker claimed the run", func(t *testing.T, clk *clock.Fake, b, other backend.Backend, runID, a string) {
			expireLease(t, clk, b, runID, a)
			claimRun(t, other, newWorkerID(), longLease, runID)
		}},
		{"after the run was parked", func(t *testing.T, clk *clock.Fake, b, other backend.Backend, runID, a string) {
			park(t, b, runID, a, clk.Now().Add(farFuture))
		}},
		{"after the run was canceled", func(t *testing.T, clk *clock.Fake, b, other backend.Backend, runID, a string) {
			cancelRun(t, other, runID)
		}},
		{"after the run was completed", func(t *testing.T, clk *clock.Fake, b, other backend.Backend, runID, a string) {
			completeRun(t, b, runID, a, `"done"`)
		}},
		{"after the run failed for good", func(t *testing.T, clk *clock.Fake, b, other backend.Backend, runID, a string) {
			failRun(t, b, runID, a, `{"message":"x"}`)
		}},
		{"after the run was rescheduled for a step retry", func(t *testing.T, clk *clock.Fake, b, other backend.Backend, runID, a string) {
			retryRun(t, b, runID, a, `{"message":"x"}`, clk.Now().Add(farFuture))
		}},
	}
	for _, l := range losses {
		t.Run("refuses every write of the former owner with ErrNotOwner, naming the run, and changes nothing, "+l.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			ns := newNamespace()
			b, other := s.backendInOn(t, ns, clk), s.backendInOn(t, ns, clk)
			a := newWorkerID()
			claimed := startRun(t, b, a, backend.CreateWorkflowRunParams{})
			w := fencedWorld{
				toComplete: createStep(t, b, claimed.ID, a, "to-complete", backend.StepFunction, ""),
				toFail:     createStep(t, b, claimed.ID, a, "to-fail", backend.StepFunction, ""),
				toLink:     createStep(t, b, claimed.ID, a, "to-link", backend.StepWorkflow, `{"kind":"workflow","timeoutAt":null}`),
				child:      createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "child", AvailableAt: ptr(clk.Now().Add(farFuture))}),
			}
			l.lose(t, clk, b, other, claimed.ID, a)
			w.run, w.now = getRun(t, b, claimed.ID), clk.Now()
			steps := listSteps(t, b, backend.ListStepAttemptsParams{WorkflowRunID: claimed.ID}).Data

			for _, fw := range fencedWrites {
				requireWriteRefused(t, fw.name+" by the former owner", fw.write(t, b, w, a), claimed.ID)
				requireRun(t, "run after the refused "+fw.name, getRun(t, b, claimed.ID), w.run)
				after := listSteps(t, b, backend.ListStepAttemptsParams{WorkflowRunID: claimed.ID}).Data
				if len(after) != len(steps) {
					t.Fatalf("after the refused %s the run has %d step attempts, want %d", fw.name, len(after), len(steps))
				}
				for i := range steps {
					requireStep(t, "step attempt after the refused "+fw.name, &after[i], &steps[i])
				}
			}
		})
	}

	t.Run("lets the new owner write after refusing the former one", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		ns := newNamespace()
		b, other := s.backendInOn(t, ns, clk), s.backendInOn(t, ns, clk)
		a, next := newWorkerID(), newWorkerID()
		claimed := startRun(t, b, a, backend.CreateWorkflowRunParams{})
		step := createStep(t, b, claimed.ID, a, "s", backend.StepFunction, "")
		expireLease(t, clk, b, claimed.ID, a)
		claimRun(t, other, next, longLease, claimed.ID)

		_, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: claimed.ID, StepAttemptID: step.ID, WorkerID: a, Output: json.RawMessage(`"stale"`)})
		requireErrorIs(t, "step completion by the former owner", err, backend.ErrNotOwner)
		if _, err := Single(other).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: claimed.ID, StepAttemptID: step.ID, WorkerID: next, Output: json.RawMessage(`"fresh"`)}); err != nil {
			t.Fatalf("step completion by the new owner: %v", err)
		}
		requireJSON(t, "step output", getStep(t, b, step.ID).Output, json.RawMessage(`"fresh"`))
		done := completeRun(t, other, claimed.ID, next, `"fresh"`)
		if done.WorkerID == nil || *done.WorkerID != next {
			t.Fatalf("completed run's worker_id = %v, want %s", done.WorkerID, next)
		}
	})

	t.Run("refuses every write to a missing run with ErrNotOwner and ErrRunNotFound, naming the run and the write", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		const missing = "wrun_missing"
		w := newWorkerID()
		for _, write := range []backend.Write{
			insertStep(missing, w, "s", backend.StepCompleted, `1`, ""),
			finishStep(missing, w, "step_missing", backend.StepCompleted, `1`, ""),
			{Kind: backend.WriteLinkChild, WorkflowRunID: missing, WorkerID: w, Step: &backend.StepAttempt{
				ID: "step_missing", ChildWorkflowRunNamespaceID: ptr(b.NamespaceID()), ChildWorkflowRunID: ptr("wrun_child")}},
			completeWrite(missing, w, `1`),
			parkWrite(missing, w, time.Now()),
			rescheduleWrite(missing, w, `{"message":"x"}`, time.Now()),
			failWrite(missing, w, `{"message":"x"}`),
		} {
			err := applyWrites(t, b, write)[0]
			what := write.Kind.String() + " of a missing run"
			requireWriteRefused(t, what, err, missing)
			requireErrorIs(t, what, err, backend.ErrRunNotFound)
			if !strings.Contains(err.Error(), write.Kind.String()) {
				t.Fatalf("%s: error %q does not name the write kind", what, err)
			}
		}
	})
}
