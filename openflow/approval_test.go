package openflow_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/openflow"
)

// approvalFlow suspends after module a for one approval whose payload
// its resume form wants as {"comment": string}; module b returns the
// resume.
const approvalFlow = `{"summary":"approve a deploy","value":{"modules":[
	{"id":"a","summary":"ask","value":{"type":"identity"},"suspend":{"required_events":1,"timeout":600,
	 "resume_form":{"schema":{"type":"object","properties":{"comment":{"type":"string"}},"required":["comment"]}}}},
	{"id":"b","summary":"deploy","value":{"type":"rawscript","language":"python3","content":"def main(x):\n    return x",
	 "input_transforms":{"x":{"type":"javascript","expr":"resume"}}}}]}}`

// waitSuspended waits until run runID waits on one module and returns it.
func (e *flowEnv) waitSuspended(runID string) openflow.SuspendedModule {
	e.t.Helper()
	var waiting []openflow.SuspendedModule
	waitFor(e.ctx, e.t, "the module to be suspended", func() bool {
		var err error
		if waiting, err = openflow.Suspended(e.ctx, e.client, runID); err != nil {
			e.t.Fatal(err)
		}
		return len(waiting) == 1
	})
	return waiting[0]
}

// TestResumeRefusesAPayloadTheFlowCannotRead: a resume event that is not
// an event ("x"), one without "approved" ({}, which used to disapprove),
// and an approval whose payload the resume form refuses are all refused
// where they are sent, naming what is wrong; nothing is delivered and the
// flow keeps waiting, so the good event that follows completes it.
func TestResumeRefusesAPayloadTheFlowCannotRead(t *testing.T) {
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			runID := env.start([]byte(approvalFlow), `{}`)
			w := env.waitSuspended(runID)

			bad := []struct {
				name string
				send func() error
				want string // in the error
			}{
				{"a bare string by token", func() error {
					_, _, err := env.client.ResumeHook(env.ctx, w.Token, "x")
					return err
				}, "got string, want object"},
				{"an empty object by token", func() error {
					_, _, err := env.client.ResumeHook(env.ctx, w.Token, map[string]any{})
					return err
				}, "approved"},
				{"a misspelt member by token", func() error {
					_, _, err := env.client.ResumeHook(env.ctx, w.Token, map[string]any{"approved": true, "aprover": "ada", "payload": map[string]string{"comment": "ok"}})
					return err
				}, "aprover"},
				{"an approval without the form's field", func() error {
					_, err := openflow.Resume(env.ctx, env.client, runID, openflow.ResumeEvent{Payload: json.RawMessage(`{}`)})
					return err
				}, "comment"},
				{"an approval with the field of the wrong type", func() error {
					_, err := openflow.Resume(env.ctx, env.client, runID, openflow.ResumeEvent{Payload: json.RawMessage(`{"comment": 5}`)})
					return err
				}, "payload.comment"},
			}
			for _, c := range bad {
				err := c.send()
				if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: error %v; want an invalid argument naming %q", c.name, err, c.want)
				}
			}
			// Payloads count as soon as they are stored: read at once.
			now, err := openflow.Suspended(env.ctx, env.client, runID)
			if err != nil {
				t.Fatal(err)
			}
			if len(now) != 1 || now[0].Events != 0 {
				t.Fatalf("after the refused events the run waits on %+v; want module a with 0 events (nothing delivered)", now)
			}
			// A rejection needs no form: only approvals carry it.
			if _, err := openflow.Resume(env.ctx, env.client, runID, openflow.ResumeEvent{Payload: json.RawMessage(`{"comment":"fine"}`), Approver: "ada"}); err != nil {
				t.Fatal(err)
			}
			res := env.wait(runID)
			if !res.Success || !jsonEqual(res.Result, []byte(`{"comment":"fine"}`)) {
				t.Errorf("result %s (success %v), want the approval's payload\nsteps:\n%s", res.Result, res.Success, env.describeSteps(runID))
			}
		})
	}
}

// TestRejectNeedsNoForm: a rejection is valid without the resume form's
// fields, and fails the flow with SuspendedDisapproved.
func TestRejectNeedsNoForm(t *testing.T) {
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			runID := env.start([]byte(approvalFlow), `{}`)
			env.waitSuspended(runID)
			if _, err := openflow.Resume(env.ctx, env.client, runID, openflow.ResumeEvent{Disapprove: true, Approver: "grace"}); err != nil {
				t.Fatal(err)
			}
			res := env.wait(runID)
			want := `{"error":{"name":"SuspendedDisapproved","message":"Disapproved by grace"}}`
			if res.Success || !jsonEqual(res.Result, []byte(want)) {
				t.Errorf("result %s (success %v), want %s", res.Result, res.Success, want)
			}
		})
	}
}

// TestResumeFormMustBeASchema: a resume_form whose schema is not a JSON
// Schema is a validation problem at its path.
func TestResumeFormMustBeASchema(t *testing.T) {
	_, err := openflow.Parse([]byte(`{"value":{"modules":[{"id":"a","value":{"type":"identity"},
		"suspend":{"required_events":1,"resume_form":{"schema":{"type":"nonsense"}}}}]}}`))
	if err == nil || !strings.Contains(err.Error(), "value.modules[0].suspend.resume_form.schema") {
		t.Fatalf("parse: %v; want a problem at value.modules[0].suspend.resume_form.schema", err)
	}
}
