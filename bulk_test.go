package openworkflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/runquery"
)

// waitBulk waits (up to 30 s) until the bulk action is final and returns
// it.
func waitBulk(t *testing.T, c *ow.Client, id string) *ow.BulkAction {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, err := c.GetBulkAction(context.Background(), id)
		if err != nil {
			t.Fatalf("GetBulkAction(%s): %v", id, err)
		}
		if !a.State.Open() {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("bulk action %s still %s after 30 s (acted %d)", id, a.State, a.Acted)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBulkCancelByQueryIsDrivenByAWorker(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend.Backend) {
		ctx := context.Background()
		c := ow.NewClient(b)
		var ids []string
		for range 25 {
			r, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "bulk-target"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
		}
		other, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "bulk-other"})
		if err != nil {
			t.Fatal(err)
		}
		query := `workflow = "bulk-target" AND status = "pending"`
		dry, err := c.DryRunBulkAction(ctx, backend.BulkCancel, query)
		if err != nil || dry.Matched != 25 || dry.Eligible != 25 {
			t.Fatalf("DryRunBulkAction = %+v, %v; want 25 matched and eligible", dry, err)
		}
		if page, _ := c.ListBulkActions(ctx, backend.ListBulkActionsParams{}); len(page.Data) != 0 {
			t.Fatalf("a dry run stored %d actions, want none", len(page.Data))
		}
		a, err := c.StartBulkAction(ctx, backend.BulkCancel, query, ow.BulkActionOptions{Reason: "cleanup", RequestedBy: "test"})
		if err != nil {
			t.Fatalf("StartBulkAction: %v", err)
		}
		if a.Matched != 25 || a.MaxPerSecond != ow.DefaultBulkRate || a.State != backend.BulkRunning {
			t.Fatalf("started action = %+v, want running, 25 matched, the default rate", a)
		}
		// pages of 10: three pages, no worker runs a workflow (no claims)
		startWorker(t, b, ow.WorkerOptions{Concurrency: 1, BulkActionPoll: 20 * time.Millisecond, BulkActionPage: 10})
		a = waitBulk(t, c, a.ID)
		if a.State != backend.BulkCompleted || a.Acted != 25 || a.Skipped != 0 || a.Pages != 3 {
			t.Fatalf("finished action = %+v, want completed, 25 acted in 3 pages", a)
		}
		for _, id := range ids {
			if r, _ := b.GetWorkflowRun(ctx, id); r.Status != backend.RunCanceled {
				t.Errorf("run %s is %s, want canceled", id, r.Status)
			}
		}
		if r, _ := b.GetWorkflowRun(ctx, other.ID); r.Status != backend.RunPending {
			t.Errorf("unselected run is %s, want pending", r.Status)
		}
	})
}

func TestStartBulkActionRefusesABadQueryWithItsPosition(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend.Backend) {
		c := ow.NewClient(b)
		for _, tc := range []struct{ op, query, want string }{
			{"cancel", `status = "nope"`, "1:10"},
			{"cancel", `workflow = "x" AND`, "1:19"},
			{"retry", `nope = 1`, "1:1"},
			{"explode", `status = "failed"`, "unknown bulk operation"},
		} {
			_, err := c.StartBulkAction(context.Background(), backend.BulkOperation(tc.op), tc.query, ow.BulkActionOptions{})
			if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("StartBulkAction(%s, %q) = %v; want ErrInvalidArgument naming %q", tc.op, tc.query, err, tc.want)
			}
			if tc.op != "explode" && !errors.Is(err, runquery.ErrInvalidQuery) {
				t.Errorf("StartBulkAction(%q): error %v does not wrap runquery.ErrInvalidQuery", tc.query, err)
			}
		}
		if page, _ := c.ListBulkActions(context.Background(), backend.ListBulkActionsParams{}); len(page.Data) != 0 {
			t.Fatalf("refused actions stored %d rows, want none", len(page.Data))
		}
	})
}

func TestBulkDeleteByAnOrQueryDeletesTheFinishedRunsItSelects(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend.Backend) {
		ctx := context.Background()
		c := ow.NewClient(b)
		create := func(name string) string {
			r, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: name})
			if err != nil {
				t.Fatal(err)
			}
			return r.ID
		}
		var gone []string
		for _, name := range []string{"del-a", "del-a", "del-b"} {
			id := create(name)
			if _, err := c.CancelRun(ctx, id); err != nil {
				t.Fatal(err)
			}
			gone = append(gone, id)
		}
		pendingA := create("del-a")
		otherID := create("del-c")
		if _, err := c.CancelRun(ctx, otherID); err != nil {
			t.Fatal(err)
		}
		query := `workflow = "del-a" OR workflow = "del-b"`
		dry, err := c.DryRunBulkAction(ctx, backend.BulkDelete, query)
		if err != nil || dry.Matched != 4 || dry.Eligible != 3 {
			t.Fatalf("DryRunBulkAction = %+v, %v; want 4 matched, 3 finished ones eligible", dry, err)
		}
		a, err := c.StartBulkAction(ctx, backend.BulkDelete, query, ow.BulkActionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		startWorker(t, b, ow.WorkerOptions{Concurrency: 1, BulkActionPoll: 20 * time.Millisecond})
		a = waitBulk(t, c, a.ID)
		if a.State != backend.BulkCompleted || a.Acted != 3 || a.Skipped != 0 {
			t.Fatalf("bulk delete = %+v, want completed with 3 acted", a)
		}
		for _, id := range gone {
			if _, err := b.GetWorkflowRun(ctx, id); !errors.Is(err, backend.ErrRunNotFound) {
				t.Errorf("run %s after the bulk delete: %v, want not found", id, err)
			}
		}
		for _, id := range []string{pendingA, otherID} {
			if _, err := b.GetWorkflowRun(ctx, id); err != nil {
				t.Errorf("run %s, which the delete does not select, is gone: %v", id, err)
			}
		}
	})
}
