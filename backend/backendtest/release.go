package backendtest

import (
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

func testReleaseWorkflowRuns(t *testing.T, s *suite) {
	t.Run("hands back the running runs of the given worker ids, and only those, claimable at once", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		lost, kept := newWorkerID(), newWorkerID()
		r1 := startRun(t, b, lost, backend.CreateWorkflowRunParams{})
		r2 := startRun(t, b, kept, backend.CreateWorkflowRunParams{})
		n, err := b.ReleaseWorkflowRuns(t.Context(), []string{lost, newWorkerID()})
		if err != nil || n != 1 {
			t.Fatalf("ReleaseWorkflowRuns = %d, %v; want 1 run released", n, err)
		}
		got := getRun(t, b, r1.ID)
		if got.Status != backend.RunRunning || got.WorkerID != nil || got.Attempts != r1.Attempts {
			t.Fatalf("released run: status %s, worker %v, attempts %d; want running, no worker, attempts %d", got.Status, got.WorkerID, got.Attempts, r1.Attempts)
		}
		if got := getRun(t, b, r2.ID); got.WorkerID == nil || *got.WorkerID != kept {
			t.Fatalf("the other worker's run has worker %v, want %s", got.WorkerID, kept)
		}
		claimed := claim(t, b, longLease, newWorkerID())
		if len(claimed) != 1 || claimed[0].ID != r1.ID {
			t.Fatalf("claimed %v after the release, want %s at once", runIDs(claimed), r1.ID)
		}
	})
}
