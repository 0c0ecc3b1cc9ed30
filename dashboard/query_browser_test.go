package dashboard_test

import (
	"strings"
	"testing"

	ow "github.com/openworkflow-go/openworkflow"
)

// TestBrowserRunQuery: on both backends, in Chromium, the runs page's
// query box lists the runs a query selects (the query kept in the URL
// and the box), a bad query is shown under the box with its line, column
// and a caret (not a 500), and a run's page shows its search attributes,
// each a link to the runs with that value; screenshots of each.
func TestBrowserRunQuery(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		b := newTab(t, s)
		name := strings.TrimPrefix(t.Name(), "TestBrowserRunQuery/")
		ada := s.start("greet", "ada", ow.WithSearchAttributes(map[string]any{"customer": "c-42", "tags": []string{"eu", "vip"}, "amount": 12}))
		grace := s.start("greet", "grace", ow.WithSearchAttributes(map[string]any{"customer": "c-42", "amount": 3}))
		linus := s.start("greet", "linus", ow.WithSearchAttributes(map[string]any{"customer": "c-7", "amount": 40}))
		for _, id := range []string{ada, grace, linus} {
			s.waitStatus(id, "completed")
		}

		query := `status = "completed" AND workflow = "greet" AND attrs.customer = "c-42" AND created > "2026-01-01"`
		b.open("/")
		b.setValue("f-query", query)
		b.clickToLoad(`.filters button[type=submit]`)
		if got := eval[string](b, `new URLSearchParams(location.search).get('query')`); got != query {
			t.Errorf("the URL keeps the query %q, want %q", got, query)
		}
		if got := eval[string](b, `document.getElementById('f-query').value`); got != query {
			t.Errorf("the box holds %q after the search, want the query", got)
		}
		b.until("the two runs of c-42", rowCount+` === 2`)
		got := eval[string](b, `[...document.querySelectorAll('#runs-table a.run-link')].map(a => a.textContent).join(' ')`)
		if got != grace+" "+ada {
			t.Errorf("the query listed %q, want %s %s", got, grace, ada)
		}
		b.screenshot(name + "-runquery")

		bad := `status = "completed" AND attrs.amount = "twelve"`
		b.setValue("f-query", bad)
		b.clickToLoad(`.filters button[type=submit]`)
		b.until("the query's error under the box", `!!document.querySelector('#f-query-error.query-error')`)
		msg := eval[string](b, `document.querySelector('#f-query-error').innerText`)
		for _, want := range []string{"Line 1, column 41", "attrs.amount has type int", bad, "^"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the query's error %q does not say %q", msg, want)
			}
		}
		if eval[string](b, `document.getElementById('f-query').getAttribute('aria-invalid')`) != "true" {
			t.Error("the box is not marked invalid")
		}
		if got := eval[string](b, `document.querySelector('h1').textContent`); got != "Runs" {
			t.Errorf("a bad query shows %q, not the runs page", got)
		}
		b.screenshot(name + "-runquery-error")

		b.open("/runs/" + ada)
		b.until("the search attributes", `!!document.querySelector('[data-fact="search-attributes"]')`)
		facts := eval[string](b, `document.querySelector('[data-fact="search-attributes"]').innerText`)
		for _, want := range []string{`attrs.customer = "c-42"`, `attrs.amount = 12`, `attrs.tags = ["eu","vip"]`} {
			if !strings.Contains(facts, want) {
				t.Errorf("the run's attributes %q do not show %q", facts, want)
			}
		}
		b.screenshot(name + "-run-search-attributes")
		b.clickToLoad(`[data-fact="search-attributes"] a[title]`) // attrs.amount, the first by name
		b.until("the runs with amount 12", rowCount+` === 1`)
		if got := eval[string](b, `document.querySelector('#runs-table a.run-link').textContent`); got != ada {
			t.Errorf("the attribute's link listed %s, want %s", got, ada)
		}
	})
}
