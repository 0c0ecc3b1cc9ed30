package sqlite

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
)

// Each group of a batch runs inside a savepoint of the batch's
// transaction, so a write that fails part way (here in the parent wake-up
// of a child's completion, which a trigger refuses) rolls its group back
// to it: what the write had already done is undone, its events are
// dropped, and the batch goes on. What every backend does with a group
// the database refuses is backendtest's Write groups; this is the
// savepoint's part, reached through a trigger only SQLite's tests plant.

// TestAWriteThatFailsHalfWayLeavesNothingBehind makes the parent wake-up
// of a child's completion fail (a trigger aborts it): the completion is
// rolled back to its savepoint, with its event, and the next write of the
// batch still applies.
func TestAWriteThatFailsHalfWayLeavesNothingBehind(t *testing.T) {
	b, _ := openTest(t, nil)
	if _, err := b.db.ExecContext(t.Context(), `
		CREATE TRIGGER "explode_on_wake" BEFORE UPDATE OF "available_at" ON "workflow_runs"
		WHEN NEW."workflow_name" = 'explode' AND OLD."worker_id" IS NULL AND NEW."worker_id" IS NULL
		BEGIN SELECT RAISE(ABORT, 'wake-up refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
	parent := mustCreate(t, b, backend.CreateWorkflowRunParams{WorkflowName: "explode"})
	mustClaim(t, b, time.Hour, "wp")
	wait, err := backendtest.Single(b).CreateStepAttempt(t.Context(), backendtest.CreateStepAttemptParams{WorkflowRunID: parent.ID, WorkerID: "wp", StepName: "child", Kind: backend.StepWorkflow})
	if err != nil {
		t.Fatal(err)
	}
	child := mustCreate(t, b, backend.CreateWorkflowRunParams{ParentStepAttemptNamespaceID: &b.ns, ParentStepAttemptID: &wait.ID})
	if _, err := backendtest.Single(b).SetStepAttemptChildWorkflowRun(t.Context(), backendtest.SetStepAttemptChildWorkflowRunParams{
		WorkflowRunID: parent.ID, StepAttemptID: wait.ID, WorkerID: "wp", ChildWorkflowRunNamespaceID: b.ns, ChildWorkflowRunID: child.ID,
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.ApplyWrites(t.Context(), singles(backend.Write{Kind: backend.WriteParkRun, WorkflowRunID: parent.ID, WorkerID: "wp", AvailableAt: time.Now().Add(time.Hour)}))[0]; err != nil {
		t.Fatalf("park the parent: %v", err)
	}
	if got := mustClaim(t, b, time.Hour, "wc"); len(got) != 1 || got[0].ID != child.ID {
		t.Fatalf("claimed %v, want the child", ids(got))
	}
	other := mustCreate(t, b, backend.CreateWorkflowRunParams{WorkflowName: "other"})
	mustClaim(t, b, time.Hour, "wo")

	events, err := b.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	errs := b.ApplyWrites(t.Context(), singles(
		backend.Write{Kind: backend.WriteCompleteRun, WorkflowRunID: child.ID, WorkerID: "wc", Output: json.RawMessage(`"child"`)},
		backend.Write{Kind: backend.WriteCompleteRun, WorkflowRunID: other.ID, WorkerID: "wo", Output: json.RawMessage(`"other"`)},
	))
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "wake-up refused") {
		t.Fatalf("child's completion: %v, want the trigger's error", errs[0])
	}
	if errs[1] != nil {
		t.Fatalf("other run's completion: %v", errs[1])
	}
	if got := getRun(t, b, child.ID); got.Status != backend.RunRunning || got.WorkerID == nil || *got.WorkerID != "wc" || got.Output != nil {
		t.Fatalf("child = {%s, %v, %s}, want still running under wc with no output", got.Status, got.WorkerID, got.Output)
	}
	if got := getRun(t, b, other.ID); got.Status != backend.RunCompleted {
		t.Fatalf("other run is %s, want completed", got.Status)
	}
	waitEvent(t, events, backend.Event{Kind: backend.EventRunFinished, WorkflowRunID: other.ID})
	select {
	case e := <-events:
		t.Fatalf("unexpected event %+v after the batch (the rolled-back completion must not announce itself)", e)
	default:
	}
}
