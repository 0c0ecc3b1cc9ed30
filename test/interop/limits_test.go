package interop

import (
	"context"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// A run waiting for admission is invisible to OpenWorkflow's claim query
// (available_at NULL): neither the TS backend's claim nor a TypeScript
// worker that registered the same workflow takes it, so TypeScript cannot
// break a Go limit. The TS client still lists, counts and cancels it. The
// Go worker then admits the runs one at a time (a per-key limit of 1)
// while the TypeScript worker polls beside it and executes none.
func TestTypeScriptCannotTakeARunWaitingForAdmission(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ctx := contextWithTimeout(t, time.Minute)
	spec := ow.Spec{Name: "limited-echo", Limits: ow.Limits{ConcurrencyPerKey: 1}}
	if _, err := e.b.PutWorkflowLimits(ctx, spec.Name, spec.Limits.Stored()); err != nil {
		t.Fatal(err)
	}
	wf := goEcho(spec)
	var handles []*ow.Handle[echoOut]
	for i := range 4 {
		h, err := wf.Start(ctx, e.client, echoIn{N: i}, ow.WithConcurrencyKey("k"))
		must(t, err)
		if h.Run.QueuedAt == nil || h.Run.AvailableAt != nil {
			t.Fatalf("run %d does not wait for admission: %+v", i, h.Run)
		}
		handles = append(handles, h)
	}

	ts := e.ts()
	for i := range 4 {
		var r *tsRun
		ts.call("claim", map[string]any{"workerId": "ts-claimer", "leaseMs": 60000}, &r)
		if r != nil {
			t.Fatalf("claim %d: the TS claim query took run %s (%s), which waits for admission", i, r.ID, r.Status)
		}
	}
	ts.startWorker(4, tsWorkflow{Name: spec.Name, Kind: "echo"})
	// The TypeScript worker polls (100 ms, backing off to 1 s); give it
	// two of its longest polls.
	time.Sleep(2 * time.Second)
	for i, h := range handles {
		r, err := e.client.GetRun(ctx, h.ID)
		must(t, err)
		if r.Status != backend.RunPending || r.Attempts != 0 || r.QueuedAt == nil {
			t.Fatalf("run %d after the TypeScript worker polled: %s, %d claims, queued %v; want untouched", i, r.Status, r.Attempts, r.QueuedAt)
		}
	}
	var counts backend.RunCounts
	ts.call("count", nil, &counts)
	if counts.Pending != 4 {
		t.Errorf("TS counts %+v, want 4 pending", counts)
	}
	var c struct {
		Canceled bool   `json:"canceled"`
		Error    string `json:"error"`
	}
	ts.call("cancel", map[string]any{"id": handles[3].ID}, &c)
	if !c.Canceled {
		t.Fatalf("TS cancel of a run waiting for admission: %s", c.Error)
	}

	e.goWorker(wf)
	var prev *backend.WorkflowRun
	for i, h := range handles[:3] {
		out := result(t, h, 30*time.Second)
		if out.By != "go" {
			t.Errorf("run %d executed by %s, want go: the TypeScript worker took a limited run", i, out.By)
		}
		r, err := e.client.GetRun(ctx, h.ID)
		must(t, err)
		if r.Attempts != 1 || r.AdmittedAt == nil {
			t.Errorf("run %d: %d claims, admitted %v; want one claim by Go, admitted", i, r.Attempts, r.AdmittedAt)
		}
		if prev != nil && r.AdmittedAt.Before(*prev.FinishedAt) {
			t.Errorf("run %d admitted at %v, before run %d finished at %v (per-key limit 1)", i, r.AdmittedAt, i-1, prev.FinishedAt)
		}
		prev = r
	}
	if r, err := e.client.GetRun(ctx, handles[3].ID); err != nil || r.Status != backend.RunCanceled {
		t.Errorf("the run TS canceled: %+v, %v", r, err)
	}
}

// Priorities and concurrency keys are columns of this SDK's own: a run
// started with them by Go is an ordinary run to TypeScript, whose worker
// executes it, and a run TypeScript starts reads as priority 0 in Go.
func TestPrioritiesAndKeysAreOrdinaryRunsToTypeScript(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ctx := contextWithTimeout(t, time.Minute)
	ts := e.ts()
	ts.startWorker(2, tsWorkflow{Name: "ts-echo", Kind: "echo"})
	h, err := ow.Declare[echoIn, echoOut](ow.Spec{Name: "ts-echo"}).Start(ctx, e.client, echoIn{Msg: "hi"},
		ow.WithPriority(7), ow.WithConcurrencyKey("customer-1"))
	must(t, err)
	if out := result(t, h, 30*time.Second); out.By != "ts" || out.Echo.Msg != "hi" {
		t.Errorf("TS worker's output %+v", out)
	}
	r, err := e.client.GetRun(ctx, h.ID)
	must(t, err)
	if r.Priority != 7 || r.ConcurrencyKey == nil || *r.ConcurrencyKey != "customer-1" {
		t.Errorf("after TypeScript executed it the run has priority %d key %v; want 7 and customer-1 kept", r.Priority, r.ConcurrencyKey)
	}
	var created tsRun
	ts.call("start", map[string]any{"name": "ts-echo", "input": map[string]any{"msg": "x"}}, &created)
	got, err := e.client.GetRun(context.Background(), created.ID)
	must(t, err)
	if got.Priority != 0 || got.ConcurrencyKey != nil || got.QueuedAt != nil {
		t.Errorf("a TS-started run reads in Go as priority %d key %v queued %v; want 0, none, not queued", got.Priority, got.ConcurrencyKey, got.QueuedAt)
	}
}
