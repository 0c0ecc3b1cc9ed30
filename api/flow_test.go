package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/openflow"
)

// TestFlowRunView: GET /v1/runs/{id}/flow answers an OpenFlow run as its
// flow's title and modules by id and summary, with their states, the
// loop's iterations and the branch taken; another run answers 404
// not_an_openflow_run.
func TestFlowRunView(t *testing.T) {
	doc := `{"summary":"Nightly report","value":{"modules":[
		{"id":"each","summary":"For each region","value":{"type":"forloopflow","iterator":{"type":"static","value":["eu","us"]},
		 "modules":[{"id":"count","value":{"type":"identity"}}]}},
		{"id":"pick","value":{"type":"branchone","branches":[{"summary":"weekend","expr":"false","modules":[{"id":"skip","value":{"type":"identity"}}]}],
		 "default":[{"id":"send","summary":"Send it","value":{"type":"identity"}}]}}]}}`
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		f, err := openflow.Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		h, err := s.flows.Start(s.ctx, s.c, f, json.RawMessage(`{}`), "nightly.flow.json")
		if err != nil {
			t.Fatal(err)
		}
		s.waitStatus(h.ID, "completed")
		var v api.FlowRun
		s.must(http.StatusOK, "GET", "/v1/runs/"+h.ID+"/flow", nil).decode(t, &v)
		if v.RunID != h.ID || v.Status != "completed" || v.Title != "Nightly report" || v.Source != "nightly.flow.json" || len(v.Modules) != 2 {
			t.Fatalf("view %+v", v)
		}
		loop, pick := v.Modules[0], v.Modules[1]
		if loop.ID != "each" || loop.Summary != "For each region" || loop.State != "completed" || loop.IterationCount != 2 || len(loop.Iterations) != 2 ||
			loop.Iterations[1].Modules[0].Key != "each[1]/count" || loop.Iterations[1].State != "completed" {
			t.Errorf("the loop: %+v", loop)
		}
		if pick.State != "completed" || len(pick.Branches) != 2 || pick.Branches[0].Chosen || !pick.Branches[1].Chosen ||
			pick.Branches[1].Modules[0].Summary != "Send it" || pick.Branches[1].Modules[0].State != "completed" || pick.Branches[0].State != "not_run" || pick.Branches[0].Modules[0].State != "not_run" {
			t.Errorf("the branch: %+v", pick)
		}

		other := s.start("echo", "hi")
		e := s.must(http.StatusNotFound, "GET", "/v1/runs/"+other.ID+"/flow", nil).apiError(t)
		if e.Code != api.CodeNotFlowRun || e.Field != "id" {
			t.Errorf("a run of another workflow: %+v", e)
		}
		e = s.must(http.StatusNotFound, "GET", "/v1/runs/wrun_01HZZZZZZZZZZZZZZZZZZZZZZZ/flow", nil).apiError(t)
		if e.Code != api.CodeNotFound {
			t.Errorf("an unknown run: %+v", e)
		}
	})
}
