package postgres

// The scale check behind docs/scale.md: with 1,000,000 finished runs and a
// few thousand live ones in a namespace, the claim and list queries must
// stay fast. It loads the data set with generate_series into a scratch
// schema (dropped at the end), ANALYZEs it and prints EXPLAIN (ANALYZE,
// BUFFERS) of every query (the median of five warm runs). It runs only
// with OPENWORKFLOW_SCALE=1:
//
//	OPENWORKFLOW_SCALE=1 go test ./backend/postgres -run TestScalePlans -v -timeout 20m

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
)

// scaleLoad fills namespace 'scale' of the scratch schema: 1M finished
// runs (every tenth failed, 20 workflow names, one every 100 ms back from
// now), 3,000 pending runs due now and 2,000 running ones under a lease.
const scaleLoad = `
INSERT INTO {{schema}}."workflow_runs" AS wr (
  "namespace_id", "id", "workflow_name", "status", "config", "input", "output", "error",
  "attempts", "worker_id", "available_at", "deadline_at", "started_at", "finished_at", "created_at", "updated_at")
SELECT 'scale', 'wrun_' || lpad(g::text, 10, '0'), 'wf-' || (g % 20),
  CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'completed' END, '{}', '{"i":1}',
  CASE WHEN g % 10 = 0 THEN NULL ELSE '{"ok":true}'::jsonb END,
  CASE WHEN g % 10 = 0 THEN '{"message":"x"}'::jsonb END,
  1, 'w', NULL, NULL, t, t, t, t
FROM generate_series(1, 1000000) AS g,
  LATERAL (SELECT NOW() - (1100000 - g) * INTERVAL '100 milliseconds' AS t) AS ts;

INSERT INTO {{schema}}."workflow_runs" AS wr (
  "namespace_id", "id", "workflow_name", "status", "config", "input",
  "attempts", "worker_id", "available_at", "deadline_at", "started_at", "created_at", "updated_at")
SELECT 'scale', 'wrun_' || lpad(g::text, 10, '0'), 'wf-' || (g % 20),
  CASE WHEN g <= 1003000 THEN 'pending' ELSE 'running' END, '{}', '{"i":1}',
  CASE WHEN g <= 1003000 THEN 0 ELSE 1 END,
  CASE WHEN g <= 1003000 THEN NULL ELSE 'w-' || g END,
  CASE WHEN g <= 1003000 THEN NOW() - INTERVAL '1 second' ELSE NOW() + INTERVAL '1 hour' END,
  CASE WHEN g % 2 = 0 THEN NOW() + INTERVAL '1 day' END,
  CASE WHEN g <= 1003000 THEN NULL ELSE NOW() END,
  NOW() - (1100000 - g) * INTERVAL '1 millisecond', NOW()
FROM generate_series(1000001, 1005000) AS g;

`

func TestScalePlans(t *testing.T) {
	if os.Getenv("OPENWORKFLOW_SCALE") != "1" {
		t.Skip("set OPENWORKFLOW_SCALE=1 to load 1M runs and print the query plans")
	}
	ctx := context.Background()
	pool, schema := scratchSchema(t, "ow_scale_")
	if os.Getenv("OPENWORKFLOW_SCALE_BEFORE") == "1" {
		// Only OpenWorkflow's migrations: the plans before ours.
		if _, err := migrate(ctx, pool, schema, openworkflowLine); err != nil {
			t.Fatal(err)
		}
	} else if err := Migrate(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	loadScale(t, pool, schema)
	t.Logf("loaded 1,005,000 runs in %v", time.Since(start).Round(time.Millisecond))

	b, err := newBackend(pool, Options{NamespaceID: "scale", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	workers := make([]string, 10)
	for i := range workers {
		workers[i] = fmt.Sprintf("scale-w%d", i)
	}
	mid := backend.Cursor{CreatedAt: time.Now().Add(-50000 * time.Second), ID: "wrun_0000500000"}
	list := func(p backend.ListWorkflowRunsParams, after, before *backend.Cursor) (string, []any) {
		return b.listRunsQuery(p, after, before, 100)
	}
	type plan struct {
		name string
		sql  string
		args []any
	}
	var plans []plan
	add := func(name string, sql string, args []any) { plans = append(plans, plan{name, sql, args}) }
	add("claim 10 runs", b.q.ClaimRuns, []any{b.namespace, workers, int64(60000), []string(nil), []*string(nil), int64(0), (*time.Time)(nil)})
	for _, c := range []struct {
		name          string
		p             backend.ListWorkflowRunsParams
		after, before *backend.Cursor
	}{
		{"list newest first", backend.ListWorkflowRunsParams{}, nil, nil},
		{"list newest first after a cursor", backend.ListWorkflowRunsParams{}, &mid, nil},
		{"list status completed", backend.ListWorkflowRunsParams{Status: backend.RunCompleted}, nil, nil},
		{"list status completed after a cursor", backend.ListWorkflowRunsParams{Status: backend.RunCompleted}, &mid, nil},
		{"list status completed before a cursor", backend.ListWorkflowRunsParams{Status: backend.RunCompleted}, nil, &mid},
		{"list status failed", backend.ListWorkflowRunsParams{Status: backend.RunFailed}, nil, nil},
		{"list status running", backend.ListWorkflowRunsParams{Status: backend.RunRunning}, nil, nil},
		{"list status pending", backend.ListWorkflowRunsParams{Status: backend.RunPending}, nil, nil},
		{"list workflow name", backend.ListWorkflowRunsParams{WorkflowName: "wf-7"}, nil, nil},
		{"list workflow name after a cursor", backend.ListWorkflowRunsParams{WorkflowName: "wf-7"}, &mid, nil},
		{"list workflow name before a cursor", backend.ListWorkflowRunsParams{WorkflowName: "wf-7"}, nil, &mid},
		{"list workflow name and status completed", backend.ListWorkflowRunsParams{WorkflowName: "wf-7", Status: backend.RunCompleted}, nil, nil},
		{"list workflow name and status failed", backend.ListWorkflowRunsParams{WorkflowName: "wf-7", Status: backend.RunFailed}, nil, nil},
		{"list workflow name and status running", backend.ListWorkflowRunsParams{WorkflowName: "wf-7", Status: backend.RunRunning}, nil, nil},
		{"list status canceled (no such run)", backend.ListWorkflowRunsParams{Status: backend.RunCanceled}, nil, nil},
		{"list workflow name with no run", backend.ListWorkflowRunsParams{WorkflowName: "wf-none"}, nil, nil},
	} {
		sql, args := list(c.p, c.after, c.before)
		add(c.name, sql, args)
	}
	add("count runs per status", b.q.CountRuns, []any{b.namespace})

	var out strings.Builder
	for _, p := range plans {
		// Run each once to warm the cache, then five times, and keep the
		// plan of median execution time (the machine is shared and single
		// runs are noisy); the claim is rolled back so every run of it sees
		// the same data.
		type run struct {
			ms    float64
			lines []string
		}
		var runs []run
		for i := range 6 {
			var lines []string
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+p.sql, p.args...)
				if err != nil {
					return err
				}
				lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					return err
				}
				return errRollback
			})
			if err != errRollback {
				t.Fatalf("%s: %v", p.name, err)
			}
			if i == 0 {
				continue
			}
			ms := -1.0
			for _, l := range lines {
				if v, ok := strings.CutPrefix(l, "Execution Time: "); ok {
					ms, _ = strconv.ParseFloat(strings.TrimSuffix(v, " ms"), 64)
				}
			}
			runs = append(runs, run{ms, lines})
		}
		slices.SortFunc(runs, func(a, b run) int { return cmp.Compare(a.ms, b.ms) })
		lines := runs[len(runs)/2].lines
		fmt.Fprintf(&out, "### %s\n\n```\n%s\n```\n\n", p.name, strings.Join(lines, "\n"))
	}
	t.Log("\n" + out.String())
	if path := os.Getenv("OPENWORKFLOW_SCALE_OUT"); path != "" {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// loadScale fills namespace 'scale' of schema, migrated, with scaleLoad
// and ANALYZEs it. It loads without the secondary indexes, then rebuilds
// them exactly as the migrations made them: a sorted build is far faster
// than 1M inserts into each index.
func loadScale(t testing.TB, pool *pgxpool.Pool, schema string) {
	t.Helper()
	ctx := context.Background()
	defs, err := collectStrings(pool.Query(ctx, `SELECT indexdef FROM pg_indexes
		WHERE schemaname = $1 AND tablename = 'workflow_runs' AND indexname <> 'workflow_runs_pkey'`, schema))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DO $$ DECLARE i text; BEGIN
		FOR i IN SELECT indexname FROM pg_indexes WHERE schemaname = '`+schema+`' AND tablename = 'workflow_runs' AND indexname <> 'workflow_runs_pkey'
		LOOP EXECUTE format('DROP INDEX %I.%I', '`+schema+`', i); END LOOP; END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, withSchema(scaleLoad, schema)); err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		if _, err := pool.Exec(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE `+quoteIdent(schema)+`."workflow_runs"`); err != nil {
		t.Fatal(err)
	}
}

// scaleCounts are the counts per status of scaleLoad.
var scaleCounts = backend.RunCounts{Completed: 900000, Failed: 100000, Pending: 3000, Running: 2000}

// BenchmarkCountWorkflowRunsAt1M counts the runs per status of a namespace
// holding scaleLoad's 1,005,000 runs (GET /v1/runs/counts): "counters" is
// CountWorkflowRuns, which sums the counters of go migration 6, "rows" the
// statement it replaced, a count of the rows; the two alternate within
// the run, so their ratio is measured under one load. It loads the runs
// first (a minute or two), so it runs only with OPENWORKFLOW_SCALE=1:
//
//	OPENWORKFLOW_SCALE=1 go test ./backend/postgres -run '^$' -bench CountWorkflowRunsAt1M -benchtime 20x
func BenchmarkCountWorkflowRunsAt1M(b *testing.B) {
	if os.Getenv("OPENWORKFLOW_SCALE") != "1" {
		b.Skip("set OPENWORKFLOW_SCALE=1 to load 1M runs and count them")
	}
	ctx := context.Background()
	pool, schema := scratchSchema(b, "ow_count_")
	if err := Migrate(ctx, pool, schema); err != nil {
		b.Fatal(err)
	}
	loadScale(b, pool, schema)
	be, err := newBackend(pool, Options{NamespaceID: "scale", Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	countRows := func() backend.RunCounts {
		rows, err := pool.Query(ctx, `SELECT wr."status", COUNT(*) FROM `+quoteIdent(schema)+`."workflow_runs" AS wr
			WHERE wr."namespace_id" = $1 GROUP BY wr."status"`, be.namespace)
		if err != nil {
			b.Fatal(err)
		}
		var c backend.RunCounts
		var status string
		var n int
		if _, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error { c.Add(backend.RunStatus(status), n); return nil }); err != nil {
			b.Fatal(err)
		}
		return c
	}
	countCounters := func() backend.RunCounts {
		c, err := be.CountWorkflowRuns(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	var spent [2]time.Duration
	for b.Loop() {
		for i, count := range []func() backend.RunCounts{countCounters, countRows} {
			start := time.Now()
			got := count()
			spent[i] += time.Since(start)
			if got != scaleCounts {
				b.Fatalf("counts %+v, want %+v", got, scaleCounts)
			}
		}
	}
	b.ReportMetric(float64(spent[0].Microseconds())/1000/float64(b.N), "counters-ms/op")
	b.ReportMetric(float64(spent[1].Microseconds())/1000/float64(b.N), "rows-ms/op")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "rows/counters")
}

var errRollback = fmt.Errorf("rollback")
