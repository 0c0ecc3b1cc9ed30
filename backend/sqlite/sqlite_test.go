package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
)

// TestConformance runs the shared backend suite against one database file
// (every specification works in its own namespace; backends of one
// namespace share the file as two processes would).
func TestConformance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conformance.db")
	backendtest.Run(t, backendtest.Harness{
		NewBackend: func(t testing.TB, namespaceID string) backend.Backend {
			b, err := Open(context.Background(), path, Options{NamespaceID: namespaceID})
			if err != nil {
				t.Fatalf("Open(%s): %v", path, err)
			}
			return b
		},
		AgeRun: ageRun,
	})
}

// ageRun moves a run's created_at back by d.
func ageRun(t testing.TB, b backend.Backend, runID string, d time.Duration) {
	t.Helper()
	sb := b.(*Backend)
	run, err := sb.GetWorkflowRun(context.Background(), runID)
	if err != nil {
		t.Fatalf("age run %s: %v", runID, err)
	}
	_, err = sb.db.ExecContext(context.Background(),
		`UPDATE "workflow_runs" SET "created_at" = ? WHERE "namespace_id" = ? AND "id" = ?`,
		backend.FormatTime(run.CreatedAt.Add(-d)), sb.ns, runID)
	if err != nil {
		t.Fatalf("age run %s: %v", runID, err)
	}
}
