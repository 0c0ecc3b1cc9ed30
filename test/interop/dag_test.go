package interop

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/dag"
)

// DAG runs (package dag) store only OpenWorkflow's run statuses — a
// compensating run is running, a compensated one failed with code
// COMPENSATED — so the TypeScript client lists, counts, reads and
// cancels them like any run, and a TypeScript worker sharing the
// namespace goes on executing its own runs beside them.
func TestTSClientAndWorkerBesideDAGRuns(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ctx := contextWithTimeout(t, 2*time.Minute)
	ok := func(context.Context, dag.StepContext) (any, error) { return "done", nil }
	eng := dag.New(e.client, dag.Options{Handlers: map[string]dag.Handler{
		"ok": ok, "undo": ok,
		"declined":  func(context.Context, dag.StepContext) (any, error) { return nil, errors.New("card declined") },
		"undo-down": func(context.Context, dag.StepContext) (any, error) { return nil, errors.New("refund service down") },
	}})
	for _, d := range []dag.Definition{
		{Name: "dag-ok", Steps: []dag.Step{{Name: "a", Handler: "ok"}, {Name: "b", Handler: "ok", DependsOn: []string{"a"}}}},
		{Name: "dag-comp", Steps: []dag.Step{
			{Name: "charge", Handler: "ok", Compensate: "undo"},
			{Name: "ship", Handler: "declined", Retries: dag.Retries(0), DependsOn: []string{"charge"}},
		}},
		// Its compensation fails and waits 30 s for its retry: the run
		// stays compensating (stored running, parked) until canceled.
		{Name: "dag-stuck", Steps: []dag.Step{
			{Name: "charge", Handler: "ok", Compensate: "undo-down", Retries: dag.Retries(8)},
			{Name: "ship", Handler: "declined", Retries: dag.Retries(0), DependsOn: []string{"charge"}},
		}},
	} {
		if _, err := eng.Define(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	e.goWorker(eng.Workflow("dag-ok"), eng.Workflow("dag-comp"), eng.Workflow("dag-stuck"))
	start := func(name string) string {
		h, err := eng.Start(ctx, name, map[string]string{"order": name})
		must(t, err)
		return h.ID
	}
	okID, compID, stuckID := start("dag-ok"), start("dag-comp"), start("dag-stuck")
	eventually(t, time.Minute, "the DAG runs to reach their statuses", func() (bool, string) {
		var got []string
		for _, id := range []string{okID, compID, stuckID} {
			st, err := eng.Status(ctx, id)
			if err != nil {
				return false, err.Error()
			}
			got = append(got, string(st.Status))
		}
		return strings.Join(got, " ") == "completed compensated compensating", strings.Join(got, " ")
	})
	// dag-stuck waits for the retry of its compensation, parked: the
	// third compensation attempt is 2 s away, then 4 s…; wait for a park.
	eventually(t, time.Minute, "dag-stuck to park", func() (bool, string) {
		r := e.run(stuckID)
		return r.WorkerID == nil && r.Status == backend.RunRunning, string(r.Status)
	})

	ts := e.ts()
	want := map[string]string{okID: "completed", compID: "failed", stuckID: "running"}
	var page tsPage
	ts.call("list", map[string]any{}, &page)
	if len(page.Data) != 3 {
		t.Fatalf("TS list: %d runs, want the 3 DAG runs", len(page.Data))
	}
	for _, r := range page.Data {
		if want[r.ID] != r.Status {
			t.Errorf("TS list: run %s (%s) is %q, want %q", r.ID, r.WorkflowName, r.Status, want[r.ID])
		}
	}
	var counts backend.RunCounts
	ts.call("count", nil, &counts)
	if counts != (backend.RunCounts{Completed: 1, Failed: 1, Running: 1}) {
		t.Errorf("TS count = %+v, want completed 1, failed 1, running 1", counts)
	}

	var comp tsRun
	ts.call("get", map[string]any{"id": compID}, &comp)
	var stored struct{ Name, Message, Code string }
	must(t, json.Unmarshal(comp.Error, &stored))
	if comp.Status != "failed" || stored.Name != "CompensatedError" || stored.Code != dag.CodeCompensated ||
		!strings.Contains(stored.Message, "card declined") {
		t.Errorf("TS get of the compensated run: status %s, error %s", comp.Status, comp.Error)
	}
	var steps struct {
		Data []struct {
			StepName, Kind, Status string
		} `json:"data"`
	}
	ts.call("listSteps", map[string]any{"id": compID}, &steps)
	var names []string
	for _, s := range steps.Data {
		names = append(names, s.StepName+"/"+s.Kind+"/"+s.Status)
	}
	// __not_retryable is the mark the DAG records before it compensates
	// (ow.MarkNotRetryable): an ordinary completed function step to
	// TypeScript, which replays past it like any memoized step.
	if strings.Join(names, " ") != "charge/function/completed ship/function/failed __not_retryable/function/completed compensate:charge/function/completed" {
		t.Errorf("TS listSteps of the compensated run: %v", names)
	}

	// The TypeScript client cancels the compensating run.
	var canceled struct {
		Canceled bool   `json:"canceled"`
		Error    string `json:"error"`
	}
	ts.call("cancel", map[string]any{"id": stuckID}, &canceled)
	if !canceled.Canceled {
		t.Fatalf("TS cancel of the compensating run: %s", canceled.Error)
	}
	if st, err := eng.Status(ctx, stuckID); err != nil || st.Status != dag.StatusCanceled {
		t.Errorf("after the TS cancel, the DAG status is %v (%v), want canceled", st.Status, err)
	}

	// A TypeScript worker in the namespace executes its own runs beside the
	// DAG runs (all finished now, so it has nothing of theirs to claim).
	ts.startWorker(1, tsWorkflow{Name: "ts-echo", Kind: "step-echo"})
	var run tsRun
	ts.call("start", map[string]any{"name": "ts-echo", "input": map[string]any{"value": 7}}, &run)
	if out := ts.resultOf(run.ID, 30*time.Second); string(out) != `{"value":7}` {
		t.Errorf("TS run beside the DAG runs returned %s", out)
	}
	for id, status := range map[string]backend.RunStatus{okID: backend.RunCompleted, compID: backend.RunFailed, stuckID: backend.RunCanceled} {
		if r := e.run(id); r.Status != status {
			t.Errorf("DAG run %s is %s after the TS worker ran, want %s", id, r.Status, status)
		}
	}
}
