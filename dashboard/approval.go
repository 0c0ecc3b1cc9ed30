package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/openworkflow-go/openworkflow/api"
)

// An OpenFlow run suspended for approval waits on a hook whose metadata
// is {"openflow": "suspend", "module", "requiredEvents", "summary",
// "resumeForm", "payloadSchema"} (openflow/suspend.go). Its payload must
// be a resume event {"approved", "approver", "payload"}: the generic
// Resume dialog, with its free JSON, is the wrong tool, so the run page
// shows an approval form instead — Approve (with the resume form's
// fields) and Reject — that builds the event. The API still checks the
// event against the hook's payloadSchema; its 400 shows beside the form.

// approvalMeta is the metadata of an OpenFlow suspend's hook.
type approvalMeta struct {
	OpenFlow       string          `json:"openflow"`
	Module         string          `json:"module"`
	RequiredEvents int             `json:"requiredEvents"`
	Summary        string          `json:"summary"`
	ResumeForm     json.RawMessage `json:"resumeForm"`
}

// approvalView is a suspended module waiting for approvals.
type approvalView struct {
	// Token is the hook's token, the form's target; ID an element id
	// derived from the hook's id.
	Token, ID string
	// Module is the module's durable key, Summary its summary.
	Module, Summary string
	// Events and Required count the events received and required.
	Events, Required int
	// Fields are the resume form's properties, in document order.
	Fields []formField
}

// formField is one property of a resume form.
type formField struct {
	// Name is the property; Label its title (the name when none).
	Name, Label, Description string
	// Kind is text, number, integer, boolean, select or json.
	Kind     string
	Required bool
	// Options are a select's values (an enum of strings).
	Options []string
	// Default is the field's initial value, as text.
	Default string
}

// approvalsOf returns the live OpenFlow suspend hooks of hooks that wait
// for more events.
func approvalsOf(hooks []api.Hook) []approvalView {
	var out []approvalView
	for _, h := range hooks {
		m, ok := approvalOf(h)
		if !ok || !h.Live || h.Payloads >= int64(m.RequiredEvents) {
			continue
		}
		out = append(out, approvalView{Token: h.Token, ID: "approve-" + h.ID, Module: m.Module, Summary: m.Summary,
			Events: int(h.Payloads), Required: m.RequiredEvents, Fields: resumeFields(m.ResumeForm)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Module < out[j].Module })
	return out
}

// approvalOf reads h's metadata as an OpenFlow suspend's.
func approvalOf(h api.Hook) (approvalMeta, bool) {
	var m approvalMeta
	if len(h.Metadata) == 0 || json.Unmarshal(h.Metadata, &m) != nil || m.OpenFlow != "suspend" || m.RequiredEvents < 1 {
		return approvalMeta{}, false
	}
	return m, true
}

// resumeFields lists the properties of a resume form's JSON Schema in the
// order the document gives them ("order", as Windmill writes it, first).
func resumeFields(schema json.RawMessage) []formField {
	if len(schema) == 0 {
		return nil
	}
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
		Order      []string        `json:"order"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	var props map[string]struct {
		Type        any               `json:"type"`
		Title       string            `json:"title"`
		Description string            `json:"description"`
		Enum        []json.RawMessage `json:"enum"`
		Default     json.RawMessage   `json:"default"`
	}
	if json.Unmarshal(s.Properties, &props) != nil {
		return nil
	}
	names := append([]string(nil), s.Order...)
	for _, k := range objectKeys(s.Properties) {
		if !contains(names, k) {
			names = append(names, k)
		}
	}
	var out []formField
	for _, name := range names {
		p, ok := props[name]
		if !ok {
			continue
		}
		f := formField{Name: name, Label: name, Description: p.Description, Required: contains(s.Required, name), Kind: "json"}
		if p.Title != "" {
			f.Label = p.Title
		}
		switch t, _ := p.Type.(string); t {
		case "string":
			f.Kind = "text"
			for _, e := range p.Enum {
				var v string
				if json.Unmarshal(e, &v) == nil {
					f.Options = append(f.Options, v)
				}
			}
			if len(f.Options) > 0 && len(f.Options) == len(p.Enum) {
				f.Kind = "select"
			} else {
				f.Options = nil
			}
		case "number", "integer", "boolean":
			f.Kind = t
		}
		if len(p.Default) > 0 {
			var str string
			if f.Kind != "json" && json.Unmarshal(p.Default, &str) == nil {
				f.Default = str
			} else {
				f.Default = string(p.Default)
			}
		}
		out = append(out, f)
	}
	return out
}

// objectKeys returns the keys of a JSON object in document order.
func objectKeys(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// approve posts an approval's decision (POST /runs/{id}/approve): the
// form's "decision" (approve or reject), "approver" and, for an
// approval, the resume form's fields ("f.<name>"), as one resume event
// to the hook of "token".
func (d *Dashboard) approve(w http.ResponseWriter, r *http.Request) {
	if !d.parseForm(w, r) {
		return
	}
	id := r.PathValue("id")
	decision := r.PostFormValue("decision")
	form := actionForm{Action: "approve", Token: r.PostFormValue("token"), Values: map[string]string{}}
	for k, v := range r.PostForm {
		if name, ok := strings.CutPrefix(k, "f."); ok && len(v) > 0 {
			form.Values[name] = v[0]
		}
	}
	form.Values["approver"] = r.PostFormValue("approver")
	bad := func(field, msg string) {
		d.actionFailed(w, r, id, &api.Error{Status: http.StatusBadRequest, Code: api.CodeInvalidArgument, Field: field, Message: msg}, form)
	}
	if form.Token == "" {
		bad("token", "Name the suspended module to approve (its hook token).")
		return
	}
	if decision != "approve" && decision != "reject" {
		bad("decision", "Choose Approve or Reject.")
		return
	}
	event := map[string]any{"approved": decision == "approve"}
	if who := strings.TrimSpace(form.Values["approver"]); who != "" {
		event["approver"] = who
	}
	if decision == "approve" {
		// The fields come from the hook's own resume form, read again:
		// the form's names say which to send and how to type them.
		var hook api.Hook
		if err := d.api.get(r.Context(), "/v1/hooks/"+url.PathEscape(form.Token), nil, &hook); err != nil {
			d.actionFailed(w, r, id, err, form)
			return
		}
		m, ok := approvalOf(hook)
		if !ok {
			bad("token", "This hook is not an OpenFlow approval: resume it from the Hooks table.")
			return
		}
		if fields := resumeFields(m.ResumeForm); fields != nil {
			payload := map[string]any{}
			for _, f := range fields {
				v, err := fieldValue(f, form.Values[f.Name])
				if err != nil {
					bad(f.Name, err.Error())
					return
				}
				if v != nil {
					payload[f.Name] = v
				}
			}
			event["payload"] = payload
		}
	}
	verb := map[string]string{"approve": "approved", "reject": "rejected"}[decision]
	var delivery api.HookDelivery
	d.runAction(w, r, "/v1/hooks/"+url.PathEscape(form.Token), event, &delivery, form,
		func() url.Values { return url.Values{"done": {verb}} })
}

// fieldValue types a form field's text as its schema says; nil leaves an
// empty optional field out (the schema says whether it may be).
func fieldValue(f formField, text string) (any, error) {
	if f.Kind == "boolean" {
		return text == "on" || text == "true", nil
	}
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	switch f.Kind {
	case "number":
		n, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number", f.Label, text)
		}
		return n, nil
	case "integer":
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an integer", f.Label, text)
		}
		return n, nil
	case "json":
		raw, problem := checkJSON(text)
		if problem != "" {
			return nil, fmt.Errorf("%s: %s", f.Label, problem)
		}
		return raw, nil
	}
	return text, nil
}
