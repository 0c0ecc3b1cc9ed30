package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
	"github.com/openworkflow-go/openworkflow/internal/clock"
)

// A pruned run takes along the records of its escaped JSON values (go
// migration 3), those of its step attempts included: they name rows that
// no longer exist.
func TestPruneDeletesTheRecordsOfEscapedValues(t *testing.T) {
	clk := clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	b := newBackendOn(t, newNamespace(), clk.Now)
	ctx := context.Background()
	run, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "nul", Input: json.RawMessage(`"in\u0000put"`)})
	if err != nil {
		t.Fatal(err)
	}
	const worker = "w"
	if _, err := b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: []string{worker}, LeaseDuration: time.Hour}); err != nil {
		t.Fatal(err)
	}
	a, err := backendtest.Single(b).CreateStepAttempt(ctx, backendtest.CreateStepAttemptParams{WorkflowRunID: run.ID, WorkerID: worker, StepName: "s", Kind: backend.StepFunction})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backendtest.Single(b).CompleteStepAttempt(ctx, backendtest.CompleteStepAttemptParams{
		WorkflowRunID: run.ID, StepAttemptID: a.ID, WorkerID: worker, Output: json.RawMessage(`"step\u0000out"`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := backendtest.Single(b).CompleteWorkflowRun(ctx, backendtest.CompleteWorkflowRunParams{
		WorkflowRunID: run.ID, WorkerID: worker, Output: json.RawMessage(`"out\u0000put"`)}); err != nil {
		t.Fatal(err)
	}
	records := func() int {
		var n int
		err := requirePool(t).QueryRow(ctx, `SELECT count(*) FROM `+table("openworkflow_go_escaped_json")+` WHERE namespace_id = $1`, b.NamespaceID()).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := records(); n != 3 {
		t.Fatalf("%d records of escaped values before the prune, want 3 (run input and output, step output)", n)
	}
	clk.Advance(48 * time.Hour)
	res, err := b.PruneWorkflowRuns(ctx, backend.PruneWorkflowRunsParams{FinishedBefore: clk.Now().Add(-24 * time.Hour)})
	if err != nil || res.Deleted.Completed != 1 {
		t.Fatalf("PruneWorkflowRuns = %+v, %v; want the run deleted", res, err)
	}
	if n := records(); n != 0 {
		t.Fatalf("%d records of escaped values left after the prune, want 0", n)
	}
}
