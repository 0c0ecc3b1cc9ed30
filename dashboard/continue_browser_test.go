package dashboard_test

import (
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

// TestBrowserContinuedRun: on both backends, the page of a run that
// continued as new links to its successor ("Continued as"), and the
// successor's page links back ("Continued from") with its place in the
// chain; following the links in Chromium walks the chain. Screenshots of
// the first and middle runs.
func TestBrowserContinuedRun(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		b := newTab(t, s)
		name := strings.TrimPrefix(t.Name(), "TestBrowserContinuedRun/")
		first := s.start("countdown", 2)
		r := s.waitStatus(first, "completed")
		second, ok := backend.ContinuedTo(r.Context)
		if !ok {
			t.Fatalf("run %s completed without continuing: output %s", first, r.Output)
		}
		r2 := s.waitStatus(second, "completed")
		third, ok := backend.ContinuedTo(r2.Context)
		if !ok {
			t.Fatalf("run %s completed without continuing: output %s", second, r2.Output)
		}
		s.waitStatus(third, "completed")

		b.open("/runs/" + first)
		if eval[bool](b, `!!document.querySelector('[data-fact="continued-from"]')`) {
			t.Error("the chain's first run shows a 'Continued from'")
		}
		if got := eval[string](b, `document.querySelector('[data-fact="continued-to"] a').getAttribute('href')`); got != "/runs/"+second {
			t.Fatalf("the first run's 'Continued as' links to %q, want /runs/%s", got, second)
		}
		if !eval[bool](b, `document.body.innerText.includes('Continued as new in ')`) {
			t.Error("the continued run's page does not say it continued as new")
		}
		b.screenshot(name + "-continued")
		b.clickToLoad(`[data-fact="continued-to"] a`)
		if got := eval[string](b, `document.getElementById('run-id').textContent`); got != second {
			t.Fatalf("following 'Continued as' opened run %q, want %s", got, second)
		}
		from := eval[string](b, `document.querySelector('[data-fact="continued-from"]').textContent`)
		if !strings.Contains(from, "link 1") {
			t.Errorf("the second run's 'Continued from' reads %q, want link 1", from)
		}
		if got := eval[string](b, `document.querySelector('[data-fact="continued-from"] a').getAttribute('href')`); got != "/runs/"+first {
			t.Errorf("the second run's 'Continued from' links to %q, want /runs/%s", got, first)
		}
		if got := eval[string](b, `document.querySelector('[data-fact="continued-to"] a').getAttribute('href')`); got != "/runs/"+third {
			t.Errorf("the second run's 'Continued as' links to %q, want /runs/%s", got, third)
		}
		b.screenshot(name + "-continued-middle")
		b.open("/runs/" + third)
		if eval[bool](b, `!!document.querySelector('[data-fact="continued-to"]')`) {
			t.Error("the chain's last run shows a 'Continued as'")
		}
	})
}
