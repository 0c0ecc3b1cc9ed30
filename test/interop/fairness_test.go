package interop

import (
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// Runs a Go client starts under fair shares wait in the fair queue,
// out of the TS claim's reach (available_at NULL): a TypeScript worker
// that registered the same workflow, polling all along, never takes one;
// the Go worker executes them all, each claimed once.
func TestTypeScriptWorkerNeverTakesARunUnderFairShares(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ctx := contextWithTimeout(t, time.Minute)
	spec := ow.Spec{Name: "fair-echo"}
	wf := goEcho(spec)
	var handles []*ow.Handle[echoOut]
	for i, key := range []string{"hot", "hot", "hot", "cold"} {
		h, err := wf.Start(ctx, e.client, echoIn{N: i}, ow.WithFairness(key, 1))
		must(t, err)
		if h.Run.AvailableAt != nil {
			t.Fatalf("fair run %d: available at %v, want NULL (waiting in the fair queue)", i, h.Run.AvailableAt)
		}
		handles = append(handles, h)
	}
	ts := e.ts()
	var none *tsRun
	ts.call("claim", map[string]any{"workerId": "ts-claimer", "leaseMs": 1000}, &none)
	if none != nil {
		t.Fatalf("the TS claim took run %s, which waits in the fair queue", none.ID)
	}
	ts.startWorker(4, tsWorkflow{Name: spec.Name, Kind: "echo"})
	e.goWorker(wf)
	for i, h := range handles {
		out := result(t, h, 30*time.Second)
		if out.By != "go" {
			t.Errorf("run %d executed by %s, want go: the TypeScript worker took a run under fair shares", i, out.By)
		}
		r, err := e.client.GetRun(ctx, h.ID)
		must(t, err)
		if r.Attempts != 1 {
			t.Errorf("run %d: %d claims, want one, by Go", i, r.Attempts)
		}
	}
}
