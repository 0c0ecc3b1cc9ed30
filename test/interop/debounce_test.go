package interop

import (
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// A debounced run is an ordinary pending run whose available_at is in the
// future: OpenWorkflow's claim query does not take it before it is due,
// and a TypeScript worker that registered the workflow executes it once
// due, with the burst's last input. The TypeScript claim takes it out of
// pending, which frees the key (go migration 20's partial unique index
// holds only never-claimed pending runs): the next debounced start makes
// a new run.
func TestTypeScriptTakesADebouncedRunOnlyWhenDueAndFreesItsKey(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ctx := contextWithTimeout(t, time.Minute)
	spec := ow.Spec{Name: "debounced-echo"}
	wf := goEcho(spec)
	d := ow.Debounce{Key: "cust-1", Period: 3 * time.Second, MaxDelay: time.Minute}
	var first *ow.Handle[echoOut]
	for n := 1; n <= 3; n++ {
		h, err := wf.Start(ctx, e.client, echoIn{N: n}, ow.WithDebounce(d))
		must(t, err)
		if first == nil {
			first = h
		} else if h.ID != first.ID || !h.Debounced {
			t.Fatalf("start %d made run %s (debounced %v), want the burst's run %s", n, h.ID, h.Debounced, first.ID)
		}
	}

	ts := e.ts()
	var r *tsRun
	ts.call("claim", map[string]any{"workerId": "ts-claimer", "leaseMs": 60000}, &r)
	if r != nil {
		t.Fatalf("the TS claim query took run %s (%s) before its debounce period ended", r.ID, r.Status)
	}
	ts.startWorker(4, tsWorkflow{Name: spec.Name, Kind: "echo"})
	out := result(t, first, 30*time.Second)
	if out.By != "ts" || out.Echo.N != 3 {
		t.Fatalf("debounced run's output %+v: want it executed by the TypeScript worker with the last input (3)", out)
	}
	got, err := e.client.GetRun(ctx, first.ID)
	must(t, err)
	if got.Attempts != 1 || got.Status != backend.RunCompleted {
		t.Fatalf("debounced run: %s after %d claims, want completed after 1", got.Status, got.Attempts)
	}
	next, err := wf.Start(ctx, e.client, echoIn{N: 4}, ow.WithDebounce(d))
	must(t, err)
	if next.ID == first.ID || next.Debounced {
		t.Fatalf("a start after the TypeScript claim joined run %s, want a new run", next.ID)
	}
	out = result(t, next, 30*time.Second)
	if out.Echo.N != 4 {
		t.Fatalf("second burst's output %+v, want input 4", out)
	}
}
