package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
)

// finishRunsAt completes one run of each workflow name, on a backend
// whose clock reads at.
func finishRunsAt(t *testing.T, e *env, at time.Time, names ...string) []string {
	t.Helper()
	ctx := context.Background()
	b, err := e.openAt(ctx, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var ids []string
	for _, name := range names {
		run, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: name})
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: []string{"w"}, LeaseDuration: time.Hour})
		if err != nil || len(claimed) != 1 || claimed[0].ID != run.ID {
			t.Fatalf("claim: %v, %v", claimed, err)
		}
		if _, err := backendtest.Single(b).CompleteWorkflowRun(ctx, backendtest.CompleteWorkflowRunParams{WorkflowRunID: run.ID, WorkerID: "w"}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID)
	}
	return ids
}

func TestRunsPrune(t *testing.T) {
	pruneProgressEvery = 0 // every batch
	bothEnvs(t, func(t *testing.T, e *env) {
		e.ok("migrate")
		old := finishRunsAt(t, e, time.Now().Add(-40*24*time.Hour), "report", "report", "audit")
		recent := finishRunsAt(t, e, time.Now().Add(-24*time.Hour), "report")
		c := e.client()

		r := e.ok("runs", "prune", "--older-than", "30d", "--dry-run")
		mustContain(t, "dry run", r.stdout, "would delete 3 finished runs (3 completed, 0 failed, 0 canceled)", "dry run: nothing was deleted")
		for _, id := range old {
			if _, err := c.GetRun(context.Background(), id); err != nil {
				t.Fatalf("run %s after a dry run: %v", id, err)
			}
		}

		rep := decode[ow.PruneReport](t, e.ok("runs", "prune", "--older-than", "30d", "--workflow", "audit", "--json"))
		if rep.Deleted.Completed != 1 || rep.ByWorkflow["audit"] != 1 {
			t.Fatalf("prune of audit = %+v, want its one run", rep)
		}
		r = e.ok("runs", "prune", "--older-than", "30d", "--batch", "1")
		mustContain(t, "prune", r.stdout, "deleted 2 finished runs (2 completed, 0 failed, 0 canceled) in 3 batches")
		mustContain(t, "progress", r.stderr, "deleted 1 runs so far (1 batches", "deleted 2 runs so far (2 batches")
		for _, id := range old {
			if _, err := c.GetRun(context.Background(), id); err == nil {
				t.Errorf("run %s finished 40 days ago is still there", id)
			}
		}
		if _, err := c.GetRun(context.Background(), recent[0]); err != nil {
			t.Errorf("run %s finished yesterday: %v", recent[0], err)
		}
		counts, err := c.CountRuns(context.Background())
		if err != nil || counts != (backend.RunCounts{Completed: 1}) {
			t.Fatalf("counts after the prune = %+v, %v; want the one recent run", counts, err)
		}
	})
}

func TestRunsPruneUsesTheConfiguredRetentionAndSaysWhenThereIsNone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("migrate")
	r := e.run("runs", "prune")
	if r.code != 1 {
		t.Fatalf("prune without a period: exit %d, want 1", r.code)
	}
	mustContain(t, "stderr", r.stderr, "no retention period", "--older-than 30d", "retention.default")
	for _, bad := range [][]string{{"--older-than", "30 days"}, {"--older-than", "0"}, {"--workflow", "x"}, {"--older-than", "1d", "--batch", "0"}} {
		if r := e.run(append([]string{"runs", "prune"}, bad...)...); r.code != 1 || r.stderr == "" {
			t.Errorf("prune %v: exit %d, stderr %q; want a refusal", bad, r.code, r.stderr)
		}
	}

	old := finishRunsAt(t, e, time.Now().Add(-10*24*time.Hour), "short", "long")
	if err := os.WriteFile(filepath.Join(e.dir, "openworkflow.yaml"), []byte("retention:\n  default: 30d\n  workflows: {short: 7d}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := e.ok("runs", "prune").stdout
	mustContain(t, "prune", out, "deleted 1 finished runs", "workflow short", "older than 7d", "other workflows", "older than 30d")
	c := e.client()
	if _, err := c.GetRun(context.Background(), old[0]); err == nil {
		t.Errorf("the run of short (7d) finished 10 days ago is still there")
	}
	if _, err := c.GetRun(context.Background(), old[1]); err != nil {
		t.Errorf("the run of long (30d default) finished 10 days ago: %v", err)
	}
}
