package backendtest

import (
	"errors"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// CreateWorkflowRunParams.Claim: a create that leases its run to a
// worker as a claim would, so the starting process's worker runs it
// without a claim; a run of a workflow with stored limits waits for
// admission instead.
func testCreateClaim(t *testing.T, s *suite) {
	const lease = 30 * time.Second
	t.Run("inserts the run running, attempt 1, leased to the worker, and no claim takes it", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		start := time.Now()
		got := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "greet",
			Claim: &backend.CreateClaim{WorkerID: "w/0", LeaseDuration: lease}})
		w := since(start)
		if got.Status != backend.RunRunning || got.Attempts != 1 || got.WorkerID == nil || *got.WorkerID != "w/0" {
			t.Fatalf("created run: status %s, attempts %d, worker %v; want running, 1, w/0", got.Status, got.Attempts, got.WorkerID)
		}
		requireTimeIn(t, "started_at", got.StartedAt, w)
		requireTimeIn(t, "available_at (the lease's end)", got.AvailableAt, window{w.lo.Add(lease - time.Millisecond), w.hi.Add(lease + time.Millisecond)})
		requireRun(t, "GetWorkflowRun of the created run", getRun(t, b, got.ID), got)
		if runs := claim(t, b, lease, "other/0"); len(runs) != 0 {
			t.Fatalf("a claim took %v, a run leased by its create", runIDs(runs))
		}
		// The worker's fenced writes apply, as after a claim.
		if done := completeRun(t, b, got.ID, "w/0", `1`); done.Status != backend.RunCompleted {
			t.Fatalf("completed by its slot: %s", done.Status)
		}
	})

	t.Run("leaves a run of a workflow with stored limits unclaimed, waiting for admission", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ls, ok := b.(backend.LimitStore)
		if !ok {
			t.Skip("the backend does not implement backend.LimitStore")
		}
		if _, err := ls.PutWorkflowLimits(t.Context(), "limited", backend.Limits{Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
		got := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "limited",
			Claim: &backend.CreateClaim{WorkerID: "w/0", LeaseDuration: lease}})
		if got.Status != backend.RunPending || got.WorkerID != nil || got.Attempts != 0 || got.AvailableAt != nil {
			t.Fatalf("created run: status %s, worker %v, attempts %d, available %v; want pending, unleased, waiting for admission",
				got.Status, got.WorkerID, got.Attempts, got.AvailableAt)
		}
	})

	t.Run("refuses a claim beside what could make the run wait, dedupe or link, storing nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		key, later := "k", time.Now().Add(time.Hour)
		c := &backend.CreateClaim{WorkerID: "w/0", LeaseDuration: lease}
		for _, p := range []backend.CreateWorkflowRunParams{
			{WorkflowName: "x", Claim: c, IdempotencyKey: &key},
			{WorkflowName: "x", Claim: c, AvailableAt: &later},
			{WorkflowName: "x", Claim: c, DeadlineAt: &later},
			{WorkflowName: "x", Claim: &backend.CreateClaim{LeaseDuration: lease}},
			{WorkflowName: "x", Claim: &backend.CreateClaim{WorkerID: "w/0"}},
		} {
			if _, err := b.CreateWorkflowRun(t.Context(), p); !errors.Is(err, backend.ErrInvalidArgument) {
				t.Errorf("CreateWorkflowRun(%+v) = %v, want ErrInvalidArgument", p, err)
			}
		}
		if n := countRuns(t, b).Total(); n != 0 {
			t.Errorf("%d runs stored, want none", n)
		}
	})
}
