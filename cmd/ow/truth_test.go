package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
)

// TestRunsGetShowsAForksLineage: 'ow runs get' of a fork names the run it
// was forked from and the step, shows its mark as what it is rather than
// as the internal step "__fork:…", and does not date the pending fork's
// start from the attempts it copied (they ran in the origin, before the
// fork existed); the origin lists its fork.
func TestRunsGetShowsAForksLineage(t *testing.T) {
	bothEnvs(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.client()
		b := c.Backend().(backend.Backend)
		h, err := c.StartByName(ctx, "order", "", map[string]int{"id": 7})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: []string{"w"}, LeaseDuration: time.Hour}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"fetch", "charge"} {
			a, err := backendtest.Single(b).CreateStepAttempt(ctx, backendtest.CreateStepAttemptParams{WorkflowRunID: h.ID, WorkerID: "w", StepName: name, Kind: backend.StepFunction})
			if err == nil {
				_, err = backendtest.Single(b).CompleteStepAttempt(ctx, backendtest.CompleteStepAttemptParams{WorkflowRunID: h.ID, StepAttemptID: a.ID, WorkerID: "w", Output: json.RawMessage(`"` + name + ` done"`)})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		fork, err := c.ForkRun(ctx, h.ID, "charge")
		if err != nil {
			t.Fatal(err)
		}

		out := e.ok("runs", "get", fork.ID).stdout
		if v, ok := detailRow(out, "forked from"); !ok || !strings.Contains(v, h.ID) || !strings.Contains(v, `"charge"`) {
			t.Errorf("the fork's 'forked from' row is %q; want %s and step charge:\n%s", v, h.ID, out)
		}
		if strings.Contains(out, "__fork:") {
			t.Errorf("the fork shows its internal mark's name:\n%s", out)
		}
		mustContain(t, "the fork's mark", out, "(forked here)")
		if v, _ := detailRow(out, "started"); v != "-" {
			t.Errorf("the pending fork, never claimed, shows started %q:\n%s", v, out)
		}

		out = e.ok("runs", "get", h.ID).stdout
		if v, ok := detailRow(out, "forks"); !ok || v != fork.ID {
			t.Errorf("the origin's 'forks' row is %q, want %s:\n%s", v, fork.ID, out)
		}
	})
}

// TestRunsGetShowsAModuleThatRaisedAsFailed: an OpenFlow module that
// raised records its failure as its step's result, so the step completed;
// 'ow runs get' shows it failed, as the dashboard does (api.AttemptState).
func TestRunsGetShowsAModuleThatRaisedAsFailed(t *testing.T) {
	bothEnvs(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.client()
		b := c.Backend().(backend.Backend)
		h, err := c.StartByName(ctx, "openflow", "", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: []string{"w"}, LeaseDuration: time.Hour}); err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string]string{
			"a": `{"status":"success","result":1}`,
			"b": `{"status":"failure","result":{"error":{"name":"ExecutionErr","message":"exit 3"}}}`,
		} {
			a, err := backendtest.Single(b).CreateStepAttempt(ctx, backendtest.CreateStepAttemptParams{WorkflowRunID: h.ID, WorkerID: "w", StepName: name, Kind: backend.StepFunction})
			if err == nil {
				_, err = backendtest.Single(b).CompleteStepAttempt(ctx, backendtest.CompleteStepAttemptParams{WorkflowRunID: h.ID, StepAttemptID: a.ID, WorkerID: "w", Output: json.RawMessage(out)})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		out := e.ok("runs", "get", h.ID).stdout
		if l := stepLine(t, out, "a"); !strings.Contains(l, " completed ") {
			t.Errorf("the module that succeeded: %q", l)
		}
		if l := stepLine(t, out, "b"); !strings.Contains(l, " failed ") {
			t.Errorf("the module that raised does not show failed: %q", l)
		}
	})
}
