package backendtest

import (
	"encoding/json"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

func testNamespaces(t *testing.T, s *suite) {
	t.Run("isolate runs, counts, claims, steps and signals", func(t *testing.T) {
		t.Parallel()
		a, b := s.newBackend(t), s.newBackend(t)

		// Namespace b: a parked run waiting on "go", and a pending run.
		inB := startWaiter(t, b, "go", false)
		pendingB := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "shared-name", IdempotencyKey: ptr("k")})
		// Namespace a: one pending run of the same name and key.
		pendingA := createRun(t, a, backend.CreateWorkflowRunParams{WorkflowName: "shared-name", IdempotencyKey: ptr("k")})
		if pendingA.ID == pendingB.ID {
			t.Fatal("a keyed create in namespace a returned namespace b's run")
		}
		snapshot := getRun(t, b, pendingB.ID)

		requireIDs(t, "runs listed in a", pageRunIDs(listRuns(t, a, backend.ListWorkflowRunsParams{})), []string{pendingA.ID})
		requireCounts(t, "namespace a", a, backend.RunCounts{Pending: 1})

		for _, id := range []string{pendingB.ID, inB.run.ID} {
			_, err := a.GetWorkflowRun(t.Context(), id)
			requireErrorIs(t, "GetWorkflowRun of b's run from a", err, backend.ErrRunNotFound)
			_, err = a.CancelWorkflowRun(t.Context(), id)
			requireErrorIs(t, "CancelWorkflowRun of b's run from a", err, backend.ErrRunNotFound)
		}
		_, err := a.GetStepAttempt(t.Context(), inB.wait.ID)
		requireErrorIs(t, "GetStepAttempt of b's attempt from a", err, backend.ErrStepNotFound)
		if page := listSteps(t, a, backend.ListStepAttemptsParams{WorkflowRunID: inB.run.ID}); len(page.Data) != 0 {
			t.Fatalf("ListStepAttempts of b's run from a listed %d attempts", len(page.Data))
		}

		if ids := sendSignal(t, a, "go", `"from a"`); len(ids) != 0 {
			t.Fatalf("signal sent in a delivered to %v", ids)
		}
		requireDelivery(t, b, inB.wait.ID, nil)
		requireStillParked(t, b, inB)

		_, err = Single(a).CompleteWorkflowRun(t.Context(), CompleteWorkflowRunParams{WorkflowRunID: inB.run.ID, WorkerID: *inB.run.WorkerID, Output: json.RawMessage(`1`)})
		requireErrorIsAny(t, "CompleteWorkflowRun of b's run from a", err, backend.ErrRunNotFound, backend.ErrNotOwner)

		claimed := claim(t, a, longLease, newWorkerID(), newWorkerID(), newWorkerID())
		requireIDs(t, "runs claimed in a", runIDs(claimed), []string{pendingA.ID})
		requireRun(t, "b's pending run after a's claims", getRun(t, b, pendingB.ID), snapshot)
		requireStillParked(t, b, inB)
		requireCounts(t, "namespace b", b, backend.RunCounts{Pending: 1, Running: 1})
	})
}
