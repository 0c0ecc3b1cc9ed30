package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// msISO is JavaScript's Date.toISOString(): UTC, exactly 3 fraction digits.
var msISO = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// assertWaitContext checks a wait attempt's context JSON is exactly the
// OpenWorkflow shape of its kind, with millisecond ISO timestamps.
func assertWaitContext(t *testing.T, raw json.RawMessage, kind string, fromTS bool) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s context %s: %v", kind, raw, err)
	}
	want := map[string][]string{
		"sleep":       {"kind", "resumeAt"},
		"workflow":    {"kind", "timeoutAt"},
		"signal-wait": {"kind", "signal", "timeoutAt"},
	}[kind]
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	side := map[bool]string{true: "TS", false: "Go"}[fromTS]
	if !reflect.DeepEqual(keys, want) || m["kind"] != kind {
		t.Errorf("%s-written %s context %s: keys %v, want %v", side, kind, raw, keys, want)
	}
	for _, k := range []string{"resumeAt", "timeoutAt"} {
		if v, ok := m[k]; ok {
			s, _ := v.(string)
			if !msISO.MatchString(s) {
				t.Errorf("%s-written %s context %s: %s %v is not a millisecond ISO-8601 UTC string", side, kind, raw, k, v)
			}
		}
	}
}

// Every created_at either SDK writes is truncated to milliseconds (list
// cursors depend on it). TypeScript writes its other timestamps (updated_at,
// started_at, finished_at, leases) with PostgreSQL's microseconds; Go reads
// them as they are.
func TestTimestampsHaveMillisecondCreatedAt(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	ts.startWorker(1, tsWorkflow{Name: "ts-steps", Kind: "step-echo"})
	var run tsRun
	ts.call("start", map[string]any{"name": "ts-steps", "input": map[string]any{"value": 1}}, &run)
	ts.resultOf(run.ID, 20*time.Second)
	ts.stopWorker()
	e.goWorker(goEcho(ow.Spec{Name: "go-echo"}))
	h, err := goEcho(ow.Spec{Name: "go-echo"}).Start(context.Background(), e.client, echoIn{})
	must(t, err)
	result(t, h, 10*time.Second)

	var subMs int
	must(t, pool.QueryRow(context.Background(), `
SELECT count(*) FROM (
  SELECT "created_at" FROM `+table("workflow_runs")+` WHERE "namespace_id" = $1
  UNION ALL
  SELECT "created_at" FROM `+table("step_attempts")+` WHERE "namespace_id" = $1
) t WHERE extract(microseconds FROM "created_at")::bigint % 1000 <> 0`, e.ns).Scan(&subMs))
	if subMs != 0 {
		t.Errorf("%d created_at values have sub-millisecond digits", subMs)
	}
	var goSub int
	must(t, pool.QueryRow(context.Background(), `
SELECT count(*) FROM `+table("workflow_runs")+`
WHERE "namespace_id" = $1 AND "id" = $2
  AND (extract(microseconds FROM "updated_at")::bigint % 1000 <> 0
    OR extract(microseconds FROM "started_at")::bigint % 1000 <> 0
    OR extract(microseconds FROM "finished_at")::bigint % 1000 <> 0)`, e.ns, h.ID).Scan(&goSub))
	if goSub != 0 {
		t.Errorf("the Go-written run has sub-millisecond timestamps")
	}
	r := e.run(run.ID)
	if r.CreatedAt.IsZero() || r.FinishedAt == nil || r.StartedAt == nil {
		t.Errorf("Go reads the TS run's times as %+v", r)
	}
}

// The claim orders of the two SDKs. TypeScript's claim takes pending runs
// first, then by available_at, then created_at. Go's claims every due run
// by priority, then by the time it became due (available_at), created_at
// and id, pending or not (issue 19: a run handed back after an outage, or
// woken, keeps its place ahead of the runs that became due after it).
// With every run of priority 0 and every due run pending, the two are the
// same; a TypeScript worker in the namespace still takes pending runs
// before due running ones, as it always did.
func TestClaimOrdersOfBothSDKs(t *testing.T) {
	setup(t)
	base := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	// name, status to force, available_at offset
	layout := []struct {
		name   string
		status string
		at     time.Duration
	}{
		{"p3", "pending", 30 * time.Second},
		{"r1", "running", 1 * time.Second}, // an expired lease
		{"p1", "pending", 10 * time.Second},
		{"s1", "sleeping", 2 * time.Second}, // legacy parked
		{"p2", "pending", 20 * time.Second},
		{"future", "pending", 2 * time.Minute}, // not yet claimable
	}
	wantTS := []string{"p1", "p2", "p3", "r1", "s1"}
	wantGo := []string{"r1", "s1", "p1", "p2", "p3"}
	seed := func(e *env) {
		for _, l := range layout {
			at := base.Add(l.at)
			h, err := e.client.StartByName(context.Background(), l.name, "", nil, ow.WithStartAt(at))
			must(t, err)
			_, err = pool.Exec(context.Background(), `UPDATE `+table("workflow_runs")+` SET "status" = $3 WHERE "namespace_id" = $1 AND "id" = $2`, e.ns, h.ID, l.status)
			must(t, err)
		}
	}

	eTS := newEnv(t)
	seed(eTS)
	ts := eTS.ts()
	var tsOrder []string
	for range layout {
		var r *tsRun
		ts.call("claim", map[string]any{"workerId": "ts-claimer", "leaseMs": 60000}, &r)
		if r == nil {
			break
		}
		tsOrder = append(tsOrder, r.WorkflowName)
	}

	eGo := newEnv(t)
	seed(eGo)
	var goOrder []string
	for range layout {
		runs, err := eGo.b.ClaimWorkflowRuns(context.Background(), backend.ClaimWorkflowRunsParams{WorkerIDs: []string{"go-claimer"}, LeaseDuration: time.Minute})
		must(t, err)
		if len(runs) == 0 {
			break
		}
		goOrder = append(goOrder, runs[0].WorkflowName)
	}
	if !reflect.DeepEqual(tsOrder, wantTS) || !reflect.DeepEqual(goOrder, wantGo) {
		t.Errorf("claim order: TS %v, Go %v; want TS %v (pending first), Go %v (by due time)", tsOrder, goOrder, wantTS, wantGo)
	}
}

// Keyed creates: both SDKs return the oldest run with the key created
// within 24 hours, whatever its version or status, and serialize on the same
// advisory lock, pg_advisory_xact_lock(hashtextextended(JSON.stringify(
// {namespaceId, workflowName, idempotencyKey}), 0)).
func TestIdempotencyKeysAreSharedAcrossSDKs(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	ctx := context.Background()

	t.Run("a key used by one SDK returns the same run to the other", func(t *testing.T) {
		var first tsRun
		ts.call("create", map[string]any{"name": "keyed", "version": "v1", "idempotencyKey": "order-1"}, &first)
		h, err := e.client.StartByName(ctx, "keyed", "v2", nil, ow.WithIdempotencyKey("order-1"))
		must(t, err)
		if h.ID != first.ID {
			t.Errorf("Go create with the TS key made run %s, want the TS run %s", h.ID, first.ID)
		}
		g, err := e.client.StartByName(ctx, "keyed", "", nil, ow.WithIdempotencyKey("order-2"))
		must(t, err)
		var again tsRun
		ts.call("create", map[string]any{"name": "keyed", "idempotencyKey": "order-2"}, &again)
		if again.ID != g.ID {
			t.Errorf("TS create with the Go key made run %s, want the Go run %s", again.ID, g.ID)
		}
	})

	t.Run("the window is 24 hours for both", func(t *testing.T) {
		h, err := e.client.StartByName(ctx, "keyed", "", nil, ow.WithIdempotencyKey("old"))
		must(t, err)
		_, err = pool.Exec(ctx, `UPDATE `+table("workflow_runs")+` SET "created_at" = "created_at" - INTERVAL '24 hours 1 second' WHERE "namespace_id" = $1 AND "id" = $2`, e.ns, h.ID)
		must(t, err)
		var fresh tsRun
		ts.call("create", map[string]any{"name": "keyed", "idempotencyKey": "old"}, &fresh)
		if fresh.ID == h.ID {
			t.Errorf("TS reused a run created more than 24 h ago")
		}
		g, err := e.client.StartByName(ctx, "keyed", "", nil, ow.WithIdempotencyKey("old"))
		must(t, err)
		if g.ID != fresh.ID {
			t.Errorf("Go create returned %s, want the run TS created in the window, %s", g.ID, fresh.ID)
		}
	})

	t.Run("Go waits on the advisory lock TypeScript takes", func(t *testing.T) {
		for _, key := range []string{"plain", `<a href="x">&é€ "q" \ ` + "\u2028\u2029\t\x01"} {
			var scope string
			ts.call("lockScope", map[string]any{"name": "keyed", "idempotencyKey": key}, &scope)
			tx, err := pool.Begin(ctx)
			must(t, err)
			_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0::bigint))`, scope)
			must(t, err)
			done := make(chan error, 1)
			go func() {
				_, err := e.client.StartByName(ctx, "keyed", "", nil, ow.WithIdempotencyKey(key))
				done <- err
			}()
			select {
			case err := <-done:
				t.Errorf("key %q: Go create returned (%v) while the TS lock %s was held", key, err, scope)
			case <-time.After(700 * time.Millisecond):
			}
			must(t, tx.Rollback(ctx))
			select {
			case err := <-done:
				must(t, err)
			case <-time.After(10 * time.Second):
				t.Fatalf("key %q: Go create still blocked after the lock was released", key)
			}
		}
	})

	t.Run("concurrent creates from both SDKs collapse to one run", func(t *testing.T) {
		ids := make(chan string, 20)
		var wg sync.WaitGroup
		for range 10 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				h, err := e.client.StartByName(ctx, "keyed", "", nil, ow.WithIdempotencyKey("race"))
				if err == nil {
					ids <- h.ID
				}
			}()
			go func() {
				defer wg.Done()
				var r tsRun
				if ts.callErr("create", map[string]any{"name": "keyed", "idempotencyKey": "race"}, &r) == nil {
					ids <- r.ID
				}
			}()
		}
		wg.Wait()
		close(ids)
		seen := map[string]bool{}
		n := 0
		for id := range ids {
			seen[id] = true
			n++
		}
		if n != 20 || len(seen) != 1 {
			t.Errorf("%d creates succeeded with %d distinct runs; want 20 and 1", n, len(seen))
		}
	})
}

// A Go worker (by default) claims only runs of workflows it
// registered: runs of a TypeScript-only workflow in the same namespace stay
// for the TypeScript workers.
func TestGoWorkerLeavesRunsOfUnregisteredWorkflowsAlone(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	e.goWorker(goEcho(ow.Spec{Name: "go-only"}))

	var run tsRun
	ts.call("start", map[string]any{"name": "ts-only", "input": nil}, &run)
	time.Sleep(1500 * time.Millisecond) // several Go polls, and the NOTIFY of nothing
	r := e.run(run.ID)
	if r.Attempts != 0 || r.Status != backend.RunPending || r.Error != nil {
		t.Errorf("the Go worker claimed TS-only run %s: status %s, attempts %d, error %s, available at %v",
			run.ID, r.Status, r.Attempts, r.Error, r.AvailableAt)
	}
}

// JSON values cross the SDKs unchanged, including strings starting with
// U+0001 (which the Go PostgreSQL backend uses as its escape mark for
// strings jsonb cannot hold).
func TestJSONValuesRoundTripAcrossSDKs(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	ts.startWorker(1, tsWorkflow{Name: "ts-step-echo", Kind: "step-echo"})
	value := map[string]any{"mark": "\x01abc", "unicode": "é€😀\u2028", "empty": "", "nested": []any{nil, true, 1.5, "x"}}
	var run tsRun
	ts.call("start", map[string]any{"name": "ts-step-echo", "input": map[string]any{"value": value}}, &run)
	raw := ts.resultOf(run.ID, 20*time.Second)
	want, _ := json.Marshal(map[string]any{"value": value})
	if !jsonEq(raw, want) {
		t.Fatalf("TS echo returned %s, want %s", raw, want)
	}
	if got := e.run(run.ID).Output; !jsonEq(got, want) {
		t.Errorf("Go reads the TS-written output as %s, want %s", got, want)
	}
	step := e.steps(run.ID)[0]
	if !jsonEq(step.Output, mustJSON(value)) {
		t.Errorf("Go reads the TS-written step output as %s, want %s", step.Output, mustJSON(value))
	}

	h, err := e.client.StartByName(context.Background(), "ts-step-echo", "", map[string]any{"value": value})
	must(t, err)
	var seen tsRun
	ts.call("get", map[string]any{"id": h.ID}, &seen)
	if !jsonEq(seen.Input, want) {
		t.Errorf("TS reads the Go-written input as %s, want %s", seen.Input, want)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Integers beyond 2^53 survive in Go and in PostgreSQL but not through
// TypeScript, whose JSON numbers are doubles: a documented limit, not a
// bug of either SDK.
func TestBigIntegersLosePrecisionInTypeScript(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	ts.startWorker(1, tsWorkflow{Name: "ts-step-echo", Kind: "step-echo"})
	h, err := e.client.StartByName(context.Background(), "ts-step-echo", "", map[string]any{"value": json.Number("9007199254740993")})
	must(t, err)
	ctx := contextWithTimeout(t, 20*time.Second)
	raw, err := h.Result(ctx)
	must(t, err)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out struct{ Value json.Number }
	must(t, dec.Decode(&out))
	if out.Value != "9007199254740992" {
		t.Errorf("TS echo of 2^53+1 = %s; expected the double-rounded 9007199254740992", raw)
	}
}

// A trace context the TypeScript client records on a run
// (context = {"traceContext": {"traceparent": …}}) is kept by the Go
// worker that executes the run; Go itself records none.
func TestTSTraceContextOnRunsExecutedByGo(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := startTS(t, e.ns, tsOptions{Schema: e.schema, Trace: true})
	e.goWorker(goEcho(ow.Spec{Name: "traced"}))
	traceID, spanID := "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	var run tsRun
	ts.call("start", map[string]any{"name": "traced", "input": map[string]any{}, "trace": map[string]any{"traceId": traceID, "spanId": spanID}}, &run)
	want := `{"traceContext":{"traceparent":"00-` + traceID + `-` + spanID + `-01"}}`
	if !jsonEq(run.Context, []byte(want)) {
		t.Errorf("TS run context %s, want %s", run.Context, want)
	}
	ts.resultOf(run.ID, 20*time.Second)
	if got := e.run(run.ID).Context; !jsonEq(got, []byte(want)) {
		t.Errorf("after the Go worker ran it, context is %s, want %s", got, want)
	}
	h, err := goEcho(ow.Spec{Name: "traced"}).Start(context.Background(), e.client, echoIn{})
	must(t, err)
	if c := e.run(h.ID).Context; c != nil {
		t.Errorf("Go-created run context %s, want NULL", c)
	}
}
