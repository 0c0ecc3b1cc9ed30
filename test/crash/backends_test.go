package crash

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

// target is a backend the test process and its worker processes share.
type target struct {
	kind, dsn, namespace string
	schema               string // PostgreSQL only: the test's own schema
}

// sqliteTarget is a fresh database file in the test's temporary directory.
func sqliteTarget(t *testing.T) target {
	return target{kind: "sqlite", dsn: filepath.Join(t.TempDir(), "openworkflow.db"), namespace: randomNamespace()}
}

// postgresTarget is a fresh random namespace in a schema of the test's own
// on the test server (dropped when the test ends), so the test never
// touches tables it did not create. The test fails when the server is
// unreachable, unless OPENWORKFLOW_SKIP_POSTGRES=1.
func postgresTarget(t *testing.T) target {
	return target{kind: "postgres", dsn: pgtest.URL(), schema: pgtest.NewSchema(t), namespace: randomNamespace()}
}

// open opens the target's backend for the test process (the client side),
// closed when the test ends. Opening first also creates and migrates the
// database before any worker process opens it.
func (tg target) open(t *testing.T) *ow.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := openBackend(ctx, tg.kind, tg.dsn, tg.schema, tg.namespace)
	if err != nil {
		if tg.kind == "postgres" && os.Getenv("OPENWORKFLOW_SKIP_POSTGRES") == "1" {
			t.Skipf("PostgreSQL unavailable and OPENWORKFLOW_SKIP_POSTGRES=1: %v", err)
		}
		t.Fatalf("open %s backend (set OPENWORKFLOW_TEST_POSTGRES_URL, or OPENWORKFLOW_SKIP_POSTGRES=1 to skip PostgreSQL tests): %v", tg.kind, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return ow.NewClient(b)
}

func randomNamespace() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "crashtest-" + hex.EncodeToString(b[:])
}

// listSteps returns every step attempt of a run, oldest first.
func listSteps(ctx context.Context, c *ow.Client, runID string) ([]backend.StepAttempt, error) {
	var all []backend.StepAttempt
	after := ""
	for {
		page, err := c.ListSteps(ctx, backend.ListStepAttemptsParams{WorkflowRunID: runID, Limit: 1000, After: after})
		if err != nil {
			return nil, err
		}
		all = append(all, page.Data...)
		if page.Next == nil {
			return all, nil
		}
		after = *page.Next
	}
}

// attemptsByStep groups a run's step attempts by durable key.
func attemptsByStep(attempts []backend.StepAttempt) map[string][]backend.StepAttempt {
	m := map[string][]backend.StepAttempt{}
	for _, a := range attempts {
		m[a.StepName] = append(m[a.StepName], a)
	}
	return m
}

// waitFinished waits until the run is terminal, reading it every 25 ms
// (Result would wait for the next fallback poll, up to 2 s, when the run is
// finished by another process of a SQLite file, whose events it cannot
// see). It returns early, leaving the verdict to Result, if ctx ends.
func waitFinished(ctx context.Context, c *ow.Client, runID string) {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		run, err := c.GetRun(ctx, runID)
		if err == nil && run.Status.Terminal() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
