package backendtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// fencedWorld is a run that worker A owned, with the attempts A created
// while it did, seen after A lost the run.
type fencedWorld struct {
	run                        *backend.WorkflowRun
	toComplete, toFail, toLink *backend.StepAttempt
	child                      *backend.WorkflowRun
}

// fencedWrites are every worker-side write, made as worker a on world.
var fencedWrites = []struct {
	name  string
	write func(t *testing.T, b backend.Backend, w fencedWorld, a string) error
}{
	{"heartbeat (ExtendWorkflowRunLease)", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		return b.ExtendWorkflowRunLease(t.Context(), backend.ExtendWorkflowRunLeaseParams{WorkflowRunID: w.run.ID, WorkerID: a, LeaseDuration: 3 * longLease})
	}},
	{"CreateStepAttempt", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := b.CreateStepAttempt(t.Context(), backend.CreateStepAttemptParams{WorkflowRunID: w.run.ID, WorkerID: a, StepName: "late", Kind: backend.StepFunction})
		return err
	}},
	{"CompleteStepAttempt", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := b.CompleteStepAttempt(t.Context(), backend.CompleteStepAttemptParams{WorkflowRunID: w.run.ID, StepAttemptID: w.toComplete.ID, WorkerID: a, Output: json.RawMessage(`"stale"`)})
		return err
	}},
	{"FailStepAttempt", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := b.FailStepAttempt(t.Context(), backend.FailStepAttemptParams{WorkflowRunID: w.run.ID, StepAttemptID: w.toFail.ID, WorkerID: a, Error: json.RawMessage(`{"message":"stale"}`)})
		return err
	}},
	{"SetStepAttemptChildWorkflowRun", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := b.SetStepAttemptChildWorkflowRun(t.Context(), backend.SetStepAttemptChildWorkflowRunParams{
			WorkflowRunID: w.run.ID, StepAttemptID: w.toLink.ID, WorkerID: a, ChildWorkflowRunNamespaceID: b.NamespaceID(), ChildWorkflowRunID: w.child.ID})
		return err
	}},
	{"CompleteWorkflowRun", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := b.CompleteWorkflowRun(t.Context(), backend.CompleteWorkflowRunParams{WorkflowRunID: w.run.ID, WorkerID: a, Output: json.RawMessage(`"stale"`)})
		return err
	}},
	{"FailWorkflowRun", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := b.FailWorkflowRun(t.Context(), backend.FailWorkflowRunParams{WorkflowRunID: w.run.ID, WorkerID: a, Error: json.RawMessage(`{"message":"stale"}`),
			RetryPolicy: backend.RetryPolicy{InitialInterval: time.Minute, BackoffCoefficient: 2, MaximumInterval: time.Hour}})
		return err
	}},
	{"SleepWorkflowRun (park)", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		return b.SleepWorkflowRun(t.Context(), backend.SleepWorkflowRunParams{WorkflowRunID: w.run.ID, WorkerID: a, AvailableAt: time.Now().Add(-time.Minute)})
	}},
	{"RescheduleWorkflowRunAfterFailedStepAttempt", func(t *testing.T, b backend.Backend, w fencedWorld, a string) error {
		_, err := b.RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), backend.RescheduleWorkflowRunParams{
			WorkflowRunID: w.run.ID, WorkerID: a, Error: json.RawMessage(`{"message":"stale"}`), AvailableAt: time.Now().Add(-time.Minute)})
		return err
	}},
}

func testOwnershipFencing(t *testing.T, s *suite) {
	losses := []struct {
		name string
		// lose makes worker a lose the run; other is a second backend of
		// the same namespace, standing for another process.
		lose func(t *testing.T, b, other backend.Backend, runID, a string)
	}{
		{"after the lease expired and another worker claimed the run", func(t *testing.T, b, other backend.Backend, runID, a string) {
			expireLease(t, b, runID, a)
			claimEventually(t, other, newWorkerID(), longLease, runID)
		}},
		{"after the run was parked", func(t *testing.T, b, other backend.Backend, runID, a string) {
			park(t, b, runID, a, time.Now().Add(farFuture))
		}},
		{"after the run was canceled", func(t *testing.T, b, other backend.Backend, runID, a string) {
			cancelRun(t, other, runID)
		}},
		{"after the run was completed", func(t *testing.T, b, other backend.Backend, runID, a string) {
			completeRun(t, b, runID, a, `"done"`)
		}},
		{"after the run failed for good", func(t *testing.T, b, other backend.Backend, runID, a string) {
			failRun(t, b, runID, a, `{"message":"x"}`, backend.NoRetryPolicy)
		}},
		{"after the run was rescheduled for a step retry", func(t *testing.T, b, other backend.Backend, runID, a string) {
			_, err := b.RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), backend.RescheduleWorkflowRunParams{
				WorkflowRunID: runID, WorkerID: a, Error: json.RawMessage(`{"message":"x"}`), AvailableAt: time.Now().Add(farFuture)})
			if err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, l := range losses {
		t.Run("refuses every write of the former owner with ErrNotOwner and changes nothing, "+l.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace()
			b, other := s.backendIn(t, ns), s.backendIn(t, ns)
			a := newWorkerID()
			claimed := startRun(t, b, a, backend.CreateWorkflowRunParams{})
			w := fencedWorld{
				toComplete: createStep(t, b, claimed.ID, a, "to-complete", backend.StepFunction, ""),
				toFail:     createStep(t, b, claimed.ID, a, "to-fail", backend.StepFunction, ""),
				toLink:     createStep(t, b, claimed.ID, a, "to-link", backend.StepWorkflow, `{"kind":"workflow","timeoutAt":null}`),
				child:      createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "child", AvailableAt: ptr(time.Now().Add(farFuture))}),
			}
			l.lose(t, b, other, claimed.ID, a)
			w.run = getRun(t, b, claimed.ID)
			steps := listSteps(t, b, backend.ListStepAttemptsParams{WorkflowRunID: claimed.ID}).Data

			for _, fw := range fencedWrites {
				requireErrorIs(t, fw.name+" by the former owner", fw.write(t, b, w, a), backend.ErrNotOwner)
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
		ns := newNamespace()
		b, other := s.backendIn(t, ns), s.backendIn(t, ns)
		a, next := newWorkerID(), newWorkerID()
		claimed := startRun(t, b, a, backend.CreateWorkflowRunParams{})
		step := createStep(t, b, claimed.ID, a, "s", backend.StepFunction, "")
		expireLease(t, b, claimed.ID, a)
		claimEventually(t, other, next, longLease, claimed.ID)

		_, err := b.CompleteStepAttempt(t.Context(), backend.CompleteStepAttemptParams{WorkflowRunID: claimed.ID, StepAttemptID: step.ID, WorkerID: a, Output: json.RawMessage(`"stale"`)})
		requireErrorIs(t, "step completion by the former owner", err, backend.ErrNotOwner)
		if _, err := other.CompleteStepAttempt(t.Context(), backend.CompleteStepAttemptParams{WorkflowRunID: claimed.ID, StepAttemptID: step.ID, WorkerID: next, Output: json.RawMessage(`"fresh"`)}); err != nil {
			t.Fatalf("step completion by the new owner: %v", err)
		}
		requireJSON(t, "step output", getStep(t, b, step.ID).Output, json.RawMessage(`"fresh"`))
		done := completeRun(t, other, claimed.ID, next, `"fresh"`)
		if done.WorkerID == nil || *done.WorkerID != next {
			t.Fatalf("completed run's worker_id = %v, want %s", done.WorkerID, next)
		}
	})
}
