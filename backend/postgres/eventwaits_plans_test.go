package postgres

import (
	"context"
	"testing"
	"time"
)

// TestEventWaitLookupsReadFewPagesHoweverManyWaits checks the claim of
// go migration 19: a publish finds the waits an event may satisfy by its
// index, so the pages it reads do not grow with the number of open waits
// on its name. 20,000 waits on one name, indexed by order, and 20,000
// running runs are loaded into a schema never analyzed; the paths lookup
// (a loose index scan), the candidates lookup for one order and the
// publish's first probe (is the name observed?) must read fewer than
// maxBuffers pages each.
func TestEventWaitLookupsReadFewPagesHoweverManyWaits(t *testing.T) {
	const maxBuffers = 60
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool, schema := migratedSchema(t, "ow_evplans_")
	if _, err := pool.Exec(ctx, withSchema(`
ALTER TABLE {{schema}}."workflow_runs" SET (autovacuum_enabled = false);
ALTER TABLE {{schema}}."go_event_waits" SET (autovacuum_enabled = false);
INSERT INTO {{schema}}."workflow_runs" (
  "namespace_id", "id", "workflow_name", "status", "config", "attempts",
  "available_at", "started_at", "created_at", "updated_at")
SELECT 'n', 'r' || g, 'wf', 'running', '{}'::jsonb, 1, NOW() + INTERVAL '1 day', NOW(), NOW(), NOW()
FROM generate_series(1, 20000) AS g;
INSERT INTO {{schema}}."go_event_waits" (
  "namespace_id", "step_attempt_id", "workflow_run_id", "workflow_name", "step_name", "event_name",
  "match", "input", "index_path", "index_value", "after_seq", "timeout_at", "created_at")
SELECT 'n', 'a' || g, 'r' || g, 'wf', 'order.paid', 'order.paid',
  'event.data.orderId == input.orderId', '{"orderId":"o-' || g || '"}', '["data","orderId"]', 's:o-' || g,
  0, NOW() + INTERVAL '1 day', NOW()
FROM generate_series(1, 20000) AS g;
`, schema)); err != nil {
		t.Fatal(err)
	}
	q := mustLoadQueries(t, schema)
	pages, rows := explainBuffers(t, ctx, pool, q.EventWaitPaths, []any{"n", "order.paid"}, false)
	t.Logf("event_wait_paths: %d pages", pages)
	if rows != 1 || pages > maxBuffers {
		t.Errorf("event_wait_paths read %d pages for %d paths, want 1 path in at most %d pages", pages, rows, maxBuffers)
	}
	pages, rows = explainBuffers(t, ctx, pool, q.EventWaitCandidates, []any{"n", "order.paid", `["data","orderId"]`, "s:o-777", int64(1)}, false)
	t.Logf("event_wait_candidates: %d pages", pages)
	if rows != 1 || pages > maxBuffers {
		t.Errorf("event_wait_candidates read %d pages for %d waits, want 1 wait in at most %d pages", pages, rows, maxBuffers)
	}
	pages, rows = explainBuffers(t, ctx, pool, q.UnindexedEventWaits, []any{"n", "order.paid", int64(1), 1000}, false)
	if rows != 0 || pages > maxBuffers {
		t.Errorf("unindexed_event_waits read %d pages for %d waits, want none in at most %d pages", pages, rows, maxBuffers)
	}
	// A publish first asks whether anything observes its names: one row
	// of NULLs (observed, nothing inserted) after a probe of a few pages.
	pages, rows = explainBuffers(t, ctx, pool, q.InsertUnobservedEvents,
		[]any{"n", []string{"e1", "e2"}, []string{"order.paid", "order.other"}, []string{"{}", "{}"}, []*string{nil, nil}, nil}, false)
	t.Logf("insert_unobserved_events (observed): %d pages", pages)
	if rows != 1 || pages > maxBuffers {
		t.Errorf("insert_unobserved_events read %d pages and returned %d rows, want the one observed row in at most %d pages", pages, rows, maxBuffers)
	}
}
