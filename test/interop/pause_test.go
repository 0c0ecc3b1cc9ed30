package interop

import (
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// A paused run is invisible to OpenWorkflow's claim query, as a run
// waiting for admission is (available_at NULL, its due time kept in a
// column of ours): neither the TS backend's claim nor a TypeScript worker
// that registered the workflow takes it. Once resumed, the TypeScript
// worker takes it like any run.
func TestTypeScriptCannotTakeAPausedRunAndTakesItAfterResume(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ctx := contextWithTimeout(t, time.Minute)
	spec := ow.Spec{Name: "paused-echo"}
	wf := goEcho(spec)
	h, err := wf.Start(ctx, e.client, echoIn{N: 7})
	must(t, err)
	res, err := e.client.PauseRun(ctx, h.ID, "interop")
	must(t, err)
	if !res.Run.Paused() || res.Run.AvailableAt != nil {
		t.Fatalf("paused run %+v: want paused with available_at NULL", res.Run)
	}

	ts := e.ts()
	var r *tsRun
	ts.call("claim", map[string]any{"workerId": "ts-claimer", "leaseMs": 60000}, &r)
	if r != nil {
		t.Fatalf("the TS claim query took run %s (%s), which is paused", r.ID, r.Status)
	}
	ts.startWorker(4, tsWorkflow{Name: spec.Name, Kind: "echo"})
	// The TypeScript worker polls (100 ms, backing off to 1 s); give it
	// two of its longest polls.
	time.Sleep(2 * time.Second)
	got, err := e.client.GetRun(ctx, h.ID)
	must(t, err)
	if got.Status != backend.RunPending || got.Attempts != 0 || !got.Paused() {
		t.Fatalf("paused run after the TypeScript worker polled: %s, %d claims, paused %v; want untouched", got.Status, got.Attempts, got.Paused())
	}

	_, err = e.client.ResumeRun(ctx, h.ID)
	must(t, err)
	out := result(t, h, 30*time.Second)
	if out.By != "ts" || out.Echo.N != 7 {
		t.Fatalf("resumed run's output %+v: want it executed by the TypeScript worker", out)
	}
}
