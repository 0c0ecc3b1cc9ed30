package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// The claim commits without an fsync (writeRelaxed): its connection runs
// it at synchronous NORMAL and goes back to the pool at the backend's own
// setting, so every other write stays fsynced (issue 24).
func TestClaimLeavesItsConnectionFsyncingAgain(t *testing.T) {
	for _, tc := range []struct {
		synchronous string
		want        int // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{{"FULL", 2}, {"NORMAL", 1}} {
		t.Run("with synchronous "+tc.synchronous, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b, err := Open(ctx, filepath.Join(t.TempDir(), "ow.db"), Options{Synchronous: tc.synchronous})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			b.db.SetMaxOpenConns(1) // the claim's connection is the one read below
			if _, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "w", Input: []byte(`1`)}); err != nil {
				t.Fatal(err)
			}
			runs, err := b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: []string{"w/0"}, LeaseDuration: time.Minute})
			if err != nil || len(runs) != 1 {
				t.Fatalf("claim: %v, %d runs; want the run", err, len(runs))
			}
			var got int
			if err := b.db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("after a claim the pool's connection has synchronous %d, want %d (%s)", got, tc.want, tc.synchronous)
			}
		})
	}
}
