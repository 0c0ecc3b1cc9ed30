package interop

import (
	"context"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// Runs a Go client starts as a singleton queue are held out of the TS
// claim's reach (available_at NULL) until the key's active run ends; a
// TypeScript worker ending that run releases the next (go migration 21's
// trigger fires on its UPDATE too), so a TypeScript worker executes the
// key's runs one at a time, in start order, and cannot strand the queue.
//
// One at a time is checked on the database's own order of the writes: a
// test trigger (in a schema of this test's own) logs each change of a
// run's status with clock_timestamp(), taken as the row is written, after
// the writing statement's snapshot. A claim that saw the previous run's
// end logs a later time than that end; a claim while it still ran, an
// earlier one. started_at and finished_at cannot tell: they are NOW(), the
// start of each transaction, which OpenWorkflow's claim begins when its
// Parse message arrives, before its snapshot; CI saw a claim that found
// the next run released carry a started_at 2.2 ms before the end that
// released it.
func TestTypeScriptWorkerExecutesASingletonQueueOneAtATime(t *testing.T) {
	setup(t)
	schema := newSchema(t)
	migrateGo(t, schema)
	_, err := pool.Exec(context.Background(), strings.ReplaceAll(`
CREATE TABLE "S"."test_status_log" ("run_id" TEXT NOT NULL, "status" TEXT NOT NULL, "at" TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION "S"."test_log_status"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "S"."test_status_log" ("run_id", "status") VALUES (NEW."id", NEW."status");
  RETURN NULL;
END
$$;
CREATE TRIGGER "test_log_status" AFTER UPDATE OF "status" ON "S"."workflow_runs"
FOR EACH ROW WHEN (OLD."status" IS DISTINCT FROM NEW."status")
EXECUTE FUNCTION "S"."test_log_status"()`, `"S"`, `"`+schema+`"`))
	must(t, err)
	e := newEnvIn(t, schema, randomName("singleton-"))
	ctx := contextWithTimeout(t, time.Minute)
	spec := ow.Spec{Name: "singleton-echo"}
	wf := goEcho(spec)
	var handles []*ow.Handle[echoOut]
	for i := range 3 {
		h, err := wf.Start(ctx, e.client, echoIn{N: i}, ow.WithSingleton("k", ow.SingletonQueue))
		must(t, err)
		if held := h.Run.AvailableAt == nil; held != (i > 0) {
			t.Fatalf("run %d: available at %v; want only the first due", i, h.Run.AvailableAt)
		}
		handles = append(handles, h)
	}
	ts := e.ts()
	var first *tsRun
	ts.call("claim", map[string]any{"workerId": "ts-claimer", "leaseMs": 1000}, &first)
	if first == nil || first.ID != handles[0].ID {
		t.Fatalf("the TS claim took %+v, want the key's first run %s", first, handles[0].ID)
	}
	var none *tsRun
	ts.call("claim", map[string]any{"workerId": "ts-claimer", "leaseMs": 1000}, &none)
	if none != nil {
		t.Fatalf("the TS claim took run %s, which is held behind the key's active run", none.ID)
	}
	// The claimer's lease lapses; a TypeScript worker takes the first run
	// over, completes it, and so releases the next, and so on.
	ts.startWorker(4, tsWorkflow{Name: spec.Name, Kind: "echo"})
	for i, h := range handles {
		out := result(t, h, 30*time.Second)
		if out.By != "ts" {
			t.Errorf("run %d executed by %s, want ts", i, out.By)
		}
	}
	// When each run was first claimed (pending to running) and when it
	// ended, in the database's order.
	at := func(id, status string) time.Time {
		t.Helper()
		var ts *time.Time
		must(t, pool.QueryRow(ctx, `SELECT min("at") FROM "`+schema+`"."test_status_log" WHERE "run_id" = $1 AND "status" = $2`, id, status).Scan(&ts))
		if ts == nil {
			t.Fatalf("run %s was never %s", id, status)
		}
		return *ts
	}
	for i := 1; i < len(handles); i++ {
		claimed, prevEnded := at(handles[i].ID, "running"), at(handles[i-1].ID, "completed")
		if !claimed.After(prevEnded) {
			t.Errorf("run %d was claimed at %v, before run %d ended at %v: two runs of the key were active at once", i, claimed, i-1, prevEnded)
		}
	}
}
