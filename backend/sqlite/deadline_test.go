package sqlite

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
)

// The claim's deadline sweep, beyond what every backend does (it fails
// the runs past their deadline and announces their end: backendtest's
// Deadlines and Subscribe): SQLite's also wakes the parked parents of the
// children it fails, so the next claim takes them. (PostgreSQL's leaves a
// parent parked until its own wake-up, as OpenWorkflow does.)

func TestDeadlineSweepWakesTheParkedParentsOfTheChildrenItFails(t *testing.T) {
	clock := newFakeClock()
	b, _ := openTest(t, clock)
	parent := mustCreate(t, b, backend.CreateWorkflowRunParams{WorkflowName: "parent"})
	mustClaim(t, b, time.Hour, "pw")
	step, err := backendtest.Single(b).CreateStepAttempt(t.Context(), backendtest.CreateStepAttemptParams{WorkflowRunID: parent.ID, WorkerID: "pw", StepName: "child", Kind: backend.StepWorkflow})
	if err != nil {
		t.Fatal(err)
	}
	ns := b.NamespaceID()
	child := mustCreate(t, b, backend.CreateWorkflowRunParams{WorkflowName: "child", ParentStepAttemptNamespaceID: &ns, ParentStepAttemptID: &step.ID,
		AvailableAt: ptr(clock.Now().Add(time.Hour)), DeadlineAt: ptr(clock.Now().Add(time.Minute))})
	if _, err := backendtest.Single(b).SetStepAttemptChildWorkflowRun(t.Context(), backendtest.SetStepAttemptChildWorkflowRunParams{WorkflowRunID: parent.ID, StepAttemptID: step.ID, WorkerID: "pw", ChildWorkflowRunNamespaceID: ns, ChildWorkflowRunID: child.ID}); err != nil {
		t.Fatal(err)
	}
	if err := backendtest.Single(b).SleepWorkflowRun(t.Context(), backendtest.SleepWorkflowRunParams{WorkflowRunID: parent.ID, WorkerID: "pw", AvailableAt: clock.Now().Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	got := mustClaim(t, b, time.Hour, "x")
	if len(got) != 1 || got[0].ID != parent.ID {
		t.Fatalf("claimed %v, want the woken parent %s", ids(got), parent.ID)
	}
	if c := getRun(t, b, child.ID); c.Status != backend.RunFailed || string(c.Error) != string(backend.DeadlineExceededError()) {
		t.Fatalf("child = %s %s, want failed with the deadline error", c.Status, c.Error)
	}
}

func TestTheClaimsDeadlineSweepReadsTheDeadlineIndex(t *testing.T) {
	b, _ := openTest(t, nil)
	rows, err := b.db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+b.q.FailExpiredRuns,
		sql.Named("error", "{}"), sql.Named("now", "2026-01-01T00:00:00.000Z"), sql.Named("ns", "default"))
	if err != nil {
		t.Fatalf("explain the deadline sweep: %v", err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	const deadlineIndex = "workflow_runs_go_deadline_idx" // sql/migrate.sql
	if len(plan) != 1 || !strings.Contains(plan[0], "USING INDEX "+deadlineIndex) {
		t.Fatalf("deadline sweep plan %q: want a search of %s (else every claim reads every live run)", plan, deadlineIndex)
	}
}
