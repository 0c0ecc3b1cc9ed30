package interop

import (
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// Runs a Go client starts as a singleton queue are held out of the TS
// claim's reach (available_at NULL) until the key's active run ends; a
// TypeScript worker ending that run releases the next (go migration 21's
// trigger fires on its UPDATE too), so a TypeScript worker executes the
// key's runs one at a time, in start order, and cannot strand the queue.
func TestTypeScriptWorkerExecutesASingletonQueueOneAtATime(t *testing.T) {
	setup(t)
	e := newEnv(t)
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
	var prev *backend.WorkflowRun
	for i, h := range handles {
		out := result(t, h, 30*time.Second)
		if out.By != "ts" {
			t.Errorf("run %d executed by %s, want ts", i, out.By)
		}
		r, err := e.client.GetRun(ctx, h.ID)
		must(t, err)
		if prev != nil && (r.StartedAt == nil || r.StartedAt.Before(*prev.FinishedAt)) {
			t.Errorf("run %d started at %v, before run %d finished at %v", i, r.StartedAt, i-1, prev.FinishedAt)
		}
		prev = r
	}
}
