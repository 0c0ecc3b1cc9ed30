package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestSingletonLookupIsAnIndexRange: a singleton start's read of its key's
// active runs (singleton_active) reads one range of
// workflow_runs_go_singleton_idx, a few pages, among 100,000 runs of which
// 90,000 finished runs carry singleton keys — with and without
// statistics.
func TestSingletonLookupIsAnIndexRange(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool, schema := migratedSchema(t, "ow_singletonplan_")
	// Keys k0..k999, 100 runs each: 90 finished, 1 running, 9 held.
	if _, err := pool.Exec(ctx, withSchema(`
ALTER TABLE {{schema}}."workflow_runs" SET (autovacuum_enabled = false);
INSERT INTO {{schema}}."workflow_runs" (
  "namespace_id", "id", "workflow_name", "status", "config", "attempts",
  "available_at", "finished_at", "created_at", "updated_at", "go_singleton_key", "go_singleton_held_at")
SELECT 'n', 'r' || lpad(g::text, 6, '0'), 'wf', s.status, '{}'::jsonb, 1,
  CASE WHEN s.status = 'running' THEN NOW() + INTERVAL '1 minute' END,
  CASE WHEN s.status = 'completed' THEN NOW() END,
  NOW() - INTERVAL '2 hours' + g * INTERVAL '1 millisecond', NOW(), 'k' || (g % 1000),
  CASE WHEN s.status = 'pending' THEN NOW() END
FROM generate_series(0, 99999) AS g
CROSS JOIN LATERAL (SELECT CASE WHEN g < 90000 THEN 'completed' WHEN g < 91000 THEN 'running' ELSE 'pending' END AS status) AS s`,
		schema)); err != nil {
		t.Fatal(err)
	}
	q := mustLoadQueries(t, schema)
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := pool.Exec(ctx, withSchema(`ANALYZE {{schema}}."workflow_runs"`, schema)); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(fmt.Sprintf("analyzed %v", analyzed), func(t *testing.T) {
			plan := explainPlan(t, ctx, pool, q.SingletonActive, []any{"n", "wf", "k7"}, false)
			var seq []string
			indexes := map[string]bool{}
			walkPlan(plan, func(node map[string]any) {
				if node["Node Type"] == "Seq Scan" {
					seq = append(seq, fmt.Sprint(node["Relation Name"]))
				}
				if name, ok := node["Index Name"].(string); ok {
					indexes[name] = true
				}
			})
			rows, _ := plan["Actual Rows"].(float64)
			hit, _ := plan["Shared Hit Blocks"].(float64)
			read, _ := plan["Shared Read Blocks"].(float64)
			t.Logf("rows %v, pages %v, indexes %v", rows, hit+read, indexes)
			if len(seq) > 0 || !indexes["workflow_runs_go_singleton_idx"] {
				t.Errorf("plan reads %v sequentially and indexes %v; want a range of workflow_runs_go_singleton_idx", seq, indexes)
			}
			if rows != 10 {
				t.Errorf("read %v active runs of key k7, want 10 (1 running, 9 held)", rows)
			}
			if pages := hit + read; pages > 40 {
				t.Errorf("read %v pages for 10 runs, want a few (an index range)", pages)
			}
		})
	}
}
