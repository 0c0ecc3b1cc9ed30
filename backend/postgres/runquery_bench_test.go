package postgres

// The speed check of run queries (issue 21): with 1,000,000 finished runs
// carrying 10 search attributes each, a query on one attribute plus status
// must answer a page of 50 within 20 ms at the 99th percentile. It loads
// the data set with generate_series into a scratch schema (dropped at the
// end), ANALYZEs it, logs EXPLAIN (ANALYZE, BUFFERS) of each query and
// reports its p50 and p99 over the benchmark's iterations. Loading takes
// minutes, so it runs only with OPENWORKFLOW_SCALE=1:
//
//	OPENWORKFLOW_SCALE=1 go test ./backend/postgres -run '^$' -bench RunQueryScale -benchtime 400x -timeout 30m -v

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/runquery"
)

// runQueryScaleLoad fills namespace 'scale': 1M finished runs (every
// tenth failed, 20 workflow names, one every 100 ms back from a fixed
// time) and, for each, 10 attributes: customer (1,000 values, hashed so
// that they do not follow the status), region (10), tier (3), plan (50),
// tags (a one-member keyword list of 20), amount and retries (int), score
// (float), vip (bool) and due (time). Values are spread by hashes so that
// none follows the status or the workflow name.
const runQueryScaleLoad = `
INSERT INTO {{schema}}."workflow_runs" AS wr (
  "namespace_id", "id", "workflow_name", "status", "config", "input", "output", "error",
  "attempts", "worker_id", "available_at", "deadline_at", "started_at", "finished_at", "created_at", "updated_at")
SELECT 'scale', 'wrun_' || lpad(g::text, 10, '0'), 'wf-' || (g % 20),
  CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'completed' END, '{}', '{"i":1}',
  CASE WHEN g % 10 = 0 THEN NULL ELSE '{"ok":true}'::jsonb END,
  CASE WHEN g % 10 = 0 THEN '{"message":"x"}'::jsonb END,
  1, 'w', NULL, NULL, t, t, t, t
FROM generate_series(1, 1000000) AS g,
  LATERAL (SELECT TIMESTAMPTZ '2026-11-01 00:00:00Z' - (1100000 - g) * INTERVAL '100 milliseconds' AS t) AS ts;

INSERT INTO {{schema}}."go_search_attribute_types" ("namespace_id", "name", "type", "created_at")
VALUES ('scale', 'customer', 'keyword', NOW()), ('scale', 'region', 'keyword', NOW()),
  ('scale', 'tier', 'keyword', NOW()), ('scale', 'plan', 'keyword', NOW()),
  ('scale', 'tags', 'keyword_list', NOW()), ('scale', 'amount', 'int', NOW()),
  ('scale', 'retries', 'int', NOW()), ('scale', 'score', 'float', NOW()),
  ('scale', 'vip', 'bool', NOW()), ('scale', 'due', 'time', NOW());

INSERT INTO {{schema}}."go_search_attributes"
  ("namespace_id", "workflow_run_id", "name", "seq", "run_created_at", "keyword", "int", "float", "bool", "time")
SELECT 'scale', 'wrun_' || lpad(g::text, 10, '0'), a."name", 0,
  TIMESTAMPTZ '2026-11-01 00:00:00Z' - (1100000 - g) * INTERVAL '100 milliseconds',
  CASE a."name"
    WHEN 'customer' THEN 'c-' || (abs(hashint4(g)) % 1000)
    WHEN 'region' THEN 'r-' || (abs(hashint4(g + 7)) % 10)
    WHEN 'tier' THEN 't-' || (g % 3)
    WHEN 'plan' THEN 'p-' || (g % 50)
    WHEN 'tags' THEN 'tag-' || (abs(hashint4(g + 13)) % 20)
  END,
  CASE a."name" WHEN 'amount' THEN g % 10000 WHEN 'retries' THEN g % 5 END,
  CASE WHEN a."name" = 'score' THEN (g % 1000) / 10.0 END,
  CASE WHEN a."name" = 'vip' THEN g % 7 = 0 END,
  CASE WHEN a."name" = 'due' THEN TIMESTAMPTZ '2026-11-01 00:00:00Z' + (g % 1000) * INTERVAL '1 hour' END
FROM generate_series(1, 1000000) AS g
CROSS JOIN (VALUES ('customer'), ('region'), ('tier'), ('plan'), ('tags'),
  ('amount'), ('retries'), ('score'), ('vip'), ('due')) AS a("name");

ANALYZE {{schema}}."workflow_runs";
ANALYZE {{schema}}."go_search_attributes";
ANALYZE {{schema}}."go_search_attribute_types";
`

func BenchmarkRunQueryScale(b *testing.B) {
	if os.Getenv("OPENWORKFLOW_SCALE") != "1" {
		b.Skip("set OPENWORKFLOW_SCALE=1 to load 1M runs × 10 search attributes")
	}
	ctx := context.Background()
	pool, schema := scratchSchema(b, "ow_rq_")
	if err := Migrate(ctx, pool, schema); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := pool.Exec(ctx, strings.ReplaceAll(runQueryScaleLoad, "{{schema}}", quoteIdent(schema))); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded 1,000,000 runs and 10,000,000 attribute rows in %v", time.Since(start).Round(time.Second))
	be, err := newBackend(pool, Options{NamespaceID: "scale", Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, query string }{
		{"rare-attribute-and-status", `attrs.customer = "c-%d" AND status = "failed"`},
		{"common-attribute-and-status", `attrs.region = "r-%d" AND status = "completed"`},
		{"common-attribute-and-rare-status", `attrs.region = "r-%d" AND status = "failed"`},
		{"int-range-and-status", `attrs.amount >= %d AND attrs.amount < 9999 AND status = "failed"`},
		{"list-member-and-workflow", `attrs.tags = "tag-%d" AND workflow = "wf-3"`},
	} {
		b.Run(c.name, func(b *testing.B) {
			query := func(i int) *runquery.Query {
				q, err := runquery.Parse(fmt.Sprintf(c.query, i%10))
				if err != nil {
					b.Fatal(err)
				}
				return q
			}
			explainRunQuery(b, be, query(3))
			var took []time.Duration
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				page, err := be.ListWorkflowRuns(ctx, backend.ListWorkflowRunsParams{Limit: 50, OmitPayloads: true, Query: query(i)})
				took = append(took, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Data) == 0 {
					b.Fatalf("query %s selected nothing", query(i))
				}
			}
			slices.Sort(took)
			b.ReportMetric(millis(took[len(took)/2]), "p50-ms")
			b.ReportMetric(millis(took[len(took)*99/100]), "p99-ms")
		})
	}
}

// explainRunQuery logs the plan of a page of 50 of q.
func explainRunQuery(b *testing.B, be *Backend, q *runquery.Query) {
	b.Helper()
	ctx := context.Background()
	p := backend.ListWorkflowRunsParams{Limit: 50, OmitPayloads: true, Query: q}
	sql, args, err := be.listRunsSQL(ctx, p, nil, nil, 50)
	if err != nil {
		b.Fatal(err)
	}
	rows, err := be.pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+sql, args...)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			b.Fatal(err)
		}
		plan = append(plan, line)
	}
	b.Logf("%s\n%s", q, strings.Join(plan, "\n"))
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
