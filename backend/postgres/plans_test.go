package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// TestLookupsByIDProbeWithoutStatistics checks the convention of
// queries.go: a statement that finds runs by id reads a few pages per id,
// however many runs the namespace holds, even before the first ANALYZE
// (a fresh database, as every benchmark and every new deployment starts
// with). 20,000 running runs are loaded into a new schema that is never
// analyzed; each statement, given 2 runs, must read fewer than
// maxBuffers pages, planned for its arguments and as the generic plan a
// pooled connection runs it with after five executions. Testing the status as a plain condition made the
// planner walk the status index over all 20,000 running runs (hundreds of
// pages); a condition on the namespace alone, the whole namespace.
func TestLookupsByIDProbeWithoutStatistics(t *testing.T) {
	checkLookupsByID(t, false)
}

// TestLookupsByIDProbeInANamespaceTheStatisticsMissed is
// TestLookupsByIDProbeWithoutStatistics with statistics that never met
// the namespace: 30,000 finished runs of another namespace are ANALYZEd
// first, so the statistics say that namespace is every row, and the
// 20,000 runs of "n" come after (as W1's namespaces beside ow bench
// scale's 10,000,000 loaded runs, or any namespace made since the last
// ANALYZE). The planner then estimates "namespace_id" = 'n' at one row,
// and, given the namespace as a constant, probed by an index on
// (namespace_id, workflow_name, status, created_at) that it walked over
// all 20,000 runs of "n" per id; the lookups give it as by_id_ns.
func TestLookupsByIDProbeInANamespaceTheStatisticsMissed(t *testing.T) {
	checkLookupsByID(t, true)
}

// checkLookupsByID loads the runs of TestLookupsByIDProbeWithoutStatistics
// (after ANALYZE of another namespace's runs when analyzedElsewhere) and
// checks that each lookup by id reads fewer than maxBuffers pages.
func checkLookupsByID(t *testing.T, analyzedElsewhere bool) {
	const maxBuffers = 150
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, schema := migratedSchema(t, "ow_plans_")
	if analyzedElsewhere {
		if _, err := pool.Exec(ctx, withSchema(`
INSERT INTO {{schema}}."workflow_runs" (
  "namespace_id", "id", "workflow_name", "status", "config", "attempts", "worker_id",
  "started_at", "finished_at", "created_at", "updated_at")
SELECT 'big', 'r' || g, 'wf', 'completed', '{}'::jsonb, 1, 'w', NOW(), NOW(), NOW(), NOW()
FROM generate_series(1, 30000) AS g;
INSERT INTO {{schema}}."step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status", "config",
  "started_at", "finished_at", "created_at", "updated_at")
SELECT 'big', 'a' || g, 'r' || g, 's', 'function', 'completed', '{}', NOW(), NOW(), NOW(), NOW()
FROM generate_series(1, 30000) AS g;
ANALYZE {{schema}}."workflow_runs";
ANALYZE {{schema}}."step_attempts"`, schema)); err != nil {
			t.Fatal(err)
		}
	}
	// Runs r1…r20000 running under worker w<n>, leased for an hour; r0 and
	// r00 pending, due now; running step attempts a1 and a2 of r1 and r2.
	// Then r11 and r14 are parked (r14 due in 5 s, for the claim's
	// lookahead, and r11 waiting on its child r12, which completed), and
	// autovacuum is off so that the tables keep no statistics.
	if _, err := pool.Exec(ctx, withSchema(`
ALTER TABLE {{schema}}."workflow_runs" SET (autovacuum_enabled = false);
ALTER TABLE {{schema}}."step_attempts" SET (autovacuum_enabled = false);
INSERT INTO {{schema}}."workflow_runs" (
  "namespace_id", "id", "workflow_name", "status", "config", "attempts", "worker_id",
  "available_at", "started_at", "created_at", "updated_at")
SELECT 'n', 'r' || g, 'wf', 'running', '{}'::jsonb, 1, 'w' || g, NOW() + INTERVAL '1 hour', NOW(), NOW(), NOW()
FROM generate_series(1, 20000) AS g
UNION ALL
SELECT 'n', p, 'wf', 'pending', '{}'::jsonb, 0, NULL, NOW(), NULL, NOW(), NOW()
FROM unnest(ARRAY['r0', 'r00']) AS p;
INSERT INTO {{schema}}."step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status", "config",
  "started_at", "created_at", "updated_at")
SELECT 'n', 'a' || g, 'r' || g, 's', 'function', 'running', '{}', NOW(), NOW(), NOW()
FROM generate_series(1, 2) AS g;
INSERT INTO {{schema}}."step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status", "config",
  "child_workflow_run_namespace_id", "child_workflow_run_id", "started_at", "created_at", "updated_at")
VALUES ('n', 'a11', 'r11', 'child', 'workflow', 'running', '{}', 'n', 'r12', NOW(), NOW(), NOW());
UPDATE {{schema}}."workflow_runs" SET "worker_id" = NULL, "available_at" = NOW() + INTERVAL '1 hour'
WHERE "namespace_id" = 'n' AND "id" = 'r11';
UPDATE {{schema}}."workflow_runs" SET "status" = 'completed', "worker_id" = NULL, "available_at" = NULL, "finished_at" = NOW()
WHERE "namespace_id" = 'n' AND "id" = 'r12';
UPDATE {{schema}}."workflow_runs" SET "worker_id" = NULL, "available_at" = NOW() + INTERVAL '5 seconds'
WHERE "namespace_id" = 'n' AND "id" = 'r14'`, schema)); err != nil {
		t.Fatal(err)
	}
	// Hooks and streams (go migration 5): a hook per run (token t<n>,
	// hook h<n>, two payloads each), and a stream "out" per run of three
	// chunks, the third closing it; r11 also waits in a hook-wait attempt
	// on its hook, after payload 1.
	if _, err := pool.Exec(ctx, withSchema(`
ALTER TABLE {{schema}}."workflow_hooks" SET (autovacuum_enabled = false);
ALTER TABLE {{schema}}."workflow_hook_payloads" SET (autovacuum_enabled = false);
ALTER TABLE {{schema}}."workflow_streams" SET (autovacuum_enabled = false);
ALTER TABLE {{schema}}."workflow_stream_chunks" SET (autovacuum_enabled = false);
INSERT INTO {{schema}}."workflow_hooks" (
  "namespace_id", "id", "token", "workflow_run_id", "step_name", "step_attempt_id", "payloads", "created_at", "updated_at")
SELECT 'n', 'h' || g, 't' || g, 'r' || g, 'approval', 'ha' || g, 2, NOW(), NOW()
FROM generate_series(1, 20000) AS g;
INSERT INTO {{schema}}."workflow_hook_payloads" ("namespace_id", "hook_id", "seq", "data", "created_at")
SELECT 'n', 'h' || g, s, 'true', NOW()
FROM generate_series(1, 20000) AS g, generate_series(1, 2) AS s;
INSERT INTO {{schema}}."step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status", "config", "context",
  "started_at", "created_at", "updated_at")
VALUES ('n', 'hw11', 'r11', 'approval/receive', 'hook-wait', 'running', '{}',
  '{"kind":"hook-wait","hookId":"h11","afterSeq":1,"timeoutAt":null}', NOW(), NOW(), NOW());
INSERT INTO {{schema}}."workflow_streams" (
  "namespace_id", "workflow_run_id", "stream", "chunks", "close_seq", "close_step_attempt_id",
  "close_worker_id", "close_run_attempts", "created_at", "updated_at")
SELECT 'n', 'r' || g, 'out', 3, 3, 'sa' || g, 'w' || g, 1, NOW(), NOW()
FROM generate_series(1, 20000) AS g;
INSERT INTO {{schema}}."workflow_stream_chunks" (
  "namespace_id", "workflow_run_id", "stream", "seq", "data", "closes", "step_attempt_id",
  "worker_id", "run_attempts", "created_at")
SELECT 'n', 'r' || g, 'out', s, '\x00ff'::bytea, s = 3, 'sa' || g, 'w' || g, 1, NOW()
FROM generate_series(1, 20000) AS g, generate_series(1, 3) AS s`, schema)); err != nil {
		t.Fatal(err)
	}

	q := mustLoadQueries(t, schema)
	ids := func(p string, ns ...int) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = fmt.Sprint(p, n)
		}
		return out
	}
	soon := []time.Time{time.Now().Add(time.Minute), time.Now().Add(time.Minute)}
	noTimes := []*time.Time{nil, nil}
	var noClock *time.Time // the database's clock
	for _, c := range []struct {
		name string
		sql  string
		args []any
		want int // rows the statement returns: the runs or attempts it changed; -1: no RETURNING
	}{
		// Two pending runs, then r14 ahead of its wake-up.
		{"claim", q.ClaimRuns, []any{"n", []string{"x1", "x2", "x3"}, int64(60000), []string(nil), []*string(nil), int64(60000), noClock}, 3},
		{"insert steps", q.InsertSteps, []any{"n", texts("r3", "r4"), texts("w3", "w4"), texts("b3", "b4"),
			texts("s", "s"), texts("function", "function"), texts("completed", "completed"), texts("{}", "{}"),
			texts("", ""), texts("1", "2"), texts("", ""), texts("", ""), texts("", ""), noTimes, noTimes, noClock}, 2},
		{"complete steps", q.CompleteSteps, []any{"n", ids("r", 1, 2), ids("w", 1, 2), ids("a", 1, 2), []string{"1", "2"}, noClock}, 2},
		{"write steps", q.WriteSteps, []any{"n", texts("r3", "r4"), texts("w3", "w4"), texts("b3", "b4"),
			texts("s", "s"), texts("function", "function"), texts("completed", "completed"), texts("{}", "{}"),
			texts("", ""), texts("1", "2"), texts("", ""), texts("", ""), texts("", ""), noTimes, noTimes,
			ids("r", 1, 2), ids("w", 1, 2), ids("a", 1, 2), []string{"1", "2"}, noClock}, 4},
		{"complete runs", q.CompleteRuns, []any{"n", ids("r", 5, 6), ids("w", 5, 6), []string{"1", "2"}, noClock}, 2},
		{"park runs", q.ParkRuns, []any{"n", ids("r", 7, 8), ids("w", 7, 8), soon, noClock}, 2},
		{"complete run", q.CompleteRun, []any{"n", "r9", "w9", "1", noClock}, 1},
		{"step write fence", q.CompleteStep, []any{"n", "r1", "w1", "a1", "1", noClock}, 1},
		{"heartbeat", q.ExtendLease, []any{"n", "r10", "w10", int64(60000), noClock}, -1},
		{"cancel", q.CancelRun, []any{"n", "r13", noClock}, 1},
		{"wake a parent", q.WakeParent, []any{"n", "a11", "n", "r12", noClock}, 1},
		{"reconcile parked runs", q.ReconcileParkedRuns, []any{"n", []string{"r11", "r14"}, noClock}, -1},
		// Hooks: the fence, the lookups by step and by token, the insert,
		// a delivery (r11 is parked on h11 but waits after payload 1, so
		// payload 3 wakes it), the payload read and the run's list.
		{"hook fence", q.LockOwnedRun, []any{"n", "r3", "w3"}, 1},
		{"hook by step", q.GetHookByStep, []any{"n", "r3", "approval"}, 1},
		{"hook token lock", q.LockHookToken, []any{`{"hookNamespaceId":"n","token":"t3"}`}, 1},
		{"hook by token", q.GetHookByToken, []any{"n", "t5"}, 1},
		{"insert hook", q.InsertHook, []any{"n", "hnew", "tnew", "r3", "second", "a3", nil, noClock}, 1},
		{"lock live hook", q.LockLiveHook, []any{"n", "t11"}, 1},
		{"deliver hook payload", q.DeliverHookPayload, []any{"n", "h11", "r11", `{"ok":true}`, noClock}, 1},
		{"next hook payload", q.NextHookPayload, []any{"n", "h7", int64(1)}, 1},
		{"list hooks", q.ListHooks, []any{"n", "r7"}, 1},
		// Streams: an append to r5's closed stream (closed by its own
		// claim, so refused), to a new stream of r6, a read and a list.
		{"append to a closed stream", q.AppendChunk, []any{"n", "r5", "w5", "out", "sa5", []byte{0}, false, noClock}, 1},
		{"append chunk", q.AppendChunk, []any{"n", "r6", "w6", "log", "sa6", []byte{0}, false, noClock}, 1},
		{"read stream", q.ReadStream, []any{"n", "r8", "out", int64(0), 100}, 3},
		{"list streams", q.ListStreams, []any{"n", "r8"}, 1},
	} {
		for _, generic := range []bool{false, true} {
			name := c.name
			if generic {
				name += ", generic plan"
			}
			t.Run(name, func(t *testing.T) {
				pages, rows := explainBuffers(t, ctx, pool, c.sql, c.args, generic)
				t.Logf("%d pages", pages)
				if c.want >= 0 && rows != c.want {
					t.Errorf("the statement returned %d rows, want %d", rows, c.want)
				}
				if pages >= maxBuffers {
					t.Errorf("read %d pages for at most 2 runs (limit %d): it scans the namespace instead of probing the primary key", pages, maxBuffers)
				}
			})
		}
	}
}

// scratchSchema connects to the test server (OPENWORKFLOW_TEST_POSTGRES_URL,
// else the local one) and names a new schema, prefix plus random
// characters, dropped at the end of the test; it skips the test when the
// server is unreachable and OPENWORKFLOW_SKIP_POSTGRES=1. The schema is not
// created: the caller migrates it.
func scratchSchema(t testing.TB, prefix string) (*pgxpool.Pool, string) {
	t.Helper()
	url := os.Getenv("OPENWORKFLOW_TEST_POSTGRES_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if os.Getenv("OPENWORKFLOW_SKIP_POSTGRES") == "1" {
			t.Skipf("postgres unreachable: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // after the schema is dropped: cleanups run last-in first-out
	u := id.New("")
	schema := prefix + strings.ToLower(u[len(u)-10:]) // the ULID's random end: tests in parallel start in the same millisecond
	t.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+quoteIdent(schema)+" CASCADE"); err != nil {
			t.Errorf("drop scratch schema %s: %v", schema, err)
		}
	})
	return pool, schema
}

// texts is a text[] argument: each string, "" as NULL.
func texts(s ...string) []*string {
	out := make([]*string, len(s))
	for i := range s {
		if s[i] != "" {
			out[i] = &s[i]
		}
	}
	return out
}

// migratedSchema is scratchSchema with the backend's migrations applied.
func migratedSchema(t testing.TB, prefix string) (*pgxpool.Pool, string) {
	t.Helper()
	pool, schema := scratchSchema(t, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := Migrate(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	return pool, schema
}

// explainBuffers runs sql under EXPLAIN (ANALYZE, BUFFERS) in a transaction
// it rolls back, and returns the pages the statement read (shared hits and
// reads, its CTEs included) and the rows its top node returned; with
// generic, those of its generic plan (explainJSON).
func explainBuffers(t *testing.T, ctx context.Context, pool *pgxpool.Pool, sql string, args []any, generic bool) (pages, rows int) {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	out := explainJSON(t, ctx, tx, sql, args, generic)
	var plans []struct {
		Plan struct {
			Hit  int     `json:"Shared Hit Blocks"`
			Read int     `json:"Shared Read Blocks"`
			Rows float64 `json:"Actual Rows"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("EXPLAIN output %s: %v", out, err)
	}
	p := plans[0].Plan
	return p.Hit + p.Read, int(p.Rows)
}

// TestPlanKeepsAStepsWritesInOrder checks planStatements: an insert of a
// step attempt that an earlier write of the batch finished is not moved
// ahead of that write into the batch's multi-row insert.
func TestPlanKeepsAStepsWritesInOrder(t *testing.T) {
	b := &Backend{q: mustLoadQueries(t, DefaultSchema), namespace: "n"}
	step := func(id string, st backend.StepStatus) *backend.StepAttempt {
		return &backend.StepAttempt{ID: id, StepName: id, Kind: backend.StepFunction, Status: st, Output: json.RawMessage(`1`)}
	}
	var items []batchItem
	for i, w := range []backend.Write{
		{Kind: backend.WriteFinishStep, WorkflowRunID: "r1", WorkerID: "w", Step: step("s1", backend.StepCompleted)},
		{Kind: backend.WriteInsertStep, WorkflowRunID: "r2", WorkerID: "w", Step: step("s2", backend.StepCompleted)},
		{Kind: backend.WriteInsertStep, WorkflowRunID: "r1", WorkerID: "w", Step: step("s1", backend.StepCompleted)},
		{Kind: backend.WriteInsertStep, WorkflowRunID: "r3", WorkerID: "w", Step: step("s3", backend.StepCompleted)},
	} {
		it, err := b.prepareWrite(w)
		if err != nil {
			t.Fatal(err)
		}
		it.g = i
		items = append(items, it)
	}
	var order [][]int
	for _, st := range b.planStatements(items) {
		order = append(order, st.ks)
	}
	want := [][]int{{0}, {1, 3}, {2}}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("statements cover writes %v, want %v (the finish of s1, the other inserts together, then s1's insert in place)", order, want)
	}
}

// TestPlanSendsAWaveOfWakeUpsStepsAsOneStatement checks planStatements
// on the batch of runs woken from their sleeps: each completes its sleep,
// records its next step and completes its run. The step completions and
// inserts go as one write_steps statement at the place of the first, the
// run completions as one complete_runs at the place of the last.
func TestPlanSendsAWaveOfWakeUpsStepsAsOneStatement(t *testing.T) {
	b := &Backend{q: mustLoadQueries(t, DefaultSchema), namespace: "n"}
	step := func(id string, kind backend.StepKind) *backend.StepAttempt {
		return &backend.StepAttempt{ID: id, StepName: id, Kind: kind, Status: backend.StepCompleted, Output: json.RawMessage(`1`)}
	}
	var items []batchItem
	for g, run := range []string{"r1", "r2", "r3"} {
		for _, w := range []backend.Write{
			{Kind: backend.WriteFinishStep, WorkflowRunID: run, WorkerID: "w", Step: step("sleep-"+run, backend.StepSleep)},
			{Kind: backend.WriteInsertStep, WorkflowRunID: run, WorkerID: "w", Step: step("next-"+run, backend.StepFunction)},
			{Kind: backend.WriteCompleteRun, WorkflowRunID: run, WorkerID: "w", Output: json.RawMessage(`1`)},
		} {
			it, err := b.prepareWrite(w)
			if err != nil {
				t.Fatal(err)
			}
			it.g = g
			items = append(items, it)
		}
	}
	stmts := b.planStatements(items)
	var got []string
	for _, st := range stmts {
		got = append(got, fmt.Sprint(st.ks))
	}
	if want := []string{"[1 4 7 0 3 6]", "[2 5 8]"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("statements cover writes %v, want %v (the steps' writes together, then the completions)", got, want)
	}
	if stmts[0].sql != b.q.WriteSteps || stmts[1].sql != b.q.CompleteRuns {
		t.Fatalf("the statements are not write_steps and complete_runs")
	}
}

// TestClaimOrderIsIndexed checks the plans of the claim's statements
// (claim.sql's claim_candidates: priority, then due time, for pending,
// handed-back and woken runs alike) with 100,000 live runs, before any
// ANALYZE and after one, each planned for its arguments and as a generic
// plan: every candidate part reads an index in claim
// order and stops at the claim's size, so no node sorts more than a few
// times the claim's size (the merge of the parts), none reads
// workflow_runs sequentially, and the statement reads a few hundred pages
// at most. A claim that sorted the due backlog would sort 50,000 rows.
func TestClaimOrderIsIndexed(t *testing.T) {
	const n = 10
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool, schema := migratedSchema(t, "ow_claimplan_")
	// 50,000 pending runs due (priority 0); 20,000 running under a lease;
	// 20,000 parked until tomorrow; 9,000 handed back, due (running, no
	// worker); 500 parked runs of priority 5 due tomorrow (not due: the
	// priority part skips them in the index); 10 woken runs of priority 10,
	// due; 490 pending runs of priority -1, due.
	if _, err := pool.Exec(ctx, withSchema(`
ALTER TABLE {{schema}}."workflow_runs" SET (autovacuum_enabled = false);
INSERT INTO {{schema}}."workflow_runs" (
  "namespace_id", "id", "workflow_name", "status", "config", "attempts", "worker_id",
  "available_at", "started_at", "created_at", "updated_at", "go_priority")
SELECT 'n', 'r' || lpad(g::text, 6, '0'), 'wf-' || (g % 7), s.status, '{}'::jsonb, s.attempts, s.worker,
  s.at, CASE WHEN s.status = 'pending' THEN NULL ELSE NOW() END, NOW() - INTERVAL '2 hours' + g * INTERVAL '1 millisecond', NOW(), s.priority
FROM generate_series(1, 100000) AS g
CROSS JOIN LATERAL (SELECT
  CASE WHEN g <= 50000 OR g > 99500 THEN 'pending' ELSE 'running' END AS status,
  CASE WHEN g <= 50000 OR g > 99500 THEN 0 ELSE 1 END AS attempts,
  CASE WHEN g > 50000 AND g <= 70000 THEN 'w' || g END AS worker,
  CASE WHEN g > 50000 AND g <= 70000 THEN NOW() + INTERVAL '1 hour'
       WHEN g > 70000 AND g <= 90000 THEN NOW() + INTERVAL '1 day'
       WHEN g > 99000 AND g <= 99490 THEN NOW() + INTERVAL '1 day'
       ELSE NOW() - INTERVAL '1 hour' + g * INTERVAL '1 millisecond' END AS at,
  CASE WHEN g > 99000 AND g <= 99490 THEN 5 WHEN g > 99490 AND g <= 99500 THEN 10 WHEN g > 99500 THEN -1 ELSE 0 END AS priority
) AS s`, schema)); err != nil {
		t.Fatal(err)
	}
	// And 20,000 runs waiting under fair shares (go migration 22): 100
	// keys, due, passes 1,000 apart per key; and 100 due tomorrow.
	if _, err := pool.Exec(ctx, withSchema(`
INSERT INTO {{schema}}."workflow_runs" (
  "namespace_id", "id", "workflow_name", "status", "config", "attempts",
  "available_at", "created_at", "updated_at", "go_fair_key", "go_fair_weight", "go_fair_pass", "go_fair_due_at")
SELECT 'n', 'f' || lpad(g::text, 6, '0'), 'wf-' || (g % 7), 'pending', '{}'::jsonb, 0,
  NULL, NOW() - INTERVAL '1 hour' + g * INTERVAL '1 millisecond', NOW(), 'tenant-' || (g % 100), 1, 1000 * (1 + g / 100),
  CASE WHEN g <= 20000 THEN NOW() - INTERVAL '1 hour' ELSE NOW() + INTERVAL '1 day' END
FROM generate_series(1, 20100) AS g`, schema)); err != nil {
		t.Fatal(err)
	}
	q := mustLoadQueries(t, schema)
	workers := make([]string, n)
	for i := range workers {
		workers[i] = fmt.Sprint("x", i)
	}
	var noClock *time.Time
	cases := []struct {
		name string
		sql  string
		args []any
		rows int
	}{
		{"claim", q.ClaimRuns, []any{"n", workers, int64(60000), []string(nil), []*string(nil), int64(0), noClock}, n},
		{"claim with a lookahead", q.ClaimRuns, []any{"n", workers, int64(60000), []string(nil), []*string(nil), int64(5000), noClock}, n},
		// n runs without fairness and n of the fair queue, for the worker
		// to choose n among (backend.PlanClaim).
		{"claim candidates, locked", q.ClaimCandidatesLocked, []any{"n", n, []string(nil), []*string(nil), int64(0), []string(nil), noClock}, 2 * n},
		{"admitting claim", q.ClaimAdmitting, []any{"n", workers, int64(60000), []string(nil), []*string(nil), int64(0), []string(nil),
			[]string{"limited"}, []string{"wf-3"}, []int32{2}, int64(23), noClock}, n},
	}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := pool.Exec(ctx, withSchema(`ANALYZE {{schema}}."workflow_runs"`, schema)); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range cases {
			for _, generic := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s, analyzed %v, generic %v", c.name, analyzed, generic), func(t *testing.T) {
					plan := explainPlan(t, ctx, pool, c.sql, c.args, generic)
					var sorted, seq []string
					var pages int
					indexes := map[string]bool{}
					walkPlan(plan, func(node map[string]any) {
						rows, _ := node["Actual Rows"].(float64)
						if name, ok := node["Index Name"].(string); ok {
							indexes[name] = true
						}
						switch node["Node Type"] {
						case "Sort", "Incremental Sort":
							if rows > 4*n {
								sorted = append(sorted, fmt.Sprintf("%s of %v rows (%v)", node["Node Type"], rows, node["Sort Key"]))
							}
						case "Seq Scan", "Bitmap Heap Scan":
							if node["Relation Name"] == "workflow_runs" {
								seq = append(seq, fmt.Sprintf("%s of workflow_runs (%v rows)", node["Node Type"], rows))
							}
						}
					})
					hit, _ := plan["Shared Hit Blocks"].(float64)
					read, _ := plan["Shared Read Blocks"].(float64)
					pages = int(hit + read)
					rows, _ := plan["Actual Rows"].(float64)
					t.Logf("%d pages, %v rows", pages, rows)
					if int(rows) != c.rows {
						t.Errorf("the statement returned %v rows, want %d", rows, c.rows)
					}
					if len(sorted) > 0 || len(seq) > 0 {
						t.Errorf("the claim sorts or scans the backlog: %v %v", sorted, seq)
					}
					// About 30 pages per run claimed: its update inserts an entry
					// in each index of workflow_runs. Reading the backlog would
					// be thousands.
					if pages > 800 {
						t.Errorf("read %d pages for a claim of %d: it reads the backlog, not an index range", pages, n)
					}
					if !indexes["workflow_runs_go_claim_priority_idx"] || !indexes["workflow_runs_status_available_at_created_at_idx"] || !indexes["workflow_runs_go_fair_idx"] {
						t.Errorf("indexes read: %v; want the claim's priority index, OpenWorkflow's claim index and the fair queue's", indexes)
					}
				})
			}
		}
	}
	// And the order: the woken runs of priority 10 first, then the due
	// runs of priority 0 by due time (handed-back runs among pending ones).
	rows, err := pool.Query(ctx, q.ClaimRuns, "n", workers, int64(60000), []string(nil), []*string(nil), int64(0), noClock)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := pgx.CollectRows(rows, scanRun)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.ID)
	}
	want := []string{"r099491", "r099492", "r099493", "r099494", "r099495", "r099496", "r099497", "r099498", "r099499", "r099500"}
	if !slices.Equal(got, want) {
		t.Errorf("claimed %v, want the ten woken runs of priority 10 %v", got, want)
	}
}

// explainPlan runs sql under EXPLAIN (ANALYZE, BUFFERS) in a transaction
// it rolls back and returns the top node of its plan; as a generic plan
// with generic (see explainBuffers).
func explainPlan(t *testing.T, ctx context.Context, pool *pgxpool.Pool, sql string, args []any, generic bool) map[string]any {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	out := explainJSON(t, ctx, tx, sql, args, generic)
	var plans []struct {
		Plan map[string]any `json:"Plan"`
	}
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("EXPLAIN output %s: %v", out, err)
	}
	return plans[0].Plan
}

// explainJSON returns EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of sql run
// in tx with args; with generic, of its generic plan: the plan, made
// without its parameters' values, that PostgreSQL may run a prepared
// statement with from its sixth execution (plan_cache_mode auto), as
// every statement of the pool is (pgx prepares and caches them).
func explainJSON(t *testing.T, ctx context.Context, tx pgx.Tx, sql string, args []any, generic bool) []byte {
	t.Helper()
	var out []byte
	if !generic {
		if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+sql, args...).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Prepare(ctx, "explained", sql); err != nil {
		t.Fatal(err)
	}
	// A prepared statement outlives the transaction, and the connection
	// goes back to the pool.
	defer func() { _ = tx.Conn().Deallocate(ctx, "explained") }()
	// EXECUTE takes no protocol parameters, so pgx writes the arguments
	// into its text as literals (the simple protocol).
	marks := make([]string, len(args))
	for i := range marks {
		marks[i] = fmt.Sprint("$", i+1)
	}
	q := "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE explained(" + strings.Join(marks, ", ") + ")"
	if err := tx.QueryRow(ctx, q, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...).Scan(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// walkPlan calls f on node and every node below it.
func walkPlan(node map[string]any, f func(map[string]any)) {
	f(node)
	children, _ := node["Plans"].([]any)
	for _, c := range children {
		if m, ok := c.(map[string]any); ok {
			walkPlan(m, f)
		}
	}
}
