package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
)

// graphFlow has a loop of three iterations, a branchone that takes its
// default, a module waiting for approval and one after it, the last
// without an id (it gets "_1").
const graphFlow = `{"summary":"Nightly report","value":{"modules":[
	{"id":"each","summary":"For each region","value":{"type":"forloopflow","iterator":{"type":"static","value":["eu","us","asia"]},
	 "modules":[{"id":"count","summary":"Count the orders","value":{"type":"identity"}},{"id":"sum","value":{"type":"identity"}}]}},
	{"id":"pick","summary":"Weekend or not","value":{"type":"branchone","branches":[
	  {"summary":"weekend","expr":"false","modules":[{"id":"rest","value":{"type":"identity"}}]}],
	 "default":[{"id":"send","summary":"Send the report","value":{"type":"identity"}}]}},
	{"id":"ask","summary":"Ask the editor","value":{"type":"identity"},"suspend":{"required_events":1,"timeout":600}},
	{"value":{"type":"identity"}}]}}`

// TestFlowRunPage: an OpenFlow run's page is titled with the flow's
// summary, not "openflow", and draws its modules by id and summary with
// their states: the loop's iterations, the branch taken, the module
// waiting for approval.
func TestFlowRunPage(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		runID, _ := s.startFlow(graphFlow)
		page := s.must(s.client(), http.StatusOK, "GET", "/runs/"+runID, nil).body
		for _, want := range []string{
			`<h1>Nightly report`, `<title>Nightly report`, `id="run-flow"`,
			`<span class="fm-id mono">each</span> <span class="fm-summary">For each region</span>`,
			`3 of 3 iterations begun; showing iteration 2`, `title="iteration 0: completed"`, `id="fm-each[2]/count"`,
			`weekend`, `default <span class="fm-chosen">· taken</span>`, `id="fm-pick/default/send"`,
			`<li class="fm fm-waiting" id="fm-ask">`, `0 of 1 approval`, `<li class="fm fm-pending" id="fm-_1">`,
		} {
			if !strings.Contains(page, want) {
				t.Errorf("the flow run's page lacks %s", want)
			}
		}
		if t.Failed() {
			i := strings.Index(page, `id="run-flow"`)
			t.Logf("the flow section:\n%.6000s", page[max(i, 0):])
		}
		// Another run has no flow section.
		other := s.start("greet", "ada")
		if body := s.must(s.client(), http.StatusOK, "GET", "/runs/"+other, nil).body; strings.Contains(body, `class="flow-graph"`) {
			t.Error("a run of a Go workflow shows a flow graph")
		}
	})
}
