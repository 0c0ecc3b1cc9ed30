package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/id"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

// sharedPool is the pool every test backend uses (FromPool), on the
// schema testSchema that TestMain creates and migrates once, and drops at
// the end: a name of this process's own, so that other processes using
// the server are never touched. sharedPool is nil when
// OPENWORKFLOW_SKIP_POSTGRES=1 and the server is unreachable.
var (
	sharedPool *pgxpool.Pool
	testSchema = "owt_" + strings.ToLower(id.New("pg"))[3:]
)

// table is the quoted name of a table of testSchema, for raw SQL.
func table(name string) string { return pgx.Identifier{testSchema, name}.Sanitize() }

// TestMain creates and migrates the test schema once. An unreachable
// server fails the package, unless OPENWORKFLOW_SKIP_POSTGRES=1, which
// skips every test.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, pgtest.URL())
	if err == nil {
		_, err = pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{testSchema}.Sanitize())
	}
	if err == nil {
		err = postgres.Migrate(ctx, pool, testSchema)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		if pgtest.Skipped() {
			fmt.Fprintf(os.Stderr, "postgres unreachable, tests skipped (OPENWORKFLOW_SKIP_POSTGRES=1): %v\n", err)
			return m.Run()
		}
		fmt.Fprintf(os.Stderr, "postgres backend tests need a server at %s (set OPENWORKFLOW_TEST_POSTGRES_URL, or OPENWORKFLOW_SKIP_POSTGRES=1 to skip): %v\n", pgtest.URL(), err)
		return 1
	}
	sharedPool = pool
	code := m.Run()
	dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
	if _, err := pool.Exec(dctx, "DROP SCHEMA "+pgx.Identifier{testSchema}.Sanitize()+" CASCADE"); err != nil {
		fmt.Fprintf(os.Stderr, "drop test schema %s: %v\n", testSchema, err)
		code = 1
	}
	dcancel()
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
	return newBackendOn(t, namespaceID, nil)
}

// newBackendOn is newBackendIn with the backend's clock now (nil: the
// database's NOW()).
func newBackendOn(t testing.TB, namespaceID string, now func() time.Time) *postgres.Backend {
	t.Helper()
	b, err := postgres.FromPool(requirePool(t), postgres.Options{Schema: testSchema, NamespaceID: namespaceID, Now: now})
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
		`UPDATE `+table("workflow_runs")+` SET created_at = created_at - $3::bigint * INTERVAL '1 millisecond'
		 WHERE namespace_id = $1 AND id = $2`, b.NamespaceID(), runID, d.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("age run %s: no such run in namespace %s", runID, b.NamespaceID())
	}
}

// storeStatus writes status as is into a run's status column.
func storeStatus(t testing.TB, b backend.Backend, runID, status string) {
	t.Helper()
	tag, err := requirePool(t).Exec(context.Background(),
		`UPDATE `+table("workflow_runs")+` SET status = $3 WHERE namespace_id = $1 AND id = $2`, b.NamespaceID(), runID, status)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("store status of run %s: no such run in namespace %s", runID, b.NamespaceID())
	}
}

// storeScheduleWorkflowName writes name as is into a schedule's
// workflow_name.
func storeScheduleWorkflowName(t testing.TB, b backend.Backend, schedule, name string) {
	t.Helper()
	tag, err := requirePool(t).Exec(context.Background(),
		`UPDATE `+table("workflow_schedules")+` SET workflow_name = $3 WHERE namespace_id = $1 AND name = $2`, b.NamespaceID(), schedule, name)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("store workflow name of schedule %s: no such schedule in namespace %s", schedule, b.NamespaceID())
	}
}

// TestConformance runs the shared backend suite, one backend per namespace
// on the shared pool.
func TestConformance(t *testing.T) {
	requirePool(t)
	backendtest.Run(t, backendtest.Harness{
		NewBackend: func(t testing.TB, namespaceID string, now func() time.Time) backend.Backend {
			return newBackendOn(t, namespaceID, now)
		},
		AgeRun:                    ageRun,
		StoreStatus:               storeStatus,
		StoreScheduleWorkflowName: storeScheduleWorkflowName,
		InTx: func(t testing.TB, b backend.Backend, fn func(ctx context.Context, tx any) error) error {
			ctx := context.Background()
			return pgx.BeginFunc(ctx, requirePool(t), func(tx pgx.Tx) error { return fn(ctx, tx) })
		},
	})
}

// createRun creates a run, defaulting the workflow name to "wf".
func createRun(t testing.TB, b backend.Backend, p backend.CreateWorkflowRunParams) *backend.WorkflowRun {
	t.Helper()
	if p.WorkflowName == "" {
		p.WorkflowName = "wf"
	}
	run, err := b.CreateWorkflowRun(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// claim claims up to one run per worker id.
func claim(t testing.TB, b backend.Backend, lease time.Duration, workers ...string) []*backend.WorkflowRun {
	t.Helper()
	runs, err := b.ClaimWorkflowRuns(context.Background(), backend.ClaimWorkflowRunsParams{WorkerIDs: workers, LeaseDuration: lease})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// must drops the error of a query whose rows are collected next (the
// collect reports it).
func must(rows pgx.Rows, err error) pgx.Rows {
	if err != nil {
		panic(err)
	}
	return rows
}
