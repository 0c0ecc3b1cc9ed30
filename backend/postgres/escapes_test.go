package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// The strings the property tests build from: U+0000 and U+0001 (what the
// escape uses), the digits that follow U+0001 in an escaped string, the
// neighbours of the surrogate range, the last code points, emoji (a
// surrogate pair in JavaScript), JSON's escaped characters, and whole
// escaped forms (U+0001 U+0001 '0' is the escaped form of "\u0000").
var stringPieces = []string{
	"\x00", "\x01", "0", "1", "a", "é", "\"", "\\", "\n", "\x1f", "\x7f",
	"\ud7ff", "\ue000", "\ufffd", "\uffff", "\U00010000", "\U0001f600", "\U0010ffff", "\u2028",
	"\x01\x010", "\x010", "\x011", "\x01\x011", `\u0000`,
}

// randomString joins 0–5 random pieces; without NUL when noNUL.
func randomString(r *rand.Rand, noNUL bool) string {
	var sb strings.Builder
	for range r.IntN(6) {
		p := stringPieces[r.IntN(len(stringPieces))]
		if noNUL {
			p = strings.ReplaceAll(p, "\x00", "")
		}
		sb.WriteString(p)
	}
	return sb.String()
}

// randomValue is a JSON value with random strings as values and keys.
func randomValue(r *rand.Rand, noNUL bool) json.RawMessage {
	s := func() string { return randomString(r, noNUL) }
	v := map[string]any{
		"s":  s(),
		s():  []any{s(), map[string]any{"k": s(), s(): 1.5}, s()},
		"n":  12345678901234567890.0,
		"nu": nil,
	}
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// tsView is what an SDK that reads the columns as stored (the TypeScript
// SDK) sees of a value Go wrote, by the rule docs/interop.md states: the
// value as is, unless it holds U+0000; then each string (or key) holding
// U+0000 or starting with U+0001 reads as U+0001 followed by the string
// with U+0001 → U+0001 '1' and U+0000 → U+0001 '0'. (An implementation of
// its own, not the backend's.)
func tsView(raw json.RawMessage) any {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		panic(err)
	}
	if !holdsNUL(v) {
		return v
	}
	var esc func(any) any
	escStr := func(s string) string {
		if !strings.Contains(s, "\x00") && !strings.HasPrefix(s, "\x01") {
			return s
		}
		return "\x01" + strings.NewReplacer("\x01", "\x011", "\x00", "\x010").Replace(s)
	}
	esc = func(v any) any {
		switch v := v.(type) {
		case string:
			return escStr(v)
		case []any:
			out := make([]any, len(v))
			for i, e := range v {
				out[i] = esc(e)
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, e := range v {
				out[escStr(k)] = esc(e)
			}
			return out
		}
		return v
	}
	return esc(v)
}

func holdsNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, "\x00")
	case []any:
		for _, e := range v {
			if holdsNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if holdsNUL(k) || holdsNUL(e) {
				return true
			}
		}
	}
	return false
}

// sameJSON fails the test unless got holds the value want, exactly (the
// strings compared character for character).
func sameJSON(t *testing.T, what string, got json.RawMessage, want any) {
	t.Helper()
	var g any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %s is not JSON: %v", what, got, err)
	}
	if w, ok := want.(json.RawMessage); ok {
		if err := json.Unmarshal(w, &want); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("%s = %s\nwant %s", what, strconv.Quote(string(got)), strconv.Quote(fmt.Sprint(want)))
	}
}

// propertySeed is OPENWORKFLOW_PROPERTY_SEED, or the clock; logged so a
// failure can be replayed.
func propertySeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("OPENWORKFLOW_PROPERTY_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("OPENWORKFLOW_PROPERTY_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (OPENWORKFLOW_PROPERTY_SEED=%d replays it)", seed, seed)
	return seed
}

// storedText reads a JSON column as another SDK does: the jsonb value as
// PostgreSQL renders it.
func storedText(t *testing.T, tbl, column, ns, id string) json.RawMessage {
	t.Helper()
	var raw []byte
	q := fmt.Sprintf(`SELECT %q::text FROM %s WHERE namespace_id = $1 AND id = $2`, column, table(tbl))
	if err := requirePool(t).QueryRow(context.Background(), q, ns, id).Scan(&raw); err != nil {
		t.Fatalf("read %s.%s of %s: %v", tbl, column, id, err)
	}
	return raw
}

// Values written by Go — through every write path — read back identical
// through every Go read path, and another SDK reading the columns sees
// them as they are, or, for a value holding U+0000, in the documented
// escaped form.
func TestPropertyGoWrittenValuesReadBackIdentical(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(propertySeed(t), 1))
	b := newBackend(t)
	ctx := context.Background()
	ns := b.NamespaceID()
	for trial := range 40 {
		v := randomValue(r, false)
		w := "w-" + strconv.Itoa(trial)

		// CreateWorkflowRun, read by Get, List and the claim.
		run, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "prop", Input: v})
		must1(t, err)
		sameJSON(t, "CreateWorkflowRun's run input", run.Input, v)
		sameJSON(t, "GetWorkflowRun input", getRun(t, b, run.ID).Input, v)
		sameJSON(t, "stored input as another SDK reads it", storedText(t, "workflow_runs", "input", ns, run.ID), tsView(v))
		page, err := b.ListWorkflowRuns(ctx, backend.ListWorkflowRunsParams{Limit: 1})
		must1(t, err)
		sameJSON(t, "ListWorkflowRuns input", page.Data[0].Input, v)
		claimed := claim(t, b, time.Minute, w)
		if len(claimed) != 1 || claimed[0].ID != run.ID {
			t.Fatalf("claimed %v, want run %s", claimed, run.ID)
		}
		sameJSON(t, "claimed run's input", claimed[0].Input, v)

		// Single step writes, read by Get, List and the histories.
		step, err := backendtest.Single(b).CreateStepAttempt(ctx, backendtest.CreateStepAttemptParams{WorkflowRunID: run.ID, WorkerID: w,
			StepName: "s", Kind: backend.StepFunction, Context: v})
		must1(t, err)
		sameJSON(t, "CreateStepAttempt's context", step.Context, v)
		done, err := backendtest.Single(b).CompleteStepAttempt(ctx, backendtest.CompleteStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: w, Output: v})
		must1(t, err)
		sameJSON(t, "CompleteStepAttempt's output", done.Output, v)
		failing, err := backendtest.Single(b).CreateStepAttempt(ctx, backendtest.CreateStepAttemptParams{WorkflowRunID: run.ID, WorkerID: w, StepName: "f", Kind: backend.StepFunction})
		must1(t, err)
		_, err = backendtest.Single(b).FailStepAttempt(ctx, backendtest.FailStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: failing.ID, WorkerID: w, Error: v})
		must1(t, err)

		// Batch writes: a step inserted completed and one finished, then
		// the run's completion, in one ApplyWrites.
		now := time.Now()
		batched := &backend.StepAttempt{ID: "step_prop_" + strconv.Itoa(trial) + "_" + ns, StepName: "b", Kind: backend.StepFunction,
			Status: backend.StepCompleted, Output: v, Context: v, StartedAt: &now, FinishedAt: &now}
		errs := b.ApplyWrites(ctx, [][]backend.Write{{
			{Kind: backend.WriteInsertStep, WorkflowRunID: run.ID, WorkerID: w, Step: batched},
			{Kind: backend.WriteCompleteRun, WorkflowRunID: run.ID, WorkerID: w, Output: v},
		}})
		for _, err := range errs {
			must1(t, err)
		}
		sameJSON(t, "run output written by ApplyWrites", getRun(t, b, run.ID).Output, v)
		sameJSON(t, "stored output as another SDK reads it", storedText(t, "workflow_runs", "output", ns, run.ID), tsView(v))
		steps, err := b.ListStepAttempts(ctx, backend.ListStepAttemptsParams{WorkflowRunID: run.ID})
		must1(t, err)
		hist, err := b.ListStepHistories(ctx, []string{run.ID})
		must1(t, err)
		for _, list := range [][]backend.StepAttempt{steps.Data, hist[run.ID]} {
			if len(list) != 3 {
				t.Fatalf("%d step attempts, want 3", len(list))
			}
			for _, s := range list {
				switch s.StepName {
				case "s":
					sameJSON(t, "step context", s.Context, v)
					sameJSON(t, "step output", s.Output, v)
				case "f":
					sameJSON(t, "step error", s.Error, v)
				case "b":
					sameJSON(t, "batch-inserted step output", s.Output, v)
					sameJSON(t, "batch-inserted step context", s.Context, v)
				}
			}
		}
		got, err := b.GetStepAttempt(ctx, step.ID)
		must1(t, err)
		sameJSON(t, "GetStepAttempt output", got.Output, v)
		sameJSON(t, "stored step output as another SDK reads it", storedText(t, "step_attempts", "output", ns, step.ID), tsView(v))

		// CreateWorkflowRuns, keyed and not; a signal delivered.
		created, err := b.CreateWorkflowRuns(ctx, []backend.CreateWorkflowRunParams{
			{WorkflowName: "prop-many", Input: v}, {WorkflowName: "prop-many", Input: v, IdempotencyKey: &w},
		})
		must1(t, err)
		for _, c := range created {
			sameJSON(t, "CreateWorkflowRuns input read back", getRun(t, b, c.ID).Input, v)
		}
		unkeyed, err := b.CreateWorkflowRuns(ctx, []backend.CreateWorkflowRunParams{{WorkflowName: "prop-many", Input: v}})
		must1(t, err)
		sameJSON(t, "unkeyed CreateWorkflowRuns input read back", getRun(t, b, unkeyed[0].ID).Input, v)
		for _, c := range append(created, unkeyed...) {
			_, err := b.CancelWorkflowRun(ctx, c.ID) // out of the next claims' way
			must1(t, err)
		}
		waiter := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "prop-wait"})
		claim(t, b, time.Minute, w+"-wait")
		wait, err := backendtest.Single(b).CreateStepAttempt(ctx, backendtest.CreateStepAttemptParams{WorkflowRunID: waiter.ID, WorkerID: w + "-wait",
			StepName: "sig", Kind: backend.StepSignalWait, Context: json.RawMessage(`{"kind":"signal-wait","signal":"prop-` + w + `","timeoutAt":"2099-01-01T00:00:00.000Z"}`)})
		must1(t, err)
		_, err = b.SendSignal(ctx, backend.SendSignalParams{Signal: "prop-" + w, Data: v})
		must1(t, err)
		data, ok, err := b.GetSignalDelivery(ctx, wait.ID)
		if err != nil || !ok {
			t.Fatalf("GetSignalDelivery = %v, %v", ok, err)
		}
		sameJSON(t, "delivered signal data", data, v)
		_, err = b.CancelWorkflowRun(ctx, waiter.ID)
		must1(t, err)
	}
}

// Values written by another SDK — PostgreSQL accepts no U+0000 from it —
// read back identical in Go, whatever they look like: the escaped form of
// a Go value, or a write over a column holding a Go-escaped value.
func TestPropertyValuesWrittenByAnotherSDKReadBackIdentical(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(propertySeed(t), 2))
	b := newBackend(t)
	ctx := context.Background()
	pool := requirePool(t)
	ns := b.NamespaceID()
	// As the TypeScript SDK writes: its JSON text as a jsonb parameter.
	tsInsertRun := func(input json.RawMessage) string {
		var id string
		err := pool.QueryRow(ctx, `INSERT INTO `+table("workflow_runs")+` ("namespace_id", "id", "workflow_name", "status",
			"config", "input", "attempts", "available_at", "created_at", "updated_at")
			VALUES ($1, gen_random_uuid(), 'ts-prop', 'pending', '{}', $2::jsonb, 0, NOW(), NOW(), NOW()) RETURNING "id"`, ns, string(input)).Scan(&id)
		must1(t, err)
		return id
	}
	values := []json.RawMessage{
		json.RawMessage(`{"s":"\u0001\u00010"}`), // the escaped form of "\u0000", three characters
		json.RawMessage(`["\u0001", "\u00010", "\u00011", "\u0001\u0001"]`),
	}
	for range 60 {
		values = append(values, randomValue(r, true))
	}
	for i, v := range values {
		id := tsInsertRun(v)
		sameJSON(t, fmt.Sprintf("value %d: GetWorkflowRun input", i), getRun(t, b, id).Input, v)
		page, err := b.ListWorkflowRuns(ctx, backend.ListWorkflowRunsParams{Limit: 1})
		must1(t, err)
		sameJSON(t, "ListWorkflowRuns input", page.Data[0].Input, v)
		claimed := claim(t, b, time.Minute, "w")
		if len(claimed) != 1 || claimed[0].ID != id {
			t.Fatalf("claimed %v, want run %s", claimed, id)
		}
		sameJSON(t, "claimed run's input", claimed[0].Input, v)

		// A TypeScript write over a column Go stored escaped: a Go value
		// with U+0000 as error, then the other SDK's error.
		goValue := randomValue(r, false)
		goValue = json.RawMessage(`{"nul":"\u0000",` + string(goValue[1:]))
		failed, err := backendtest.Single(b).RescheduleWorkflowRunAfterFailedStepAttempt(ctx, backendtest.RescheduleWorkflowRunParams{
			WorkflowRunID: id, WorkerID: "w", Error: goValue, AvailableAt: time.Now().Add(time.Hour)})
		must1(t, err)
		sameJSON(t, "Go-written error", failed.Error, goValue)
		_, err = pool.Exec(ctx, `UPDATE `+table("workflow_runs")+` SET "error" = $3::jsonb WHERE namespace_id = $1 AND id = $2`, ns, id, string(v))
		must1(t, err)
		sameJSON(t, "error written by the other SDK over a Go-escaped one", getRun(t, b, id).Error, v)
		// Even the exact escaped form of a different Go value.
		escapedOther := storedTextOf(t, tsView(json.RawMessage(`{"x":"\u0000"}`)))
		_, err = pool.Exec(ctx, `UPDATE `+table("workflow_runs")+` SET "error" = $3::jsonb WHERE namespace_id = $1 AND id = $2`, ns, id, string(escapedOther))
		must1(t, err)
		sameJSON(t, "an escaped-looking error written by the other SDK", getRun(t, b, id).Error, escapedOther)

		// A step output and a signal the other SDK wrote.
		var stepID string
		must1(t, pool.QueryRow(ctx, `INSERT INTO `+table("step_attempts")+` ("namespace_id", "id", "workflow_run_id", "step_name", "kind",
			"status", "config", "output", "started_at", "finished_at", "created_at", "updated_at")
			VALUES ($1, gen_random_uuid(), $2, 'ts-step', 'function', 'completed', '{}', $3::jsonb, NOW(), NOW(), NOW(), NOW()) RETURNING "id"`,
			ns, id, string(v)).Scan(&stepID))
		steps, err := b.ListStepAttempts(ctx, backend.ListStepAttemptsParams{WorkflowRunID: id})
		must1(t, err)
		hist, err := b.ListStepHistories(ctx, []string{id})
		must1(t, err)
		if len(steps.Data) != 1 || len(hist[id]) != 1 {
			t.Fatalf("%d attempts listed, %d in the history; want 1", len(steps.Data), len(hist[id]))
		}
		sameJSON(t, "step output written by the other SDK", steps.Data[0].Output, v)
		sameJSON(t, "step output in the history", hist[id][0].Output, v)
		_, err = pool.Exec(ctx, `INSERT INTO `+table("workflow_signals")+` ("namespace_id", "id", "signal", "data", "workflow_run_id", "step_attempt_id", "created_at")
			VALUES ($1, gen_random_uuid(), 'ts-signal', $4::jsonb, $2, $3, NOW())`, ns, id, stepID, string(v))
		must1(t, err)
		data, ok, err := b.GetSignalDelivery(ctx, stepID)
		if err != nil || !ok {
			t.Fatalf("GetSignalDelivery = %v, %v", ok, err)
		}
		sameJSON(t, "signal data written by the other SDK", data, v)
		_, err = b.CancelWorkflowRun(ctx, id)
		must1(t, err)
	}
}

// A column rewritten with the very value Go stored there reads as Go's
// value: it holds exactly what Go wrote. And a schema whose go migration 3
// has not run (no record table) reads every value as stored.
func TestEscapedValueRecordEdges(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	ctx := context.Background()
	pool := requirePool(t)
	v := json.RawMessage(`{"a":"x\u0000y","b":"\u0001"}`)
	run := createRun(t, b, backend.CreateWorkflowRunParams{Input: v})
	_, err := pool.Exec(ctx, `UPDATE `+table("workflow_runs")+` SET "input" = "input"::text::jsonb WHERE namespace_id = $1 AND id = $2`, b.NamespaceID(), run.ID)
	must1(t, err)
	sameJSON(t, "input rewritten unchanged", getRun(t, b, run.ID).Input, v)

	schema := strings.ToLower("escedge_" + strconv.FormatInt(time.Now().UnixNano(), 36))
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`) })
	must1(t, postgres.Migrate(ctx, pool, schema))
	_, err = pool.Exec(ctx, `DROP TABLE "`+schema+`"."openworkflow_go_escaped_json"`)
	must1(t, err)
	old, err := postgres.FromPool(pool, postgres.Options{Schema: schema, NamespaceID: "n"})
	must1(t, err)
	stored := json.RawMessage(`{"s":"\u0001\u00010"}`)
	r, err := old.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf", Input: stored})
	must1(t, err)
	sameJSON(t, "input read from a schema without the record table", getRun(t, old, r.ID).Input, stored)
}

// storedTextOf renders a value as JSON text.
func storedTextOf(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	must1(t, err)
	return raw
}

func getRun(t *testing.T, b backend.Backend, id string) *backend.WorkflowRun {
	t.Helper()
	r, err := b.GetWorkflowRun(context.Background(), id)
	must1(t, err)
	return r
}

func must1(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
