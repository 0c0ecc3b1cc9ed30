package crash

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// Bulk actions killed midway: a worker process driving a bulk cancel is
// killed with SIGKILL after some pages committed, a second process takes
// the action over once its lease expires and is itself killed midway
// through a bulk retry, and a third finishes both. Every selected run is
// acted on exactly once: each canceled run was counted once (acted equals
// the selection, nothing skipped, one page per hundred runs: a page
// applied twice would count its runs again as skipped), and each retried
// run holds exactly one retry mark.
func TestBulkActionKilledMidwayResumesExactlyOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		target func(*testing.T) target
	}{
		{"sqlite", sqliteTarget},
		{"postgres", postgresTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testBulkKilledMidway(t, tc.target(t))
		})
	}
}

const (
	bulkCancelRuns = 3000
	bulkRetryRuns  = 1500
	bulkPage       = 100
)

func testBulkKilledMidway(t *testing.T, tg target) {
	c := tg.open(t)
	b := c.Backend().(backend.Backend)
	ctx := t.Context()

	// The runs: pending runs to cancel, failed runs to retry (claimed and
	// failed here, as a worker would), of workflows no worker runs.
	createRuns := func(name string, n int) []string {
		var ids []string
		for len(ids) < n {
			ps := make([]backend.CreateWorkflowRunParams, min(1000, n-len(ids)))
			for i := range ps {
				ps[i] = backend.CreateWorkflowRunParams{WorkflowName: name}
			}
			runs, err := b.CreateWorkflowRuns(ctx, ps)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range runs {
				ids = append(ids, r.ID)
			}
		}
		return ids
	}
	cancelIDs := createRuns("bulk-cancel-target", bulkCancelRuns)
	retryIDs := createRuns("bulk-retry-target", bulkRetryRuns)
	failed := 0
	for failed < bulkRetryRuns {
		workers := make([]string, 500)
		for i := range workers {
			workers[i] = fmt.Sprintf("failer/%d", i)
		}
		runs, err := b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: workers, LeaseDuration: time.Hour,
			Workflows: []backend.WorkflowKey{{Name: "bulk-retry-target"}}})
		if err != nil || len(runs) == 0 {
			t.Fatalf("claim runs to fail: %d, %v", len(runs), err)
		}
		var groups [][]backend.Write
		for _, r := range runs {
			groups = append(groups, []backend.Write{{Kind: backend.WriteFailRun, WorkflowRunID: r.ID, WorkerID: *r.WorkerID, Error: []byte(`{"message":"broken"}`)}})
		}
		for _, err := range b.ApplyWrites(ctx, groups) {
			if err != nil {
				t.Fatalf("fail a run: %v", err)
			}
		}
		failed += len(runs)
	}

	// Rate 1,500 runs/s: a page of 100 every ~70 ms, so the kill lands
	// midway, after a few pages.
	cancelAct, err := c.StartBulkAction(ctx, backend.BulkCancel, `workflow = "bulk-cancel-target"`, ow.BulkActionOptions{MaxPerSecond: 1500})
	if err != nil {
		t.Fatal(err)
	}
	retryAct, err := c.StartBulkAction(ctx, backend.BulkRetry, `workflow = "bulk-retry-target" AND status = "failed"`, ow.BulkActionOptions{MaxPerSecond: 1500})
	if err != nil {
		t.Fatal(err)
	}
	if cancelAct.Matched != bulkCancelRuns || retryAct.Matched != bulkRetryRuns {
		t.Fatalf("matched %d and %d, want %d and %d", cancelAct.Matched, retryAct.Matched, bulkCancelRuns, bulkRetryRuns)
	}

	stepLog := filepath.Join(t.TempDir(), "steps.log")
	cfg := workerConfig{
		Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: stepLog,
		Concurrency: 2, LeaseDuration: 5 * time.Second, HeartbeatInterval: time.Second,
		MaxPollInterval: 100 * time.Millisecond, ShutdownGrace: time.Second,
		BulkLease: 2 * time.Second, BulkPage: bulkPage, BulkPoll: 50 * time.Millisecond,
	}
	// killMidway starts a worker process, waits until it has committed
	// some pages of act (but not all), kills it, and returns the action
	// as the kill left it.
	killMidway := func(act *ow.BulkAction, from int64) *ow.BulkAction {
		t.Helper()
		p := startReady(t, stepLog, cfg)[0]
		var seen *ow.BulkAction
		waitFor(t, 2*time.Minute, fmt.Sprintf("worker process %d to commit pages of %s", p.pid(), act.Operation), func() (bool, error) {
			a, err := c.GetBulkAction(ctx, act.ID)
			seen = a
			return err == nil && a.Acted >= from+3*bulkPage, err
		})
		if !strings.HasPrefix(seen.LeaseOwner, fmt.Sprintf("crashtest-%d", p.pid())) {
			t.Fatalf("action %s is driven by %q, want worker process %d", act.ID, seen.LeaseOwner, p.pid())
		}
		state, err := p.signalAndWait(syscall.SIGKILL, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if state.ExitCode() != -1 {
			t.Fatalf("worker process ended with %v, want killed", state)
		}
		a, err := c.GetBulkAction(ctx, act.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !a.State.Open() || a.Acted >= a.Matched {
			t.Fatalf("the kill came too late: action %s is %s with %d of %d acted; slow the action down", a.ID, a.State, a.Acted, a.Matched)
		}
		t.Logf("killed worker process %d with %s %d/%d acted in %d pages", p.pid(), a.Operation, a.Acted, a.Matched, a.Pages)
		return a
	}

	killMidway(cancelAct, 0)
	// The second process takes the cancel over once the lease expires,
	// finishes it, and is killed midway through the retry.
	killMidway(retryAct, 0)
	third := startReady(t, stepLog, cfg)[0]
	for _, act := range []*ow.BulkAction{cancelAct, retryAct} {
		waitFor(t, 3*time.Minute, "the bulk action "+string(act.Operation)+" to complete", func() (bool, error) {
			a, err := c.GetBulkAction(ctx, act.ID)
			return err == nil && !a.State.Open(), err
		})
	}
	t.Logf("worker process %d finished both actions", third.pid())

	requireCounts := func(act *ow.BulkAction, n int) {
		t.Helper()
		a, err := c.GetBulkAction(ctx, act.ID)
		if err != nil {
			t.Fatal(err)
		}
		if a.State != backend.BulkCompleted || a.Acted != int64(n) || a.Skipped != 0 || a.Failed != 0 || a.Pages != int64(n/bulkPage) {
			t.Fatalf("bulk %s = %s, acted %d, skipped %d, failed %d in %d pages; want completed, %d acted, none skipped or failed, in %d pages",
				a.Operation, a.State, a.Acted, a.Skipped, a.Failed, a.Pages, n, n/bulkPage)
		}
	}
	requireCounts(cancelAct, bulkCancelRuns)
	requireCounts(retryAct, bulkRetryRuns)
	for _, id := range cancelIDs {
		r, err := b.GetWorkflowRun(ctx, id)
		if err != nil || r.Status != backend.RunCanceled {
			t.Fatalf("run %s: %v, %v; want canceled", id, r, err)
		}
	}
	for _, id := range retryIDs {
		r, err := b.GetWorkflowRun(ctx, id)
		if err != nil || r.Status != backend.RunPending {
			t.Fatalf("run %s: %v, %v; want pending (retried)", id, r, err)
		}
		steps, err := listSteps(ctx, c, id)
		if err != nil {
			t.Fatal(err)
		}
		marks := 0
		for _, s := range steps {
			if s.Kind == backend.StepRetry {
				marks++
			}
		}
		if marks != 1 {
			t.Fatalf("retried run %s has %d retry marks, want exactly 1", id, marks)
		}
	}
}
