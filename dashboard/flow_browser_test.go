package dashboard_test

import (
	"strings"
	"testing"
)

// TestBrowserFlowRun: on both backends, an OpenFlow run's page in
// Chromium is titled with the flow's summary and draws its modules, the
// loop's iterations and the branch taken; approving it from the page
// turns its waiting module completed. Screenshots, light and dark.
func TestBrowserFlowRun(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		b := newTab(t, s)
		name := strings.TrimPrefix(t.Name(), "TestBrowserFlowRun/")
		runID, _ := s.startFlow(graphFlow)
		b.open("/runs/" + runID)
		b.until("the flow graph", `!!document.querySelector('#run-flow .flow-graph')`)
		if got := eval[string](b, `document.querySelector('#run-head h1').textContent.trim()`); got != "Nightly report" {
			t.Errorf("the page's heading is %q, want the flow's summary", got)
		}
		if got := eval[string](b, `document.title`); !strings.HasPrefix(got, "Nightly report") {
			t.Errorf("the page's title is %q", got)
		}
		ids := eval[string](b, `[...document.querySelectorAll('#run-flow .flow-graph:not(.nested) > .fm > .fm-box .fm-id')].map(e => e.textContent).join(',')`)
		if ids != "each,pick,ask,_1" {
			t.Errorf("the top-level modules drawn: %s", ids)
		}
		if n := eval[int](b, `document.querySelectorAll('#fm-each .fm-chips .chip.s-completed').length`); n != 3 {
			t.Errorf("the loop shows %d completed iterations, want 3", n)
		}
		if got := eval[string](b, `document.querySelector('#fm-pick .fm-branch.chosen .fm-branch-head').textContent`); !strings.Contains(got, "default") {
			t.Errorf("the branch marked taken: %q", got)
		}
		// Drawn, not just present: the waiting module's box is visible.
		if h := eval[float64](b, `document.querySelector('#fm-ask > .fm-box').getBoundingClientRect().height`); h < 20 {
			t.Errorf("the waiting module's box is %v px high", h)
		}
		b.screenshot(name + "-flow")
		b.colorScheme("dark")
		b.screenshot(name + "-flow-dark")
		b.colorScheme("light")

		b.setValue(eval[string](b, `document.querySelector('#run-approvals input[name="approver"]').id`), "ada")
		b.clickToLoad(`#run-approvals button[value="approve"]`)
		s.waitStatus(runID, "completed")
		b.until("the approved module completed", `!!document.querySelector('#fm-ask.fm-completed') && !!document.querySelector('#fm-_1.fm-completed')`)
		b.screenshot(name + "-flow-completed")
	})
}
