package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
)

// TestFirstAnalyzeOfFreshTables checks statistics.go: a backend that
// writes firstAnalyzeAfter rows to workflow_runs or step_attempts while
// the table has no planner statistics analyzes it, and the step writes'
// fence then probes the primary key.
//
// Its runs are W4's: 1,000 runs created at once in a fresh schema with
// autovacuum off. Without statistics PostgreSQL estimated "namespace_id"
// = $1 at a fraction of a row there, and probed each run of the fence of
// insert_steps through workflow_runs_workflow_name_status_created_at_desc_idx,
// reading the namespace's 1,000 runs per probe (999 rows removed by its
// filter, 11 ms a statement in W4's wake-ups, in custom plans too).
func TestFirstAnalyzeOfFreshTables(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool, schema := migratedSchema(t, "ow_stats_")
	if _, err := pool.Exec(ctx, withSchema(`
ALTER TABLE {{schema}}."workflow_runs" SET (autovacuum_enabled = false);
ALTER TABLE {{schema}}."step_attempts" SET (autovacuum_enabled = false)`, schema)); err != nil {
		t.Fatal(err)
	}
	b, err := newBackend(pool, Options{Schema: schema, NamespaceID: "n"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	// Fewer rows than the threshold change nothing.
	if _, err := b.CreateWorkflowRuns(ctx, manyRuns(firstAnalyzeAfter-1)); err != nil {
		t.Fatal(err)
	}
	b.stats.wait() // nothing to wait for: no ANALYZE was started
	if hasStatistics(t, ctx, pool, schema, "workflow_runs") {
		t.Fatalf("workflow_runs has statistics after %d runs, below the threshold %d", firstAnalyzeAfter-1, firstAnalyzeAfter)
	}
	runs, err := b.CreateWorkflowRuns(ctx, manyRuns(1000-(firstAnalyzeAfter-1)))
	if err != nil {
		t.Fatal(err)
	}
	b.stats.wait()
	if !hasStatistics(t, ctx, pool, schema, "workflow_runs") {
		t.Fatalf("workflow_runs has no statistics after %d runs written", 1000)
	}

	// The step attempts: a write each of firstAnalyzeAfter runs taken by
	// worker w.
	taken := runs[:firstAnalyzeAfter]
	ids := make([]string, len(taken))
	for i, r := range taken {
		ids[i] = r.ID
	}
	if _, err := pool.Exec(ctx, withSchema(`UPDATE {{schema}}."workflow_runs" SET "status" = 'running', "worker_id" = 'w', "started_at" = NOW()
WHERE "namespace_id" = 'n' AND "id" = ANY($1)`, schema), ids); err != nil {
		t.Fatal(err)
	}
	if hasStatistics(t, ctx, pool, schema, "step_attempts") {
		t.Fatal("step_attempts has statistics before any attempt was written")
	}
	groups := make([][]backend.Write, len(taken))
	for i, r := range taken {
		now := time.Now()
		groups[i] = []backend.Write{{Kind: backend.WriteInsertStep, WorkflowRunID: r.ID, WorkerID: "w", Step: &backend.StepAttempt{
			NamespaceID: "n", ID: fmt.Sprint("step_", i), WorkflowRunID: r.ID, StepName: "s", Kind: backend.StepFunction,
			Status: backend.StepCompleted, Config: json.RawMessage(`{}`), Output: json.RawMessage(`1`), StartedAt: &now, FinishedAt: &now,
		}}}
	}
	for i, err := range b.ApplyWrites(ctx, groups) {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	b.stats.wait()
	if !hasStatistics(t, ctx, pool, schema, "step_attempts") {
		t.Fatalf("step_attempts has no statistics after %d attempts written", len(taken))
	}

	// The fence of insert_steps for two of the running runs, planned for
	// its arguments and as the generic plan, probes the primary key.
	q := mustLoadQueries(t, schema)
	var noClock *time.Time
	none := []*time.Time{nil, nil}
	args := []any{"n", texts(ids[0], ids[1]), texts("w", "w"), texts("x0", "x1"), texts("t", "t"), texts("function", "function"),
		texts("completed", "completed"), texts("{}", "{}"), texts("", ""), texts("1", "2"), texts("", ""), texts("", ""), texts("", ""),
		none, none, noClock}
	for _, generic := range []bool{false, true} {
		var scans []string
		walkPlan(explainPlan(t, ctx, pool, q.InsertSteps, args, generic), func(n map[string]any) {
			if n["Relation Name"] == "workflow_runs" {
				scans = append(scans, fmt.Sprint(n["Node Type"], " using ", n["Index Name"]))
			}
		})
		if len(scans) != 1 || scans[0] != "Index Scan using workflow_runs_pkey" {
			t.Errorf("generic plan %v: the fence reads workflow_runs by %q, want one Index Scan using workflow_runs_pkey", generic, scans)
		}
	}
}

// manyRuns returns n parameters of unkeyed runs of workflow "wf".
func manyRuns(n int) []backend.CreateWorkflowRunParams {
	ps := make([]backend.CreateWorkflowRunParams, n)
	for i := range ps {
		ps[i] = backend.CreateWorkflowRunParams{WorkflowName: "wf", Input: json.RawMessage(fmt.Sprint(i))}
	}
	return ps
}

// hasStatistics reports whether table of schema has planner statistics.
func hasStatistics(t *testing.T, ctx context.Context, pool *pgxpool.Pool, schema, table string) bool {
	t.Helper()
	var has bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stats WHERE schemaname = $1 AND tablename = $2)`, schema, table).Scan(&has); err != nil {
		t.Fatal(err)
	}
	return has
}

// TestMultiRowRunWritesIgnoreStaleStatusStatistics checks the multi-row
// run writes against statistics taken when no run had the status they
// test, as in a queue table, where an ANALYZE (ours, statistics.go, or
// autovacuum's) sees one moment's mix of statuses. W4's 1,000 runs are
// analyzed while all pending (or all completed), then set running, 88 of
// them pending and queued under a limit, and 88 canceled while still
// queued; completing, parking, canceling or claiming 88 of them, and
// unqueuing the 88 ended ones of a limited workflow's window, must not
// compare each input row with every run. complete_runs tested "status =
// 'running'" as a plain condition, which those statistics estimate at one
// row of workflow_runs, and the planner scanned the table in a loop over
// the inputs (W4 after the first ANALYZE: 86,856 rows removed by its join
// filter, 33 ms for 88 runs). claim_chosen and admission_queue's unqueued
// step were audited here and needed no change: the one's status test is
// ORed with its input's admit flag, and the other's window is the outer
// side of an index probe.
func TestMultiRowRunWritesIgnoreStaleStatusStatistics(t *testing.T) {
	const runs, written = 1000, 88
	for _, analyzed := range []string{"pending", "completed"} {
		t.Run("analyzed while all "+analyzed, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			pool, schema := migratedSchema(t, "ow_stale_")
			if _, err := pool.Exec(ctx, withSchema(fmt.Sprintf(`
ALTER TABLE {{schema}}."workflow_runs" SET (autovacuum_enabled = false);
INSERT INTO {{schema}}."workflow_runs" (
  "namespace_id", "id", "workflow_name", "status", "config", "attempts",
  "available_at", "created_at", "updated_at")
SELECT 'n', 'r' || g, 'wf', '%s', '{}'::jsonb, 0, NOW(), NOW(), NOW()
FROM generate_series(1, %d) AS g;
ANALYZE {{schema}}."workflow_runs";
UPDATE {{schema}}."workflow_runs" SET "status" = 'running', "worker_id" = 'w' || substr("id", 2),
  "available_at" = NOW() + INTERVAL '1 hour', "started_at" = NOW(), "finished_at" = NULL;
UPDATE {{schema}}."workflow_runs" SET "status" = 'pending', "worker_id" = NULL, "started_at" = NULL,
  "available_at" = NOW(), "go_queued_at" = NOW()
WHERE substr("id", 2)::int BETWEEN 301 AND %d;
UPDATE {{schema}}."workflow_runs" SET "status" = 'canceled', "worker_id" = NULL, "finished_at" = NOW(),
  "go_queued_at" = NOW() - INTERVAL '1 hour'
WHERE substr("id", 2)::int BETWEEN 401 AND %d;
INSERT INTO {{schema}}."workflow_limits" ("namespace_id", "workflow_name", "concurrency", "created_at", "updated_at")
VALUES ('n', 'wf', 1, NOW(), NOW())`, analyzed, runs, 300+written, 400+written), schema)); err != nil {
				t.Fatal(err)
			}
			q := mustLoadQueries(t, schema)
			var noClock *time.Time
			ids := func(p string, from int) []string {
				out := make([]string, written)
				for i := range out {
					out[i] = fmt.Sprint(p, from+i)
				}
				return out
			}
			outputs, due, admits := make([]string, written), make([]time.Time, written), make([]bool, written)
			for i := range outputs {
				outputs[i], due[i], admits[i] = "1", time.Now().Add(time.Minute), true
			}
			for _, c := range []struct {
				name string
				sql  string
				args []any
				rows float64 // the statement's result rows
			}{
				{"complete runs", q.CompleteRuns, []any{"n", ids("r", 1), ids("w", 1), outputs, noClock}, written},
				{"park runs", q.ParkRuns, []any{"n", ids("r", 101), ids("w", 101), due, noClock}, written},
				{"cancel runs in bulk", q.BulkCancelRuns, []any{"n", ids("r", 201), noClock}, written},
				{"claim queued runs of a limited workflow", q.ClaimChosen, []any{"n", ids("r", 301), ids("w", 301), admits, int64(30000), noClock}, written},
				// The window holds the 88 canceled runs, still queued, and
				// 112 of the waiting ones: its unqueued step clears the 88.
				{"unqueue ended runs of a limited workflow's window", q.AdmissionQueue, []any{"n", "wf", 1, 2 * 100, noClock}, 1},
			} {
				for _, generic := range []bool{false, true} {
					plan := explainPlan(t, ctx, pool, c.sql, c.args, generic)
					removed, updated := 0.0, 0.0
					walkPlan(plan, func(n map[string]any) {
						r, _ := n["Rows Removed by Join Filter"].(float64)
						removed += r
						// The rows a write of workflow_runs was given to
						// change (its own Actual Rows are 0 without RETURNING):
						// its input plan, "Outer" from PostgreSQL 14, a
						// "Member" before.
						if n["Node Type"] == "ModifyTable" && n["Relation Name"] == "workflow_runs" {
							input, _ := n["Plans"].([]any)
							for _, c := range input {
								if c, _ := c.(map[string]any); c["Parent Relationship"] == "Outer" || c["Parent Relationship"] == "Member" {
									u, _ := c["Actual Rows"].(float64)
									updated += u
								}
							}
						}
					})
					if updated != written {
						t.Errorf("%s (generic plan %v) wrote %v runs, want %d", c.name, generic, updated, written)
					}
					if got, _ := plan["Actual Rows"].(float64); got != c.rows {
						t.Errorf("%s (generic plan %v) returned %v rows, want %v", c.name, generic, got, c.rows)
					}
					if removed >= runs {
						t.Errorf("%s (generic plan %v) removed %v rows by join filters for %d runs of %d: it compares each input with every run instead of probing the primary key or hashing", c.name, generic, removed, written, runs)
					}
				}
			}
		})
	}
}

// wait waits for the first ANALYZEs started so far.
func (f *firstAnalyze) wait() { f.wg.Wait() }
