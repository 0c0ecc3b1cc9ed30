package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// What happens when Go and TypeScript workers poll one namespace, and the
// deployment docs/interop.md recommends instead. TypeScript 0.10 workers
// claim every run of their namespace and hand a run of a workflow they do
// not have back with OpenWorkflow's "not registered" backoff (5 s × 2^(n−1)
// in the run's claim count n, up to 5 min), or fail it at once when that
// backoff would end past the run's deadline.
//
// The figures of docs/interop.md come from TestMixedWorkersMeasure
// (OPENWORKFLOW_INTEROP_MEASURE=1, several minutes); the tests below it
// check the behaviours the document promises on every run of the suite.

// productionGoWorker starts a Go worker with the default options (1 s
// maximum poll interval, 30 s lease, claiming only registered workflows)
// but for the logger and claimUnregistered, stopped when the test ends.
func (e *env) productionGoWorker(claimUnregistered bool, defs ...ow.Definition) {
	e.t.Helper()
	w := ow.NewWorker(e.b, ow.WorkerOptions{ClaimUnregistered: claimUnregistered, Logger: testLogger(e.t), ID: "go-prod-" + e.ns})
	must(e.t, w.Register(defs...))
	must(e.t, w.Start(context.Background()))
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
}

// waitFinished waits for the run to reach a terminal status and returns
// it as stored.
func (e *env) waitFinished(id string, timeout time.Duration) *backend.WorkflowRun {
	e.t.Helper()
	var r *backend.WorkflowRun
	eventually(e.t, timeout, "run "+id+" to finish", func() (bool, string) {
		r = e.run(id)
		return r.Status.Terminal(), fmt.Sprintf("%s, %d claims, error %s", r.Status, r.Attempts, r.Error)
	})
	return r
}

// latency is how long the run took from creation to its end.
func latency(r *backend.WorkflowRun) time.Duration {
	if r.FinishedAt == nil {
		return -1
	}
	return r.FinishedAt.Sub(r.CreatedAt)
}

// The recommended deployment: each SDK's workers in a namespace of their
// own. TypeScript workers then never claim a Go run; a Go client still
// starts and awaits TypeScript runs through a backend bound to the
// TypeScript namespace.
func TestSeparateNamespacesKeepWorkersToTheirOwnRuns(t *testing.T) {
	setup(t)
	goNS, tsNS := newEnv(t), newEnv(t)
	ts := tsNS.ts()
	ts.startWorker(2, tsWorkflow{Name: "ts-echo", Kind: "echo"})
	goNS.productionGoWorker(false, goEcho(ow.Spec{Name: "go-echo"}))
	// A TypeScript worker polling the Go namespace would claim this run;
	// none does, so it runs once, on Go.
	for i := range 3 {
		h, err := goEcho(ow.Spec{Name: "go-echo"}).Start(context.Background(), goNS.client, echoIn{N: i})
		must(t, err)
		if out := result(t, h, 10*time.Second); out.By != "go" {
			t.Errorf("go-echo ran on %q", out.By)
		}
		if r := goNS.run(h.ID); r.Attempts != 1 || r.Error != nil {
			t.Errorf("Go run %s: %d claims, error %s; want one claim, no error", h.ID, r.Attempts, r.Error)
		}
	}
	tsEcho := ow.Declare[echoIn, echoOut](ow.Spec{Name: "ts-echo"})
	h, err := tsEcho.Start(context.Background(), tsNS.client, echoIn{Msg: "from go"})
	must(t, err)
	if out := result(t, h, 20*time.Second); out.By != "ts" || out.Echo.Msg != "from go" {
		t.Errorf("ts-echo started from Go returned %+v", out)
	}
}

// A Go worker with ClaimUnregistered (the default before issue 20) that claims a TypeScript run
// with a deadline hands it back without failing it before its deadline,
// where OpenWorkflow's own rule fails it as soon as the backoff would end
// past the deadline: here the second claim, 5 s into an 8 s deadline.
func TestClaimingGoWorkerDoesNotFailATSRunBeforeItsDeadline(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	e.productionGoWorker(true, goEcho(ow.Spec{Name: "go-only"}))
	deadline := time.Now().Add(8 * time.Second).UTC().Truncate(time.Millisecond)
	var run tsRun
	ts.call("start", map[string]any{"name": "ts-only", "input": map[string]any{}, "deadlineAt": deadline.Format(time.RFC3339Nano)}, &run)
	r := e.waitFinished(run.ID, 30*time.Second)
	var errJSON struct{ Message string }
	_ = json.Unmarshal(r.Error, &errJSON)
	if r.Status != backend.RunFailed || errJSON.Message != "Workflow run deadline exceeded" || r.FinishedAt.Before(deadline) {
		t.Errorf("TS run with deadline %v ended %s at %v (%d claims by Go) with %s; want failed by the deadline sweep, not before the deadline",
			deadline, r.Status, r.FinishedAt, r.Attempts, r.Error)
	}
	if r.Attempts < 2 {
		t.Errorf("the Go worker claimed the run %d times, want at least 2 (at once, then after its 5 s backoff)", r.Attempts)
	}
}

// A Go worker with default options claims only the workflows it
// registered (issue 20, item 10), so it does not starve a TypeScript worker
// polling the same namespace. Before, it claimed each TypeScript run a few
// milliseconds after it came due and handed it back with the "not
// registered" backoff: 16 of 20 TypeScript runs were still pending after
// 51 s.
func TestDefaultGoWorkerDoesNotStarveTSRuns(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	ts.startWorker(4, tsWorkflow{Name: "ts-echo", Kind: "echo"})
	e.productionGoWorker(false, goEcho(ow.Spec{Name: "go-echo"}))
	const n = 20
	ids := make([]string, n)
	for i := range ids {
		var run tsRun
		ts.call("start", map[string]any{"name": "ts-echo", "input": map[string]any{"n": i}}, &run)
		ids[i] = run.ID
	}
	for _, id := range ids {
		r := e.waitFinished(id, 20*time.Second)
		if r.Status != backend.RunCompleted || r.Attempts != 1 || r.Error != nil {
			t.Errorf("TS run %s: %s after %v with %d claims, error %s; want completed at its first claim, by the TS worker",
				id, r.Status, latency(r), r.Attempts, r.Error)
		}
	}
}

// TestMixedWorkersMeasure measures what docs/interop.md reports about Go
// and TypeScript workers polling one namespace. It takes minutes, so it
// runs only with OPENWORKFLOW_INTEROP_MEASURE=1; each scenario logs its
// figures and checks only that the runs end.
func TestMixedWorkersMeasure(t *testing.T) {
	if os.Getenv("OPENWORKFLOW_INTEROP_MEASURE") != "1" {
		t.Skip("set OPENWORKFLOW_INTEROP_MEASURE=1 to measure mixed deployments (several minutes)")
	}
	setup(t)
	const n = 10
	goOnly := func(t *testing.T, shared bool) {
		for _, origin := range []string{"go", "ts"} {
			e := newEnv(t)
			ts := e.ts()
			if shared {
				ts.startWorker(1, tsWorkflow{Name: "ts-echo", Kind: "echo"})
			} else {
				// The TypeScript workers poll a namespace of their own.
				elsewhere := startTS(t, randomName("interop-ts-"), tsOptions{})
				elsewhere.startWorker(1, tsWorkflow{Name: "ts-echo", Kind: "echo"})
			}
			e.productionGoWorker(false, goEcho(ow.Spec{Name: "go-echo"}))
			var lat []time.Duration
			var claims []int
			for i := range n {
				var id string
				if origin == "go" {
					h, err := goEcho(ow.Spec{Name: "go-echo"}).Start(context.Background(), e.client, echoIn{N: i})
					must(t, err)
					id = h.ID
				} else {
					var run tsRun
					ts.call("start", map[string]any{"name": "go-echo", "input": echoIn{N: i}}, &run)
					id = run.ID
				}
				r := e.waitFinished(id, 10*time.Minute)
				if r.Status != backend.RunCompleted {
					t.Errorf("run %s ended %s: %s", id, r.Status, r.Error)
				}
				lat = append(lat, latency(r))
				claims = append(claims, r.Attempts-1) // all but Go's own
			}
			where := map[bool]string{true: "TS worker in the namespace", false: "TS worker elsewhere"}[shared]
			t.Logf("%s, started by the %s client: %s; TS claims per run %v", where, origin, summary(lat), claims)
		}
	}
	t.Run("Go-only runs, TS worker polling the namespace", func(t *testing.T) {
		t.Parallel()
		goOnly(t, true)
	})
	t.Run("Go-only runs, TS worker in a namespace of its own", func(t *testing.T) {
		t.Parallel()
		goOnly(t, false)
	})
	t.Run("children across SDKs, both workers polling", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		ts := e.ts()
		ts.startWorker(1, tsWorkflow{Name: "ts-child", Kind: "child-double"}, tsWorkflow{Name: "ts-parent", Kind: "parent-of"})
		tsChild := ow.Declare[childIn, childOut](ow.Spec{Name: "ts-child"})
		goParent := ow.Define(ow.Spec{Name: "go-parent"}, func(ctx ow.Context, in int) (childOut, error) {
			return ow.RunWorkflow(ctx, tsChild, childIn{N: in})
		})
		e.productionGoWorker(false, goParent, goChildDouble("go-child"))
		var goLat, tsLat []time.Duration
		var goClaims, tsClaims []int
		for i := range n {
			h, err := goParent.Start(context.Background(), e.client, i)
			must(t, err)
			r := e.waitFinished(h.ID, 10*time.Minute)
			goLat, goClaims = append(goLat, latency(r)), append(goClaims, r.Attempts)
			var run tsRun
			ts.call("start", map[string]any{"name": "ts-parent", "input": map[string]any{"child": "go-child", "childInput": childIn{N: i}}}, &run)
			r = e.waitFinished(run.ID, 10*time.Minute)
			tsLat, tsClaims = append(tsLat, latency(r)), append(tsClaims, r.Attempts)
		}
		t.Logf("Go parent, TS child: %s; parent claims %v", summary(goLat), goClaims)
		t.Logf("TS parent, Go child: %s; parent claims %v", summary(tsLat), tsClaims)
	})
	t.Run("deadlines", func(t *testing.T) {
		t.Parallel()
		// A Go-only run with an 8 s deadline while no Go worker runs (a
		// deploy): the TypeScript worker's rule fails it early.
		e := newEnv(t)
		ts := e.ts()
		ts.startWorker(1, tsWorkflow{Name: "ts-echo", Kind: "echo"})
		var early []time.Duration
		for range 3 {
			deadline := time.Now().Add(8 * time.Second)
			h, err := goEcho(ow.Spec{Name: "go-echo"}).Start(context.Background(), e.client, echoIn{}, ow.WithDeadline(deadline))
			must(t, err)
			r := e.waitFinished(h.ID, time.Minute)
			early = append(early, deadline.Sub(*r.FinishedAt))
			t.Logf("Go-only run, 8 s deadline, TS worker only: %s after %v, %d TS claims, %s", r.Status, latency(r), r.Attempts, r.Error)
		}
		t.Logf("Go-only runs failed by the TS worker before their deadline by %v", early)
		// The reverse, with a Go worker that claims unregistered workflows: see
		// TestClaimingGoWorkerDoesNotFailATSRunBeforeItsDeadline.
		f := newEnv(t)
		tsF := f.ts()
		f.productionGoWorker(true, goEcho(ow.Spec{Name: "go-echo"}))
		for range 3 {
			deadline := time.Now().Add(8 * time.Second)
			var run tsRun
			tsF.call("start", map[string]any{"name": "ts-only", "input": map[string]any{}, "deadlineAt": deadline.UTC().Format(time.RFC3339Nano)}, &run)
			r := f.waitFinished(run.ID, time.Minute)
			t.Logf("TS-only run, 8 s deadline, Go worker with ClaimUnregistered only: %s %v before its deadline, %d Go claims, %s",
				r.Status, deadline.Sub(*r.FinishedAt).Round(time.Millisecond), r.Attempts, r.Error)
		}
	})
}

// summary formats latencies as median and maximum.
func summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	var b strings.Builder
	fmt.Fprintf(&b, "median %v, max %v (all:", s[len(s)/2].Round(10*time.Millisecond), s[len(s)-1].Round(10*time.Millisecond))
	for _, d := range ds {
		fmt.Fprintf(&b, " %v", d.Round(10*time.Millisecond))
	}
	b.WriteString(")")
	return b.String()
}
