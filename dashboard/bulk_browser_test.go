package dashboard_test

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestBrowserBulkCancel walks an operator through a bulk cancel in
// Chromium: the runs list searched with the query box, "Select all
// matching…", the action chosen, the confirmation page with the count,
// then the action's page following its progress live to the end.
// Screenshots: bulk-*-list.png, bulk-*-confirm.png, *-bulk-progress.png, *-bulk-done.png.
func TestBrowserBulkCancel(t *testing.T) {
	eachBackend(t, siteOptions{noWorker: true}, func(t *testing.T, s *site) {
		const n = 300
		ctx := context.Background()
		ps := make([]backend.CreateWorkflowRunParams, n)
		for i := range ps {
			ps[i] = backend.CreateWorkflowRunParams{WorkflowName: "nightly-sync"}
		}
		if _, err := s.b.CreateWorkflowRuns(ctx, ps); err != nil {
			t.Fatal(err)
		}
		if _, err := s.b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "other"}); err != nil {
			t.Fatal(err)
		}
		// A worker that runs no workflow but drives bulk actions, in pages
		// of 20, so that the progress is seen moving.
		w := ow.NewWorker(s.b, ow.WorkerOptions{Concurrency: 1, BulkActionPage: 20, BulkActionPoll: 50 * time.Millisecond, SkipSchedules: true})
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Stop(context.Background()) })

		b := newTab(t, s)
		name := "bulk-" + t.Name()[len("TestBrowserBulkCancel/"):]
		b.open("/?query=" + url.QueryEscape(`workflow = "nightly-sync"`))
		b.until("the list of the query box", `document.querySelector('#bulk-select-all') !== null`)
		b.screenshot(name + "-list")
		b.clickToLoad("#bulk-select-all")
		if got := eval[string](b, `document.getElementById('b-query').value`); got != `workflow = "nightly-sync"` {
			t.Fatalf("the bulk form's query is %q, want the list's filter as a query", got)
		}
		b.do("choose cancel", chromedp.SetValue(chromedp.CSS("#b-op"), "cancel"))
		b.clickToLoad("#bulk-form button[type=submit]")
		b.until("the confirmation with its count", `document.getElementById('bulk-eligible') && document.getElementById('bulk-eligible').innerText.trim() === '300'`)
		if got := eval[string](b, `document.getElementById('bulk-confirm-button').innerText`); got != "cancel 300 runs" {
			t.Errorf("the confirm button reads %q, want %q", got, "cancel 300 runs")
		}
		b.setValue("b-reason", "the sync is broken; stop its runs")
		b.setValue("b-rate", "150")
		b.screenshot(name + "-confirm")

		b.clickToLoad("#bulk-confirm-button")
		b.until("some pages applied, the action still running", `(() => {
			const acted = parseInt(document.getElementById('bulk-acted').innerText.replace(/,/g, ''), 10);
			return acted >= 60 && acted < 300 && document.getElementById('bulk-progress').innerText.includes('running');
		})()`)
		b.screenshot(name + "-progress")
		b.until("the action completed, live", `document.getElementById('bulk-progress').innerText.includes('completed') &&
			document.getElementById('bulk-acted').innerText.trim() === '300'`)
		if v := eval[string](b, `String(document.getElementById('bulk-bar').value) + '/' + String(document.getElementById('bulk-bar').max)`); v != "300/300" {
			t.Errorf("the progress bar stands at %s, want 300/300", v)
		}
		if eval[bool](b, `document.getElementById('bulk-cancel') !== null`) {
			t.Errorf("the completed action still offers Cancel")
		}
		b.screenshot(name + "-done")

		page, err := s.b.ListWorkflowRuns(ctx, backend.ListWorkflowRunsParams{WorkflowName: "nightly-sync", Status: backend.RunCanceled, Limit: 1000})
		if err != nil || len(page.Data) != n {
			t.Fatalf("%d nightly-sync runs canceled (%v), want %d", len(page.Data), err, n)
		}
		b.open("/bulk-actions")
		b.until("the action listed", `document.querySelectorAll('#bulk-table tbody tr').length === 1 && document.querySelector('#bulk-table tbody tr').innerText.includes(`+strconv.Quote("completed")+`)`)
	})
}
