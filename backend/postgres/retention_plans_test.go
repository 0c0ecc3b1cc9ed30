package postgres

import (
	"context"
	"testing"
	"time"
)

// TestPruneBatchReadsItsRangeAndProbes checks the shape of a prune batch
// (prune_candidates, sql/retention.sql) where it went wrong at a million
// runs: with 100,000 finished runs of 3 steps each, analyzed as
// autovacuum would, a batch of 500 from the middle of the range must read
// about its 500 runs and probe each one's in-use tests, not the
// namespace's runs or every step attempt. This plan reads about 3,000
// pages here; the one with the in-use tests inside the ranges (commit
// 480717e) read 7,100 here and 75,000 at a million runs.
func TestPruneBatchReadsItsRangeAndProbes(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 100,000 runs")
	}
	const maxBuffers = 5000
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pool, schema := migratedSchema(t, "ow_prune_plans_")
	// Runs r1…r100000 completed 60 days ago, 1 ms apart, with 3 completed
	// steps; a running workflow step of another run waits on r50200 (a
	// child in use, in the batch's range).
	if _, err := pool.Exec(ctx, withSchema(`
INSERT INTO {{schema}}."workflow_runs" (
  "namespace_id", "id", "workflow_name", "status", "config", "attempts",
  "started_at", "finished_at", "created_at", "updated_at")
SELECT 'n', 'r' || g, 'wf', 'completed', '{}'::jsonb, 1, t, t, t, t
FROM generate_series(1, 100000) AS g, LATERAL (SELECT NOW() - INTERVAL '60 days' + g * INTERVAL '1 millisecond' AS t) AS x;
INSERT INTO {{schema}}."step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status", "config",
  "started_at", "finished_at", "created_at", "updated_at")
SELECT 'n', 'a' || g || '_' || k, 'r' || g, 'step-' || k, 'function', 'completed', '{}', NOW(), NOW(), NOW(), NOW()
FROM generate_series(1, 100000) AS g, generate_series(0, 2) AS k;
INSERT INTO {{schema}}."workflow_runs" ("namespace_id", "id", "workflow_name", "status", "config", "attempts", "created_at", "updated_at")
VALUES ('n', 'parent', 'wf', 'running', '{}', 1, NOW(), NOW());
INSERT INTO {{schema}}."step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status", "config",
  "child_workflow_run_namespace_id", "child_workflow_run_id", "started_at", "created_at", "updated_at")
VALUES ('n', 'waits', 'parent', 'child', 'workflow', 'running', '{}', 'n', 'r50200', NOW(), NOW(), NOW());
ANALYZE {{schema}}."workflow_runs";
ANALYZE {{schema}}."step_attempts"`, schema)); err != nil {
		t.Fatal(err)
	}
	var cursorAt time.Time
	if err := pool.QueryRow(ctx, withSchema(`SELECT "created_at" FROM {{schema}}."workflow_runs" WHERE "namespace_id" = 'n' AND "id" = 'r50000'`, schema)).Scan(&cursorAt); err != nil {
		t.Fatal(err)
	}
	q := mustLoadQueries(t, schema)
	pages, rows := explainBuffers(t, ctx, pool, q.PruneCandidates,
		[]any{"n", time.Now().Add(-30 * 24 * time.Hour), cursorAt, "r50000", 500, []string{}}, false)
	t.Logf("%d pages for a batch of %d candidates", pages, rows)
	if rows != 500 {
		t.Errorf("the batch has %d candidates, want 500", rows)
	}
	if pages >= maxBuffers {
		t.Errorf("a batch of 500 read %d pages (limit %d): it reads more than its range and a probe per candidate", pages, maxBuffers)
	}
	var inUse int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (`+q.PruneCandidates+`) AS c WHERE c."status" IS NULL`,
		"n", time.Now().Add(-30*24*time.Hour), cursorAt, "r50000", 500, []string{}).Scan(&inUse); err != nil {
		t.Fatal(err)
	}
	if inUse != 1 {
		t.Errorf("%d candidates of the batch were kept, want 1 (r50200, the child a running step waits on)", inUse)
	}
}
