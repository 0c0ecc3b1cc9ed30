package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// TestRunsGetShowsAContinuationsLineage: 'ow runs get' of a run that
// continued as new names its successor, and the successor names the run
// it continues and its generation (issue 21).
func TestRunsGetShowsAContinuationsLineage(t *testing.T) {
	bothEnvs(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.client()
		b := c.Backend().(backend.Backend)
		h, err := c.StartByName(ctx, "counter", "", map[string]int{"n": 0})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: []string{"w"}, LeaseDuration: time.Hour}); err != nil {
			t.Fatal(err)
		}
		next, err := b.(backend.RunContinuer).ContinueWorkflowRun(ctx, backend.ContinueWorkflowRunParams{
			WorkflowRunID: h.ID, WorkerID: "w", Input: json.RawMessage(`{"n":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		out := e.ok("runs", "get", h.ID).stdout
		if v, ok := detailRow(out, "continued as"); !ok || !strings.Contains(v, next.ID) {
			t.Errorf("the continued run's 'continued as' row is %q; want %s:\n%s", v, next.ID, out)
		}
		out = e.ok("runs", "get", next.ID).stdout
		if v, ok := detailRow(out, "continued from"); !ok || !strings.Contains(v, h.ID) || !strings.Contains(v, "link 1") {
			t.Errorf("the successor's 'continued from' row is %q; want %s, link 1:\n%s", v, h.ID, out)
		}
		if _, ok := detailRow(out, "continued as"); ok {
			t.Errorf("the chain's last run shows a successor:\n%s", out)
		}
	})
}
