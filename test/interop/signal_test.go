package interop

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

type sentIDs struct {
	WorkflowRunIDs []string `json:"workflowRunIds"`
}

// signalRow is one workflow_signals row.
type signalRow struct {
	ID, Signal, RunID, StepID string
	Data                      []byte
	Key                       *string
}

func (e *env) signalRows(signal string) []signalRow {
	e.t.Helper()
	rows, err := pool.Query(context.Background(), `
SELECT "id", "signal", "data", "sender_idempotency_key", "workflow_run_id", "step_attempt_id"
FROM `+table("workflow_signals")+` WHERE "namespace_id" = $1 AND "signal" = $2 ORDER BY "created_at"`, e.ns, signal)
	must(e.t, err)
	defer rows.Close()
	var out []signalRow
	for rows.Next() {
		var r signalRow
		must(e.t, rows.Scan(&r.ID, &r.Signal, &r.Data, &r.Key, &r.RunID, &r.StepID))
		out = append(out, r)
	}
	must(e.t, rows.Err())
	return out
}

// The TypeScript client's sendSignal wakes a Go workflow parked in
// WaitForSignal; the Go workflow gets the data.
func TestTSClientSignalWakesGoWait(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	e.goWorker(goWaitSignal("go-wait"))

	h, err := goWaitSignal("go-wait").Start(context.Background(), e.client, signalIn{Signal: "approve:1"})
	must(t, err)
	e.waitParked(h.ID, backend.StepSignalWait, 10*time.Second)
	wait := e.steps(h.ID)[0]
	assertWaitContext(t, wait.Context, "signal-wait", false)

	var sent sentIDs
	ts.call("signal", map[string]any{"signal": "approve:1", "data": map[string]any{"ok": true, "by": "ts"}, "idempotencyKey": "k1"}, &sent)
	if !reflect.DeepEqual(sent.WorkflowRunIDs, []string{h.ID}) {
		t.Errorf("TS sendSignal reached %v, want [%s]", sent.WorkflowRunIDs, h.ID)
	}
	out := result(t, h, 20*time.Second)
	if !out.Received || !reflect.DeepEqual(out.Got, map[string]any{"ok": true, "by": "ts"}) {
		t.Errorf("Go wait returned %+v", out)
	}
	rows := e.signalRows("approve:1")
	if len(rows) != 1 || !uuidPattern.MatchString(rows[0].ID) || rows[0].RunID != h.ID || rows[0].StepID != wait.ID ||
		rows[0].Key == nil || *rows[0].Key != "k1" || !jsonEq(rows[0].Data, []byte(`{"ok":true,"by":"ts"}`)) {
		t.Errorf("signal rows %+v", rows)
	}
	// A repeated keyed send from Go is deduplicated against the TS send.
	ids, err := e.client.SendSignal(context.Background(), "approve:1", "again", "k1")
	must(t, err)
	if !reflect.DeepEqual(ids, []string{h.ID}) || len(e.signalRows("approve:1")) != 1 {
		t.Errorf("Go resend with the TS key returned %v and left %d rows; want [%s] and 1", ids, len(e.signalRows("approve:1")), h.ID)
	}
}

// The Go client's SendSignal wakes a TypeScript workflow parked in
// step.waitForSignal.
func TestGoClientSignalWakesTSWait(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	ts.startWorker(1, tsWorkflow{Name: "ts-wait", Kind: "wait-signal"})

	var run tsRun
	ts.call("start", map[string]any{"name": "ts-wait", "input": map[string]any{"signal": "approve:2"}}, &run)
	e.waitParked(run.ID, backend.StepSignalWait, 20*time.Second)
	wait := e.steps(run.ID)[0]
	assertWaitContext(t, wait.Context, "signal-wait", true)

	ids, err := e.client.SendSignal(context.Background(), "approve:2", map[string]any{"ok": true, "by": "go"}, "")
	must(t, err)
	if !reflect.DeepEqual(ids, []string{run.ID}) {
		t.Errorf("Go SendSignal reached %v, want [%s]", ids, run.ID)
	}
	raw := ts.resultOf(run.ID, 30*time.Second)
	if !jsonEq(raw, []byte(`{"got":{"data":{"ok":true,"by":"go"}},"by":"ts"}`)) {
		t.Errorf("TS wait returned %s", raw)
	}
	var d struct {
		Delivered bool            `json:"delivered"`
		Data      json.RawMessage `json:"data"`
	}
	ts.call("getSignalDelivery", map[string]any{"stepAttemptId": wait.ID}, &d)
	if !d.Delivered || !jsonEq(d.Data, []byte(`{"ok":true,"by":"go"}`)) {
		t.Errorf("TS getSignalDelivery of the Go delivery = %+v", d)
	}
	rows := e.signalRows("approve:2")
	if len(rows) != 1 || !ulidPattern("sig").MatchString(rows[0].ID) || rows[0].Key != nil {
		t.Errorf("signal rows %+v", rows)
	}
}

// Durable sendSignal steps across SDKs: a Go workflow's SendSignal step
// wakes a TypeScript wait, and a TypeScript step.sendSignal wakes a Go
// wait. The workers take turns so neither claims the other's runs.
func TestSignalStepsCrossSDKs(t *testing.T) {
	setup(t)
	t.Run("a Go SendSignal step wakes a TS wait", func(t *testing.T) {
		e := newEnv(t)
		ts := e.ts()
		ts.startWorker(1, tsWorkflow{Name: "ts-wait", Kind: "wait-signal"})
		var waiter tsRun
		ts.call("start", map[string]any{"name": "ts-wait", "input": map[string]any{"signal": "s:go"}}, &waiter)
		e.waitParked(waiter.ID, backend.StepSignalWait, 20*time.Second)
		ts.stopWorker()

		w := e.goManualWorker(goSendSignal("go-send"))
		h, err := goSendSignal("go-send").Start(context.Background(), e.client, signalIn{Signal: "s:go", Data: []int{1, 2}})
		must(t, err)
		e.tickUntil(w, 10*time.Second, "the Go sender to complete", func() (bool, string) {
			r := e.run(h.ID)
			return r.Status == backend.RunCompleted, string(r.Status)
		})
		out := result(t, h, 5*time.Second)
		if !reflect.DeepEqual(out.Sent, []string{waiter.ID}) {
			t.Errorf("Go SendSignal step reached %v, want [%s]", out.Sent, waiter.ID)
		}
		send := e.steps(h.ID)[0]
		if send.Kind != backend.StepSignalSend || !jsonEq(send.Output, []byte(`{"workflowRunIds":["`+waiter.ID+`"]}`)) {
			t.Errorf("Go signal-send attempt %s output %s", send.Kind, send.Output)
		}
		rows := e.signalRows("s:go")
		if len(rows) != 1 || rows[0].Key == nil || *rows[0].Key != "__signal:"+h.ID+":s:go" {
			t.Errorf("signal rows %+v; want one with key __signal:<run>:<step>", rows)
		}

		ts.startWorker(1, tsWorkflow{Name: "ts-wait", Kind: "wait-signal"})
		raw := ts.resultOf(waiter.ID, 30*time.Second)
		if !jsonEq(raw, []byte(`{"got":{"data":[1,2]},"by":"ts"}`)) {
			t.Errorf("TS wait returned %s", raw)
		}
	})

	t.Run("a TS sendSignal step wakes a Go wait", func(t *testing.T) {
		e := newEnv(t)
		ts := e.ts()
		w := e.goManualWorker(goWaitSignal("go-wait"))
		h, err := goWaitSignal("go-wait").Start(context.Background(), e.client, signalIn{Signal: "s:ts"})
		must(t, err)
		e.tickUntil(w, 10*time.Second, "the Go waiter to park", func() (bool, string) {
			r := e.run(h.ID)
			return r.Status == backend.RunRunning && r.WorkerID == nil, string(r.Status)
		})

		ts.startWorker(1, tsWorkflow{Name: "ts-send", Kind: "send-signal"})
		var sender tsRun
		ts.call("start", map[string]any{"name": "ts-send", "input": map[string]any{"signal": "s:ts", "data": "hello"}}, &sender)
		// The TS worker may claim the woken Go waiter before it stops; the
		// deadlines below allow for its 5 s "not registered" backoff.
		raw := ts.resultOf(sender.ID, 30*time.Second)
		ts.stopWorker()
		if !jsonEq(raw, []byte(`{"sent":{"workflowRunIds":["`+h.ID+`"]},"by":"ts"}`)) {
			t.Errorf("TS sendSignal step returned %s", raw)
		}
		e.tickUntil(w, 20*time.Second, "the Go waiter to complete", func() (bool, string) {
			r := e.run(h.ID)
			return r.Status == backend.RunCompleted, string(r.Status)
		})
		out := result(t, h, 5*time.Second)
		if !out.Received || out.Got != "hello" {
			t.Errorf("Go wait returned %+v", out)
		}
	})
}

// deadWaiters makes two canceled runs whose signal-wait attempts on signal
// are still running: a TypeScript one canceled by the Go client and a Go
// one canceled by the TypeScript client. It returns their ids and wait
// attempt ids, sorted by run id.
func (e *env) deadWaiters(ts *tsProc, signal string) (runs, waits []string) {
	e.t.Helper()
	ts.startWorker(1, tsWorkflow{Name: "ts-wait", Kind: "wait-signal"})
	var tsWaiter tsRun
	ts.call("start", map[string]any{"name": "ts-wait", "input": map[string]any{"signal": signal}}, &tsWaiter)
	e.waitParked(tsWaiter.ID, backend.StepSignalWait, 20*time.Second)
	ts.stopWorker()

	w := e.goManualWorker(goWaitSignal("go-wait"))
	h, err := goWaitSignal("go-wait").Start(context.Background(), e.client, signalIn{Signal: signal})
	must(e.t, err)
	e.tickUntil(w, 10*time.Second, "the Go waiter to park", func() (bool, string) {
		r := e.run(h.ID)
		return r.Status == backend.RunRunning && r.WorkerID == nil, string(r.Status)
	})

	_, err = e.client.CancelRun(context.Background(), tsWaiter.ID)
	must(e.t, err)
	var canceled struct {
		Canceled bool   `json:"canceled"`
		Error    string `json:"error"`
	}
	ts.call("cancel", map[string]any{"id": h.ID}, &canceled)
	if !canceled.Canceled {
		e.t.Fatalf("TS cancel of Go run %s: %s", h.ID, canceled.Error)
	}
	for _, id := range []string{tsWaiter.ID, h.ID} {
		if r := e.run(id); r.Status != backend.RunCanceled {
			e.t.Fatalf("run %s is %s, want canceled", id, r.Status)
		}
		steps := e.steps(id)
		if len(steps) != 1 || steps[0].Kind != backend.StepSignalWait || steps[0].Status != backend.StepRunning {
			e.t.Fatalf("run %s attempts %+v, want one running signal-wait", id, steps)
		}
		runs, waits = append(runs, id), append(waits, steps[0].ID)
	}
	if runs[0] > runs[1] {
		runs[0], runs[1] = runs[1], runs[0]
		waits[0], waits[1] = waits[1], waits[0]
	}
	return runs, waits
}

// Both SDKs deliver a signal to every running wait on it, whatever the
// status of the wait's run (OpenWorkflow 0.10.1's rule), so they agree on
// who received a signal sent to canceled runs' open waits, and an
// idempotency key used on such a send is used up for both: a repeat from
// the other SDK returns the same runs and reaches no waiter that appeared
// since.
func TestSignalToFinishedRunsAgrees(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	for _, first := range []string{"ts", "go"} {
		t.Run(first+" sends first", func(t *testing.T) {
			signal := "dead:" + first
			runs, waits := e.deadWaiters(ts, signal)
			send := func(by, key string, data any) []string {
				if by == "ts" {
					var sent sentIDs
					ts.call("signal", map[string]any{"signal": signal, "data": data, "idempotencyKey": key}, &sent)
					return sorted(sent.WorkflowRunIDs)
				}
				ids, err := e.client.SendSignal(context.Background(), signal, data, key)
				must(t, err)
				return sorted(ids)
			}
			second := map[string]string{"ts": "go", "go": "ts"}[first]
			if got := send(first, "k-"+first, "first"); !reflect.DeepEqual(got, runs) {
				t.Fatalf("%s's keyed send to the canceled runs' waits reached %v, want %v", first, got, runs)
			}
			// A live waiter appears; the repeat with the same key must not
			// reach it.
			var live tsRun
			ts.startWorker(1, tsWorkflow{Name: "ts-wait", Kind: "wait-signal"})
			ts.call("start", map[string]any{"name": "ts-wait", "input": map[string]any{"signal": signal}}, &live)
			e.waitParked(live.ID, backend.StepSignalWait, 20*time.Second)
			ts.stopWorker()
			if got := send(second, "k-"+first, "second"); !reflect.DeepEqual(got, runs) {
				t.Errorf("%s's repeat of the key returned %v, want the first send's %v", second, got, runs)
			}
			liveWait := e.steps(live.ID)[0].ID
			for _, w := range append(waits, liveWait) {
				var d struct {
					Delivered bool            `json:"delivered"`
					Data      json.RawMessage `json:"data"`
				}
				ts.call("getSignalDelivery", map[string]any{"stepAttemptId": w}, &d)
				data, ok, err := e.b.GetSignalDelivery(context.Background(), w)
				must(t, err)
				wantOK := w != liveWait
				if d.Delivered != wantOK || ok != wantOK {
					t.Errorf("wait %s: delivered per TS %v, per Go %v; want %v", w, d.Delivered, ok, wantOK)
				}
				if wantOK && (!jsonEq(d.Data, []byte(`"first"`)) || !jsonEq(data, []byte(`"first"`))) {
					t.Errorf("wait %s: TS reads %s, Go reads %s; want \"first\"", w, d.Data, data)
				}
			}
			if n := len(e.signalRows(signal)); n != 2 {
				t.Errorf("%d signal rows, want 2 (one per canceled run's wait)", n)
			}
			_, err := e.client.CancelRun(context.Background(), live.ID)
			must(t, err)
		})
	}
}

func sorted(ss []string) []string {
	out := append([]string{}, ss...)
	slices.Sort(out)
	return out
}

// Client.SignalRun (this SDK's own) reaches a TypeScript run waiting for
// the signal, delivering to its open wait and waking it, as a send by name
// does; a signal sent to a TypeScript run before it waits is kept where
// only Go workers look, so the TypeScript wait never receives it
// (docs/interop.md, "What is shared").
func TestGoSignalRunReachesATSRunOnlyWhileItWaits(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()

	// Sent before the run waits (no TS worker yet): kept, never received.
	var early tsRun
	ts.call("start", map[string]any{"name": "ts-wait", "input": map[string]any{"signal": "approve:early", "timeout": "1s"}}, &early)
	s, err := e.client.SignalRun(context.Background(), early.ID, "approve:early", "too early", "")
	must(t, err)
	if s.Delivered {
		t.Fatalf("SignalRun to a TS run that does not wait yet = %+v; want kept", s)
	}
	ts.startWorker(1, tsWorkflow{Name: "ts-wait", Kind: "wait-signal"})
	if raw := ts.resultOf(early.ID, 30*time.Second); !jsonEq(raw, []byte(`{"got":null,"by":"ts"}`)) {
		t.Errorf("TS wait after a kept signal returned %s; want a timeout (TypeScript does not read kept signals)", raw)
	}

	var run tsRun
	ts.call("start", map[string]any{"name": "ts-wait", "input": map[string]any{"signal": "approve:9"}}, &run)
	e.waitParked(run.ID, backend.StepSignalWait, 20*time.Second)
	s, err = e.client.SignalRun(context.Background(), run.ID, "approve:9", map[string]any{"ok": true, "by": "go"}, "")
	must(t, err)
	if !s.Delivered {
		t.Errorf("SignalRun to a waiting TS run = %+v; want delivered", s)
	}
	if raw := ts.resultOf(run.ID, 30*time.Second); !jsonEq(raw, []byte(`{"got":{"data":{"ok":true,"by":"go"}},"by":"ts"}`)) {
		t.Errorf("TS wait returned %s", raw)
	}
}
