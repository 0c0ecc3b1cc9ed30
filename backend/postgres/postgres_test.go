package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// defaultTestURL is used when OPENWORKFLOW_TEST_POSTGRES_URL is not set.
const defaultTestURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// sharedPool is the pool every test backend uses (FromPool); the default
// schema is migrated once by TestMain. It is nil when
// OPENWORKFLOW_SKIP_POSTGRES=1 and the server is unreachable.
var sharedPool *pgxpool.Pool

func testURL() string {
	if u := os.Getenv("OPENWORKFLOW_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return defaultTestURL
}

// TestMain migrates the default schema once. An unreachable server fails
// the package, unless OPENWORKFLOW_SKIP_POSTGRES=1, which skips every test.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, testURL())
	if err == nil {
		err = postgres.Migrate(ctx, pool, postgres.DefaultSchema)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		if os.Getenv("OPENWORKFLOW_SKIP_POSTGRES") == "1" {
			fmt.Fprintf(os.Stderr, "postgres unreachable, tests skipped (OPENWORKFLOW_SKIP_POSTGRES=1): %v\n", err)
			return m.Run()
		}
		fmt.Fprintf(os.Stderr, "postgres backend tests need a server at %s (set OPENWORKFLOW_TEST_POSTGRES_URL, or OPENWORKFLOW_SKIP_POSTGRES=1 to skip): %v\n", testURL(), err)
		return 1
	}
	sharedPool = pool
	code := m.Run()
	pool.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines leaked: %v\n", err)
			return 1
		}
	}
	return code
}

// requirePool returns the shared pool, or skips when the server was
// declared optional and is unreachable.
func requirePool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	if sharedPool == nil {
		t.Skip("postgres unreachable and OPENWORKFLOW_SKIP_POSTGRES=1")
	}
	return sharedPool
}

// newNamespace returns a namespace no other test uses.
func newNamespace() string { return strings.ToLower(id.New("test")) }

// newBackend returns a backend on the shared pool in a fresh namespace,
// closed at the end of the test.
func newBackend(t testing.TB) *postgres.Backend {
	t.Helper()
	return newBackendIn(t, newNamespace())
}

func newBackendIn(t testing.TB, namespaceID string) *postgres.Backend {
	t.Helper()
	b, err := postgres.FromPool(requirePool(t), postgres.Options{NamespaceID: namespaceID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// ageRun moves a run's created_at back by d.
func ageRun(t testing.TB, b backend.Backend, runID string, d time.Duration) {
	t.Helper()
	tag, err := requirePool(t).Exec(context.Background(),
		`UPDATE openworkflow.workflow_runs SET created_at = created_at - $3::bigint * INTERVAL '1 millisecond'
		 WHERE namespace_id = $1 AND id = $2`, b.NamespaceID(), runID, d.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("age run %s: no such run in namespace %s", runID, b.NamespaceID())
	}
}

// TestConformance runs the shared backend suite, one backend per namespace
// on the shared pool.
func TestConformance(t *testing.T) {
	requirePool(t)
	backendtest.Run(t, backendtest.Harness{
		NewBackend: func(t testing.TB, namespaceID string) backend.Backend { return newBackendIn(t, namespaceID) },
		AgeRun:     ageRun,
	})
}
