package postgres

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
)

// The run counters of go migration 6 are kept by triggers, so they must
// follow every writer of workflow_runs, not only this backend: these tests
// write the table with plain SQL, as the TypeScript SDK, a retention job or
// an operator would, and compare CountWorkflowRuns with a count of the
// rows themselves.

// rowCounts counts namespace ns's rows of workflow_runs per status.
func rowCounts(t testing.TB, pool *pgxpool.Pool, schema, ns string) backend.RunCounts {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT "status", COUNT(*) FROM `+quoteIdent(schema)+`."workflow_runs" WHERE "namespace_id" = $1 GROUP BY 1`, ns)
	if err != nil {
		t.Fatal(err)
	}
	var c backend.RunCounts
	var status string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error { c.Add(backend.RunStatus(status), n); return nil }); err != nil {
		t.Fatal(err)
	}
	return c
}

// requireCountsExact fails unless CountWorkflowRuns of namespace ns agrees
// with the rows, and returns the counts.
func requireCountsExact(t testing.TB, what string, pool *pgxpool.Pool, schema, ns string) backend.RunCounts {
	t.Helper()
	b, err := newBackend(pool, Options{Schema: schema, NamespaceID: ns})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.CountWorkflowRuns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := rowCounts(t, pool, schema, ns); got != want {
		t.Fatalf("%s: CountWorkflowRuns = %+v, the rows say %+v", what, got, want)
	}
	return got
}

// insertRaw inserts n runs of namespace ns with status, as another SDK
// would, in one statement.
func insertRaw(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, schema, ns, status string, n int) error {
	_, err := q.Exec(ctx, `INSERT INTO `+quoteIdent(schema)+`."workflow_runs"
		("namespace_id", "id", "workflow_name", "status", "config", "attempts", "available_at", "created_at", "updated_at")
		SELECT $1, gen_random_uuid()::text, 'wf', $2, '{}', 0, NOW(), NOW(), NOW() FROM generate_series(1, $3)`, ns, status, n)
	return err
}

func TestRunCountsFollowEveryWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, schema := migratedSchema(t, "ow_counts_")
	runs := quoteIdent(schema) + `."workflow_runs"`
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, ns := range []string{"a", "b"} {
		if err := insertRaw(ctx, pool, schema, ns, "pending", 40); err != nil {
			t.Fatal(err)
		}
	}
	requireCountsExact(t, "after inserts of two namespaces", pool, schema, "a")

	steps := []struct {
		what string
		sql  string
	}{
		{"claims, as TypeScript's claim does", `UPDATE ` + runs + ` SET "status" = 'running', "worker_id" = 'ts', "attempts" = "attempts" + 1
			WHERE "namespace_id" = 'a' AND "id" IN (SELECT "id" FROM ` + runs + ` WHERE "namespace_id" = 'a' AND "status" = 'pending' ORDER BY "id" LIMIT 30)`},
		{"a heartbeat, which changes no status", `UPDATE ` + runs + ` SET "available_at" = NOW() + INTERVAL '1 minute' WHERE "namespace_id" = 'a' AND "status" = 'running'`},
		{"completions", `UPDATE ` + runs + ` SET "status" = 'completed', "finished_at" = NOW()
			WHERE "namespace_id" = 'a' AND "id" IN (SELECT "id" FROM ` + runs + ` WHERE "namespace_id" = 'a' AND "status" = 'running' ORDER BY "id" LIMIT 12)`},
		{"failures and a cancellation in one statement", `UPDATE ` + runs + ` SET "status" = CASE WHEN "status" = 'running' THEN 'failed' ELSE 'canceled' END
			WHERE "namespace_id" = 'a' AND "id" IN (SELECT "id" FROM ` + runs + ` WHERE "namespace_id" = 'a' AND "status" IN ('running', 'pending') ORDER BY "id" DESC LIMIT 9)`},
		{"legacy statuses written by an old OpenWorkflow", `UPDATE ` + runs + ` SET "status" = CASE "status" WHEN 'completed' THEN 'succeeded' ELSE 'sleeping' END
			WHERE "namespace_id" = 'a' AND "id" IN (SELECT "id" FROM ` + runs + ` WHERE "namespace_id" = 'a' AND "status" IN ('completed', 'running') ORDER BY "id" LIMIT 6)`},
		{"a retention deletion of finished runs", `DELETE FROM ` + runs + ` WHERE "namespace_id" = 'a' AND "status" IN ('completed', 'succeeded', 'failed') AND "id" IN (
			SELECT "id" FROM ` + runs + ` WHERE "namespace_id" = 'a' ORDER BY "id" LIMIT 20)`},
		{"an upsert that inserts and updates", `INSERT INTO ` + runs + ` ("namespace_id", "id", "workflow_name", "status", "config", "attempts", "created_at", "updated_at")
			SELECT 'a', "id", 'wf', 'pending', '{}', 0, NOW(), NOW() FROM ((SELECT "id" FROM ` + runs + ` WHERE "namespace_id" = 'a' ORDER BY "id" LIMIT 3)
			UNION ALL SELECT 'fresh-' || g FROM generate_series(1, 2) AS g) AS i
			ON CONFLICT ("namespace_id", "id") DO UPDATE SET "status" = 'canceled'`},
		{"a rolled-back transaction", `DO $$ BEGIN
			UPDATE ` + runs + ` SET "status" = 'failed' WHERE "namespace_id" = 'a';
			RAISE EXCEPTION 'roll back';
			EXCEPTION WHEN raise_exception THEN NULL; END $$`},
	}
	for _, s := range steps {
		exec(s.sql)
		requireCountsExact(t, "after "+s.what, pool, schema, "a")
	}
	if got := requireCountsExact(t, "the other namespace", pool, schema, "b"); got != (backend.RunCounts{Pending: 40}) {
		t.Fatalf("namespace b counts %+v, want its 40 pending runs untouched", got)
	}

	exec(`TRUNCATE ` + runs + ` CASCADE`)
	if got := requireCountsExact(t, "after TRUNCATE", pool, schema, "b"); got != (backend.RunCounts{}) {
		t.Fatalf("counts after TRUNCATE %+v, want none", got)
	}
	if err := insertRaw(ctx, pool, schema, "b", "pending", 3); err != nil {
		t.Fatal(err)
	}
	requireCountsExact(t, "after an insert that follows the TRUNCATE", pool, schema, "b")
}

// TestRunCountsStayExactUnderConcurrentWritersAndFolds: sessions writing
// at once (each its own counter rows), folds running meanwhile, and the
// writers' sessions ending: the sums stay exact, and a fold leaves one row
// per status.
func TestRunCountsStayExactUnderConcurrentWritersAndFolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, schema := migratedSchema(t, "ow_counts_")
	runs := quoteIdent(schema) + `."workflow_runs"`
	const ns = "busy"
	writers, err := pgxpool.New(ctx, pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer writers.Close()
	b, err := newBackend(pool, Options{Schema: schema, NamespaceID: ns})
	if err != nil {
		t.Fatal(err)
	}
	transitions := []string{
		`UPDATE ` + runs + ` SET "status" = 'running' WHERE "namespace_id" = $1 AND "id" IN (SELECT "id" FROM ` + runs + ` WHERE "namespace_id" = $1 AND "status" = 'pending' LIMIT 5 FOR UPDATE SKIP LOCKED)`,
		`UPDATE ` + runs + ` SET "status" = 'completed' WHERE "namespace_id" = $1 AND "id" IN (SELECT "id" FROM ` + runs + ` WHERE "namespace_id" = $1 AND "status" = 'running' LIMIT 3 FOR UPDATE SKIP LOCKED)`,
		`UPDATE ` + runs + ` SET "status" = 'failed' WHERE "namespace_id" = $1 AND "id" IN (SELECT "id" FROM ` + runs + ` WHERE "namespace_id" = $1 AND "status" = 'running' LIMIT 1 FOR UPDATE SKIP LOCKED)`,
		`DELETE FROM ` + runs + ` WHERE "namespace_id" = $1 AND "id" IN (SELECT "id" FROM ` + runs + ` WHERE "namespace_id" = $1 AND "status" = 'completed' LIMIT 2 FOR UPDATE SKIP LOCKED)`,
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range 40 {
				var err error
				if r.IntN(3) == 0 {
					err = insertRaw(ctx, writers, schema, ns, "pending", 1+r.IntN(10))
				} else {
					_, err = writers.Exec(ctx, transitions[r.IntN(len(transitions))], ns)
				}
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if _, err := pool.Exec(ctx, b.q.FoldRunCounts, ns); err != nil {
				t.Errorf("fold: %v", err)
				return
			}
		}
	})
	wg.Wait()
	requireCountsExact(t, "after the concurrent writes", pool, schema, ns)

	// The writers' sessions end; a fold then leaves slot 0 only.
	writers.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := pool.Exec(ctx, b.q.FoldRunCounts, ns); err != nil {
			t.Fatal(err)
		}
		var others int
		if err := pool.QueryRow(ctx, `SELECT COUNT(*) FROM `+quoteIdent(schema)+`."openworkflow_go_run_counts"
			WHERE "namespace_id" = $1 AND "slot" <> 0
			AND "slot" NOT IN (SELECT "pid" FROM pg_stat_activity)`, ns).Scan(&others); err != nil {
			t.Fatal(err)
		}
		if others == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d counter rows of ended sessions left after folding", others)
		}
		time.Sleep(20 * time.Millisecond) // the sessions' processes take a moment to exit
	}
	requireCountsExact(t, "after the fold", pool, schema, ns)
}

// TestMigrationCountsTheRunsPresentWhileWritersWrite: go migration 6 on a
// database that already holds runs, with writers inserting and finishing
// runs throughout, starts the counters exact.
func TestMigrationCountsTheRunsPresentWhileWritersWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, schema := migratedSchema(t, "ow_counts_")
	q := quoteIdent(schema)
	const ns = "old"
	// Back to go version 5: no counters, no triggers, and runs already
	// there.
	if _, err := pool.Exec(ctx, `
		DROP TRIGGER "openworkflow_go_count_inserted_runs" ON `+q+`."workflow_runs";
		DROP TRIGGER "openworkflow_go_count_updated_runs" ON `+q+`."workflow_runs";
		DROP TRIGGER "openworkflow_go_count_deleted_runs" ON `+q+`."workflow_runs";
		DROP TRIGGER "openworkflow_go_count_truncated_runs" ON `+q+`."workflow_runs";
		DROP FUNCTION `+q+`."openworkflow_go_count_runs"();
		DROP TABLE `+q+`."openworkflow_go_run_counts";
		DELETE FROM `+q+`."openworkflow_go_migrations" WHERE "version" = 6`); err != nil {
		t.Fatal(err)
	}
	if err := insertRaw(ctx, pool, schema, ns, "completed", 5000); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var written atomic.Int64 // the writers' rounds so far
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := insertRaw(ctx, pool, schema, ns, "pending", 2); err != nil {
					t.Errorf("insert: %v", err)
					return
				}
				if _, err := pool.Exec(ctx, `UPDATE `+q+`."workflow_runs" SET "status" = 'failed' WHERE "namespace_id" = $1
					AND "id" IN (SELECT "id" FROM `+q+`."workflow_runs" WHERE "namespace_id" = $1 AND "status" = 'pending' LIMIT 1 FOR UPDATE SKIP LOCKED)`, ns); err != nil {
					t.Errorf("update: %v", err)
					return
				}
				written.Add(1)
			}
		})
	}
	// The writers are under way before the migration and go on after it.
	awaitRounds := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for written.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("the writers made %d rounds in 10 s, want %d", written.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	awaitRounds(10)
	if err := Migrate(ctx, pool, schema); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	awaitRounds(written.Load() + 10)
	close(stop)
	wg.Wait()
	got := requireCountsExact(t, "after migrating under writes", pool, schema, ns)
	if got.Completed != 5000 || got.Pending+got.Failed == 0 {
		t.Fatalf("counts %+v: want the 5,000 completed runs and some the writers made", got)
	}
}
