package interop

import (
	"encoding/json"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestTSClientReadsARunThatContinuedAsNewAsCompleted: a run a Go worker
// continued as new (ow.ContinueAsNew) is, to the TypeScript client
// (getWorkflowRun), a completed run whose output names its successor
// ({"continuedAsNew": {"runId"}}), and the successor, a run of the same
// workflow, completes with the chain's result: statuses stay
// OpenWorkflow's five.
func TestTSClientReadsARunThatContinuedAsNewAsCompleted(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	countdown := ow.Define(ow.Spec{Name: "interop-countdown"}, func(ctx ow.Context, n int) (string, error) {
		if n > 0 {
			return "", ow.ContinueAsNew(n - 1)
		}
		return "liftoff", nil
	})
	e.goWorker(countdown)
	h, err := countdown.Start(contextWithTimeout(t, 30*time.Second), e.client, 1)
	must(t, err)
	if out := result(t, h, 30*time.Second); out != "liftoff" {
		t.Fatalf("Go Result of the chain = %q, want liftoff", out)
	}
	next, ok := backend.ContinuedTo(e.run(h.ID).Context)
	if !ok {
		t.Fatalf("run %s did not continue as new", h.ID)
	}

	var seen tsRun
	ts.call("get", map[string]any{"id": h.ID}, &seen)
	if seen.Status != "completed" || seen.WorkflowName != "interop-countdown" {
		t.Errorf("TS getWorkflowRun(%s) = %+v, want a completed run of interop-countdown", h.ID, seen)
	}
	var first struct {
		ContinuedAsNew struct {
			RunID string `json:"runId"`
		} `json:"continuedAsNew"`
	}
	must(t, json.Unmarshal(seen.Output, &first))
	if first.ContinuedAsNew.RunID != next {
		t.Errorf("TS output of the continued run %s names %q, want its successor %s", seen.Output, first.ContinuedAsNew.RunID, next)
	}
	var succ tsRun
	ts.call("get", map[string]any{"id": next}, &succ)
	var last string
	must(t, json.Unmarshal(succ.Output, &last))
	if succ.Status != "completed" || succ.WorkflowName != "interop-countdown" || last != "liftoff" {
		t.Errorf("TS getWorkflowRun(%s) = %+v, want the completed successor with output liftoff", next, succ)
	}
}
