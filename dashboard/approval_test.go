package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/openflow"
)

// approvalFlow suspends after module ask for one approval whose resume
// form wants a comment (and takes an optional urgency).
const approvalFlow = `{"summary":"Ship the release","value":{"modules":[
	{"id":"build","summary":"Build the release","value":{"type":"identity"}},
	{"id":"ask","summary":"Ask ops","value":{"type":"identity"},"suspend":{"required_events":1,"timeout":600,
	 "resume_form":{"schema":{"type":"object","properties":{
	  "comment":{"type":"string","title":"Comment","description":"Why it may ship"},
	  "urgency":{"type":"string","enum":["low","high"]},
	  "copies":{"type":"integer"}},"required":["comment"]}}}},
	{"id":"ship","summary":"Ship it","value":{"type":"identity"}}]}}`

// startFlow starts doc and waits until it waits on one module.
func (s *site) startFlow(doc string) (runID string, waiting openflow.SuspendedModule) {
	s.t.Helper()
	f, err := openflow.Parse([]byte(doc))
	if err != nil {
		s.t.Fatal(err)
	}
	h, err := s.flows.Start(s.ctx, s.c, f, json.RawMessage(`{}`), "test")
	if err != nil {
		s.t.Fatal(err)
	}
	var mods []openflow.SuspendedModule
	s.until("the flow to wait for approval", func() bool {
		mods, err = openflow.Suspended(s.ctx, s.c, h.ID)
		return err == nil && len(mods) == 1
	})
	return h.ID, mods[0]
}

// TestApproveAndRejectAFlow: a run waiting on an OpenFlow approval shows
// an approval form (the resume form's fields, Approve, Reject), not the
// generic Resume dialog; an approval without a required field is refused
// naming it, and nothing is delivered; Approve with it lets the flow
// finish, and Reject fails it with SuspendedDisapproved.
func TestApproveAndRejectAFlow(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		c := s.client()
		runID, w := s.startFlow(approvalFlow)
		page := s.must(c, http.StatusOK, "GET", "/runs/"+runID, nil).body
		for _, want := range []string{`id="run-approvals"`, `value="approve">Approve</button>`, `value="reject" formnovalidate>Reject</button>`,
			`name="f.comment"`, `<option>high</option>`, `type="number" step="1"`, "Why it may ship", "Approve or reject…"} {
			if !strings.Contains(page, want) {
				t.Errorf("the run page lacks %s", want)
			}
		}
		if strings.Contains(page, `data-token="`+w.Token+`"`) {
			t.Error("the run page offers the generic Resume dialog for the approval's hook")
		}

		form := url.Values{"token": {w.Token}, "decision": {"approve"}, "approver": {"ada"}, "f.comment": {""}, "f.copies": {"2"}}
		bad := s.must(c, http.StatusBadRequest, "POST", "/runs/"+runID+"/approve", form).body
		if !strings.Contains(bad, "comment") || !strings.Contains(bad, "nothing was delivered") {
			t.Errorf("an approval without its comment: the page does not say so:\n%.3000s", bad)
		}
		if !strings.Contains(bad, `value="ada"`) || !strings.Contains(bad, `value="2"`) {
			t.Error("the refused form does not keep what was typed")
		}
		if mods, err := openflow.Suspended(s.ctx, s.c, runID); err != nil || len(mods) != 1 || mods[0].Events != 0 {
			t.Fatalf("after a refused approval: %+v, %v; want the module waiting with 0 events", mods, err)
		}
		form.Set("f.comment", "tested")
		form.Set("f.urgency", "high")
		ok := s.must(c, http.StatusSeeOther, "POST", "/runs/"+runID+"/approve", form)
		if loc := ok.header.Get("Location"); !strings.Contains(loc, "done=approved") {
			t.Errorf("approve redirected to %q", loc)
		}
		s.waitStatus(runID, "completed")
		steps, err := s.c.ListSteps(s.ctx, backend.ListStepAttemptsParams{WorkflowRunID: runID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var event string
		for _, st := range steps.Data {
			if st.StepName == "ask@resume.0" {
				event = string(st.Output)
			}
		}
		var got struct {
			Data struct {
				Payload  map[string]any `json:"payload"`
				Approver string         `json:"approver"`
				Approved bool           `json:"approved"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(event), &got) != nil || !got.Data.Approved || got.Data.Approver != "ada" ||
			got.Data.Payload["comment"] != "tested" || got.Data.Payload["urgency"] != "high" || got.Data.Payload["copies"] != float64(2) {
			t.Errorf("the event received: %s", event)
		}

		runID, w = s.startFlow(approvalFlow)
		s.must(c, http.StatusSeeOther, "POST", "/runs/"+runID+"/approve", url.Values{"token": {w.Token}, "decision": {"reject"}, "approver": {"grace"}})
		failed := s.waitStatus(runID, "failed")
		if !strings.Contains(string(failed.Output)+string(failed.Error), "Disapproved by grace") {
			t.Errorf("the rejected run: output %s, error %s", failed.Output, failed.Error)
		}
	})
}
