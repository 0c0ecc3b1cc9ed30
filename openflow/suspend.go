package openflow

// This file is the seam between OpenFlow's suspend/resume and the core:
// a suspended module creates a hook (ow.CreateHook, a random token) and
// receives its resume events from it, so an event sent before the module
// waits is kept, and a resume reaches the run by the hook's token — from
// Resume, `ow flow resume`, `ow hooks resume`, or POST /v1/hooks/{token}
// of the HTTP API. The rest of the interpreter only calls suspendAfter.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// DefaultSuspendTimeout is how long a suspended module waits for its
// resume events when its suspend sets no timeout: 1800 s, as in Windmill.
const DefaultSuspendTimeout = 1800 * time.Second

// suspendHook is the metadata of a suspended module's hook: what Resume
// and Suspended look hooks up by, and what the dashboard draws its
// Approve and Reject form from.
type suspendHook struct {
	OpenFlow       string `json:"openflow"` // "suspend"
	Module         string `json:"module"`   // the module's durable key
	RequiredEvents int    `json:"requiredEvents"`
	// Summary is the module's summary, for whoever approves.
	Summary string `json:"summary,omitempty"`
	// ResumeForm is the suspend's resume_form.schema, if any.
	ResumeForm json.RawMessage `json:"resumeForm,omitempty"`
	// PayloadSchema is what every resume event must match (see
	// eventSchema): the core refuses other payloads when they are sent.
	PayloadSchema json.RawMessage `json:"payloadSchema"`
}

// eventSchema is the JSON Schema of a resume event (resumeEvent): an
// object with "approved" (required, a boolean), "approver" (a string or
// null) and "payload", which form (the suspend's resume_form.schema,
// nil for none) must accept when the event approves. Anything else — a
// bare string, {} (which would read as a disapproval), a misspelt member
// — is refused where it is sent, so the run keeps waiting instead of
// failing on an event it cannot read.
func eventSchema(form json.RawMessage) json.RawMessage {
	s := map[string]any{
		"type":                 "object",
		"required":             []string{"approved"},
		"additionalProperties": false,
		"properties": map[string]any{
			"approved": map[string]any{"type": "boolean"},
			"approver": map[string]any{"type": []string{"string", "null"}},
			"payload":  true,
		},
	}
	if form != nil {
		s["if"] = map[string]any{"properties": map[string]any{"approved": map[string]any{"const": true}}}
		s["then"] = map[string]any{"properties": map[string]any{"payload": form}}
	}
	out, _ := json.Marshal(s)
	return out
}

// resumeEvent is a payload of a suspended module's hook:
// {"payload": any, "approver": "…", "approved": bool}.
type resumeEvent struct {
	Payload  json.RawMessage `json:"payload"`
	Approver *string         `json:"approver"`
	Approved bool            `json:"approved"`
}

// suspendAfter waits for the resume events of module m (durable key key)
// after it succeeded (reference §3.10): required_events approvals, within
// the suspend's timeout counted from the start of the wait. It returns
// what the next module sees (resume, resumes, approvers), or the module's
// failure on a disapproval or a timeout (SuspendedDisapproved,
// SuspendedTimedOut), unless continue_on_disapprove_timeout appends that
// error to resumes and goes on.
func (r *flowRun) suspendAfter(f *frame, m *Module, key string) (resumeState, *outcome, error) {
	sp := m.Suspend
	start, err := runStep(r, f, key+"@suspend", func(context.Context) (time.Time, error) {
		return r.e.opts.Now().UTC(), nil
	})
	if err != nil {
		return resumeState{}, nil, err
	}
	timeout := DefaultSuspendTimeout
	if sp.Timeout > 0 {
		timeout = seconds(sp.Timeout)
	}
	deadline := start.Add(timeout)
	hook, err := ow.CreateHook[resumeEvent](r.ctx, key+"@hook",
		ow.WithMetadata(suspendHook{OpenFlow: "suspend", Module: key, RequiredEvents: sp.RequiredEvents, Summary: m.Summary,
			ResumeForm: sp.ResumeForm, PayloadSchema: eventSchema(sp.ResumeForm)}))
	if err != nil {
		return resumeState{}, nil, err
	}
	var rs resumeState
	for i := 0; i < sp.RequiredEvents; i++ {
		remaining := max(deadline.Sub(r.e.opts.Now()), time.Millisecond)
		ev, got, err := hook.Receive(ow.WithStepName(fmt.Sprintf("%s@resume.%d", key, i)), ow.WithTimeout(remaining))
		if err != nil {
			return resumeState{}, nil, err
		}
		var refused json.RawMessage
		switch {
		case !got:
			refused = failure(errorObject("SuspendedTimedOut", "Timed out waiting to be resumed"))
		case !ev.Approved:
			who := "unknown"
			if ev.Approver != nil && *ev.Approver != "" {
				who = *ev.Approver
			}
			refused = failure(errorObject("SuspendedDisapproved", "Disapproved by "+who))
		}
		if refused != nil {
			if sp.ContinueOnDisapproveTimeout {
				rs.Resumes = append(rs.Resumes, refused)
				return rs, nil, nil
			}
			return resumeState{}, &outcome{result: refused, failed: true, noRetry: true}, nil
		}
		payload := ev.Payload
		if len(payload) == 0 {
			payload = json.RawMessage("null")
		}
		approver := "anonymous"
		if ev.Approver != nil && *ev.Approver != "" {
			approver = *ev.Approver
		}
		rs.Resumes = append(rs.Resumes, payload)
		rs.Approvers = append(rs.Approvers, approver)
	}
	return rs, nil, nil
}

// ResumeEvent approves (or disapproves) a suspended module of a run.
type ResumeEvent struct {
	// Payload is the event's JSON payload (resume in the next module's
	// expressions); empty means null.
	Payload json.RawMessage
	// Approver names who resumes; "" is anonymous (and "unknown" in a
	// disapproval's message).
	Approver string
	// Disapprove cancels instead of approving: the flow fails with
	// SuspendedDisapproved (unless the suspend continues on disapproval).
	Disapprove bool
	// Module is the durable key of the suspended module (as listed by
	// [Suspended]); "" means the run's only suspended module.
	Module string
}

// ErrNotSuspended is returned (wrapped) by [Resume] when the run has no
// module waiting for a resume event.
var ErrNotSuspended = errors.New("the run is not waiting for a resume event")

// SuspendedModule is a module of a run waiting for resume events.
type SuspendedModule struct {
	// Module is the module's durable key, e.g. "a" or "loop[2]/approve".
	Module string `json:"module"`
	// Since is when the module suspended.
	Since time.Time `json:"since"`
	// Token is its hook's token: POST /v1/hooks/{token} with a JSON
	// {"payload", "approver", "approved": true} resumes it, as Resume does.
	Token string `json:"token"`
	// Events and RequiredEvents count the resume events delivered so far
	// and those the module waits for.
	Events         int `json:"events"`
	RequiredEvents int `json:"requiredEvents"`
}

// Suspended lists the modules of run runID waiting for resume events now:
// those whose hook is live (the run has not ended) and has fewer events
// than the module requires.
func Suspended(ctx context.Context, c *ow.Client, runID string) ([]SuspendedModule, error) {
	hooks, err := c.ListHooks(ctx, runID)
	if err != nil {
		return nil, err
	}
	var out []SuspendedModule
	for _, h := range hooks {
		var md suspendHook
		if !h.Live || json.Unmarshal(h.Metadata, &md) != nil || md.OpenFlow != "suspend" || h.Payloads >= int64(md.RequiredEvents) {
			continue
		}
		out = append(out, SuspendedModule{Module: md.Module, Since: h.CreatedAt, Token: h.Token, Events: int(h.Payloads), RequiredEvents: md.RequiredEvents})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Module < out[j].Module })
	return out, nil
}

// Resume delivers a resume event to a suspended module of run runID and
// returns the module's key. It fails with an error wrapping
// [ErrNotSuspended] when no module waits (the run has not reached its
// suspend yet, or has finished), or when ev.Module is empty and several
// modules wait (the error lists them). A delivered event is durable: the
// run is woken and reads it on its next pass.
func Resume(ctx context.Context, c *ow.Client, runID string, ev ResumeEvent) (string, error) {
	if len(ev.Payload) > 0 && !json.Valid(ev.Payload) {
		return "", fmt.Errorf("resume run %s: the payload is not JSON", runID)
	}
	waiting, err := Suspended(ctx, c, runID)
	if err != nil {
		return "", fmt.Errorf("resume run %s: %w", runID, err)
	}
	var target *SuspendedModule
	switch {
	case len(waiting) == 0:
		return "", fmt.Errorf("resume run %s: %w (it has not reached its suspend yet, or it finished)", runID, ErrNotSuspended)
	case ev.Module == "" && len(waiting) > 1:
		var names []string
		for _, w := range waiting {
			names = append(names, w.Module)
		}
		return "", fmt.Errorf("resume run %s: %d modules wait (%s): name one", runID, len(waiting), strings.Join(names, ", "))
	case ev.Module == "":
		target = &waiting[0]
	default:
		for i := range waiting {
			if waiting[i].Module == ev.Module {
				target = &waiting[i]
			}
		}
		if target == nil {
			return "", fmt.Errorf("resume run %s: module %s: %w", runID, ev.Module, ErrNotSuspended)
		}
	}
	data := resumeEvent{Payload: ev.Payload, Approved: !ev.Disapprove}
	if len(data.Payload) == 0 {
		data.Payload = json.RawMessage("null")
	}
	if ev.Approver != "" {
		data.Approver = &ev.Approver
	}
	if _, _, err := c.ResumeHook(ctx, target.Token, data); err != nil {
		if errors.Is(err, ow.ErrHookNotFound) {
			return "", fmt.Errorf("resume run %s: module %s: %w (the run ended)", runID, target.Module, ErrNotSuspended)
		}
		return "", fmt.Errorf("resume run %s, module %s: %w", runID, target.Module, err)
	}
	return target.Module, nil
}
