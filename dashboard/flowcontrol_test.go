package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// fillFlowControl makes a pending debounced run (key cust-7) and an open
// batch (workflow greet, key eu, two items) on s.
func fillFlowControl(t *testing.T, s *site) string {
	t.Helper()
	h, err := s.c.StartByName(s.ctx, "greet", "", "ada", ow.WithDebounce(ow.Debounce{Key: "cust-7", Period: time.Hour, MaxDelay: 2 * time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []string{"a", "b"} {
		if _, err := s.c.EnqueueBatchItem(s.ctx, "greet", "", "eu", it, ow.BatchOptions{MaxSize: 10, Timeout: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"tenant-1", "tenant-1", "tenant-2"} {
		if _, err := s.c.StartByName(s.ctx, "greet", "", "bo", ow.WithFairness(key, 2)); err != nil {
			t.Fatal(err)
		}
	}
	return h.ID
}

// TestFlowControlPage: the page lists the pending debounced runs with
// their key, due time and deadline, and the open batches with their
// items, bytes and flush time; empty, it says how to make them.
func TestFlowControlPage(t *testing.T) {
	eachBackend(t, siteOptions{noWorker: true}, func(t *testing.T, s *site) {
		c := s.client()
		p := s.must(c, http.StatusOK, "GET", "/debounce-batches", nil)
		for _, want := range []string{"No debounced run is pending.", "ow.WithDebounce", "No batch is open.", "Spec.Batch", "No run was started under fair shares.", "ow.WithFairness"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the empty page does not show %q: %.2000s", want, p.body)
			}
		}
		runID := fillFlowControl(t, s)
		p = s.must(c, http.StatusOK, "GET", "/debounce-batches", nil)
		for _, want := range []string{`data-debounce-key="cust-7"`, `href="/runs/` + runID + `"`, `data-batch="greet/eu"`, "2 <span class=\"muted\">of 10</span>", "<time", `aria-current="page">Debounce`,
			`data-fair-key="tenant-1"`, `data-fair-key="tenant-2"`, `id="fair-vtime"`} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the page does not show %q: %.4000s", want, p.body)
			}
		}
	})
}

// TestBrowserFlowControl opens the page in Chromium from the navigation:
// the due time, deadline and flush time shown as times, with no script
// error or policy refusal.
func TestBrowserFlowControl(t *testing.T) {
	eachBackend(t, siteOptions{noWorker: true}, func(t *testing.T, s *site) {
		b := newTab(t, s)
		fillFlowControl(t, s)
		b.open("/")
		b.clickToLoad(`nav a[href="/debounce-batches"]`)
		if !eval[bool](b, `document.querySelector('tr[data-debounce-key="cust-7"] td.due time') !== null && document.querySelector('tr[data-debounce-key="cust-7"] td.deadline time') !== null`) {
			t.Fatalf("the debounced run's due time and deadline are not shown as times: %s", eval[string](b, `document.body.innerText`))
		}
		if !eval[bool](b, `document.querySelector('tr[data-batch="greet/eu"] td.flush time') !== null && document.querySelector('tr[data-batch="greet/eu"] td.items').textContent.includes('2')`) {
			t.Fatalf("the open batch is not shown: %s", eval[string](b, `document.body.innerText`))
		}
		if !eval[bool](b, `document.querySelector('tr[data-fair-key="tenant-1"] td.queued').textContent.trim() === '2' && document.querySelector('tr[data-fair-key="tenant-1"] td.oldest time') !== null`) {
			t.Fatalf("the fair queue of tenant-1 (2 queued runs, an oldest due time) is not shown: %s", eval[string](b, `document.body.innerText`))
		}
		b.screenshot("debounce-batches")
	})
}
