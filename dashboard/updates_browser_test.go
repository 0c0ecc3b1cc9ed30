package dashboard_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// TestBrowserRunUpdates: a run's page lists the updates sent to it —
// name, id, state, input, and the result or the rejection's reason.
func TestBrowserRunUpdates(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		b := newTab(t, s)
		id := s.start("tally", "updates")
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		defer cancel()
		if _, err := s.c.UpdateRun(ctx, id, "add", 3, ow.WithUpdateID("add-three")); err != nil {
			t.Fatalf("update add 3: %v", err)
		}
		if _, err := s.c.UpdateRun(ctx, id, "add", -2, ow.WithUpdateID("add-minus-two")); !errors.Is(err, ow.ErrUpdateRejected) {
			t.Fatalf("update add -2: %v; want rejected", err)
		}
		b.open("/runs/" + id)
		b.until("the updates table", `document.querySelectorAll('#run-updates tbody tr').length === 2`)
		rows := eval[[]string](b, `[...document.querySelectorAll('#run-updates tbody tr')].map(r => r.innerText.replace(/\s+/g, ' ').trim())`)
		want := [][]string{{"add", "add-three", "completed", "3", `"added": 3`}, {"add", "add-minus-two", "rejected", "-2", "add a positive number, not -2"}}
		for i, w := range want {
			for _, sub := range w {
				if !strings.Contains(rows[i], sub) {
					t.Errorf("update row %d %q does not show %q", i, rows[i], sub)
				}
			}
		}
		b.screenshot(t.Name()[strings.LastIndex(t.Name(), "/")+1:] + "-run-updates")
	})
}
