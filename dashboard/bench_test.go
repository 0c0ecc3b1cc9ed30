package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

// BenchmarkDashboard1M measures the dashboard over 1,000,000 finished runs
// in PostgreSQL (the figures of docs/benchmarks.md): the server-side
// render of the runs page (first page, a filtered one, one deep in the
// list) and of a run's page, each a whole HTTP answer over loopback, and
// the time a headless Chromium takes to reach the load event of each
// (the browser's own navigation timing). Each sub-benchmark reports its
// p50 and p95 in ms. Loading the runs takes a minute or two, so it runs
// only with OPENWORKFLOW_BENCH_1M=1:
//
//	OPENWORKFLOW_BENCH_1M=1 go test ./dashboard -run '^$' -bench Dashboard1M -benchtime 200x -timeout 30m
func BenchmarkDashboard1M(b *testing.B) {
	if os.Getenv("OPENWORKFLOW_BENCH_1M") != "1" {
		b.Skip("set OPENWORKFLOW_BENCH_1M=1 to load 1,000,000 runs into PostgreSQL and measure the dashboard")
	}
	s, target := site1M(b)
	deep := backend.Cursor{CreatedAt: time.Now().Add(-50000 * time.Second), ID: "wrun_0000500000"}.Encode()
	// Each page, and what its answer must hold (a run of the list, the
	// run's timeline), so an empty page is not measured by mistake.
	pages := []struct{ name, path, want string }{
		{"runs", "/", `class="mono run-link"`},
		{"runs-100", "/?limit=100", `class="mono run-link"`},
		{"runs-filtered", "/?status=failed&workflow=wf-10", `badge s-failed`},
		{"runs-deep", "/?cursor=" + url.QueryEscape(deep), `class="mono run-link"`},
		{"run", "/runs/" + target, `rect class="bar b-failed`},
	}
	for _, p := range pages {
		b.Run("render/"+p.name, func(b *testing.B) {
			get := func() {
				res, err := http.Get(s.url + p.path)
				if err != nil {
					b.Fatal(err)
				}
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusOK || !strings.Contains(string(body), p.want) {
					b.Fatalf("GET %s answered %d (%v) without %q", p.path, res.StatusCode, err, p.want)
				}
			}
			get() // warm: templates, connections
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				get()
				took = append(took, time.Since(start))
			}
			report(b, took)
		})
	}
	b.Run("api/counts", func(b *testing.B) {
		// What the runs page fetches after it loaded (never before: see
		// countsCache), uncached.
		var took []time.Duration
		for b.Loop() {
			start := time.Now()
			res, err := http.Get(s.url + "/v1/runs/counts")
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			took = append(took, time.Since(start))
		}
		report(b, took)
	})
	tab := newTab(b, s)
	for _, p := range pages {
		if p.name == "runs-100" || p.name == "runs-deep" {
			continue
		}
		b.Run("chromium-load/"+p.name, func(b *testing.B) {
			tab.t = b
			tab.open(p.path) // warm: the browser's cache of the stylesheet and script
			var took []time.Duration
			for b.Loop() {
				tab.open(p.path)
				ms := eval[float64](tab, `performance.getEntriesByType('navigation')[0].loadEventStart`)
				took = append(took, time.Duration(ms*float64(time.Millisecond)))
			}
			report(b, took)
		})
	}
}

// report adds the p50 and p95 of took, in ms, to the benchmark's line.
func report(b *testing.B, took []time.Duration) {
	b.Helper()
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	at := func(q float64) float64 {
		return float64(took[min(len(took)-1, int(q*float64(len(took))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
}

// site1M loads a schema of its own with 1,000,000 finished runs and a
// million step attempts, and serves the dashboard over it (no worker:
// nothing is claimed). It returns the site and a run whose page shows
// retries and a child: 12 attempts over 5 steps.
func site1M(b *testing.B) (*site, string) {
	b.Helper()
	if pgtest.Skipped() {
		b.Skip("OPENWORKFLOW_SKIP_POSTGRES=1")
	}
	ctx := context.Background()
	schema := pgtest.NewSchema(b)
	bk, err := postgres.Open(ctx, pgtest.URL(), postgres.Options{Schema: schema}) // migrates
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bk.Close() })
	pool := pgtest.Pool(b)
	start := time.Now()
	q := func(sql string) {
		b.Helper()
		if _, err := pool.Exec(ctx, strings.ReplaceAll(sql, "{{schema}}", pgx.Identifier{schema}.Sanitize())); err != nil {
			b.Fatalf("load: %v\n%s", err, sql)
		}
	}
	// Without the secondary indexes while loading, then rebuilt as the
	// migrations made them: a sorted build beats a million inserts into
	// each index.
	rows, err := pool.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1
		AND tablename IN ('workflow_runs', 'step_attempts') AND indexname NOT LIKE '%pkey'`, schema)
	if err != nil {
		b.Fatal(err)
	}
	var names, defs []string
	for rows.Next() {
		var n, d string
		if err := rows.Scan(&n, &d); err != nil {
			b.Fatal(err)
		}
		names, defs = append(names, n), append(defs, d)
	}
	if rows.Err() != nil {
		b.Fatal(rows.Err())
	}
	for _, n := range names {
		q(`DROP INDEX {{schema}}.` + pgx.Identifier{n}.Sanitize())
	}
	// 1M finished runs: 20 workflows, every tenth failed, every fifth a
	// child of the run before (through that run's step), one every 100 ms
	// back from now; and one step attempt per run. The foreign keys want
	// a parent's step before its child: the runs that are not children
	// and their steps first, then the children and theirs.
	for _, children := range []bool{false, true} {
		cond := "g % 5 <> 0"
		if children {
			cond = "g % 5 = 0"
		}
		q(`INSERT INTO {{schema}}."workflow_runs" (
  "namespace_id", "id", "workflow_name", "status", "config", "input", "output", "error", "attempts",
  "parent_step_attempt_namespace_id", "parent_step_attempt_id",
  "worker_id", "available_at", "deadline_at", "started_at", "finished_at", "created_at", "updated_at")
SELECT 'default', 'wrun_' || lpad(g::text, 10, '0'), 'wf-' || (g % 20),
  CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'completed' END, '{}', jsonb_build_object('order', g, 'customer', 'c-' || (g % 977)),
  CASE WHEN g % 10 = 0 THEN NULL ELSE jsonb_build_object('ok', true, 'total', g % 1000) END,
  CASE WHEN g % 10 = 0 THEN '{"name":"Error","message":"card declined"}'::jsonb END,
  1 + (g % 3),
  CASE WHEN g % 5 = 0 THEN 'default' END, CASE WHEN g % 5 = 0 THEN 'step_' || lpad((g - 1)::text, 10, '0') END,
  'worker-' || (g % 7) || '/' || (g % 10), NULL, NULL, t, t + INTERVAL '80 milliseconds', t, t + INTERVAL '80 milliseconds'
FROM generate_series(1, 1000000) AS g,
  LATERAL (SELECT NOW() - (1000001 - g) * INTERVAL '100 milliseconds' AS t) AS ts
WHERE ` + cond)
		q(`INSERT INTO {{schema}}."step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status", "config", "output",
  "started_at", "finished_at", "created_at", "updated_at")
SELECT 'default', 'step_' || lpad(g::text, 10, '0'), 'wrun_' || lpad(g::text, 10, '0'), 'charge', 'function', 'completed', '{}',
  jsonb_build_object('ok', true), t + INTERVAL '10 milliseconds', t + INTERVAL '60 milliseconds', t + INTERVAL '10 milliseconds', t + INTERVAL '60 milliseconds'
FROM generate_series(1, 1000000) AS g,
  LATERAL (SELECT NOW() - (1000001 - g) * INTERVAL '100 milliseconds' AS t) AS ts
WHERE ` + cond)
	}
	for _, d := range defs {
		q(d)
	}
	q(`VACUUM ANALYZE {{schema}}."workflow_runs"`)
	q(`VACUUM ANALYZE {{schema}}."step_attempts"`)
	// The run of the detail page: a child, a step retried twice, a sleep.
	target := "wrun_0000999990"
	q(`INSERT INTO {{schema}}."step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status", "config", "output", "error", "context",
  "child_workflow_run_namespace_id", "child_workflow_run_id", "started_at", "finished_at", "created_at", "updated_at")
SELECT 'default', 'step_t' || lpad(i::text, 4, '0'), '` + target + `', v.name, v.kind, v.status, '{}', v.output, v.error, v.ctx,
  v.child_ns, v.child, t + v.at, t + v.at + v.took, t + v.at, t + v.at + v.took
FROM (SELECT "created_at" AS t FROM {{schema}}."workflow_runs" WHERE "namespace_id" = 'default' AND "id" = '` + target + `') AS r(t),
  (VALUES
    (1, 'reserve', 'function', 'completed', '{"ok":true}'::jsonb, NULL::jsonb, NULL::jsonb, NULL, NULL, INTERVAL '1 ms', INTERVAL '4 ms'),
    (2, 'notify', 'workflow', 'completed', '{"sent":true}', NULL, '{"kind":"workflow"}', 'default', 'wrun_0000999991', INTERVAL '5 ms', INTERVAL '20 ms'),
    (3, 'charge', 'function', 'failed', NULL, '{"name":"Error","message":"connection reset"}', NULL, NULL, NULL, INTERVAL '26 ms', INTERVAL '3 ms'),
    (4, 'charge', 'function', 'failed', NULL, '{"name":"Error","message":"connection reset"}', NULL, NULL, NULL, INTERVAL '35 ms', INTERVAL '3 ms'),
    (5, 'charge', 'function', 'completed', '{"charged":42}', NULL, NULL, NULL, NULL, INTERVAL '55 ms', INTERVAL '5 ms'),
    (6, 'cool-down', 'sleep', 'completed', 'null', NULL, '{"kind":"sleep"}', NULL, NULL, INTERVAL '61 ms', INTERVAL '15 ms'),
    (7, 'report', 'function', 'completed', '{"lines":3}', NULL, NULL, NULL, NULL, INTERVAL '77 ms', INTERVAL '2 ms')
  ) AS v(i, name, kind, status, output, error, ctx, child_ns, child, at, took)`)
	b.Logf("loaded 1,000,000 runs and 1,000,007 step attempts in %v", time.Since(start).Round(time.Second))
	var n int
	if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT COUNT(*) FROM %s."workflow_runs"`, pgx.Identifier{schema}.Sanitize())).Scan(&n); err != nil || n != 1000000 {
		b.Fatalf("loaded %d runs (%v)", n, err)
	}
	return newSite(b, bk, siteOptions{noWorker: true}), target
}
