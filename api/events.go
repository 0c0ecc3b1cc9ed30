package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/eventexpr"
)

// publishEventRequest is one event of POST /v1/events.
type publishEventRequest struct {
	// Name is required: 1 to 255 bytes of text.
	Name string `json:"name"`
	// Data is any JSON (absent: {}), at most 512 KiB.
	Data json.RawMessage `json:"data"`
	// Key is an optional key the event carries.
	Key *string `json:"key"`
	// IdempotencyKey deduplicates for 24 hours.
	IdempotencyKey *string `json:"idempotencyKey"`
}

// PublishedEvent is the answer for one event of POST /v1/events.
type PublishedEvent struct {
	// ID is the event's id; for a duplicate, the first event's.
	ID string `json:"id"`
	// Duplicate: the idempotency key was used within 24 hours; nothing
	// was stored or triggered.
	Duplicate bool `json:"duplicate"`
	// Started and Canceled are the runs the event started (triggers) and
	// canceled (cancelOn).
	Started  []string `json:"started"`
	Canceled []string `json:"canceled"`
}

// PublishEventsResult answers POST /v1/events: one entry per event, in
// the request's order.
type PublishEventsResult struct {
	Events []PublishedEvent `json:"events"`
}

// StoredEvent is an event as the API shows it; Effects only on GET
// /v1/events/{id}.
type StoredEvent struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	Data           json.RawMessage `json:"data"`
	Key            *string         `json:"key"`
	IdempotencyKey *string         `json:"idempotencyKey"`
	CreatedAt      time.Time       `json:"createdAt"`
	Effects        []EventEffect   `json:"effects,omitempty"`
}

// EventEffect is one thing an event did: started, woke or canceled a
// run, or a condition that failed to evaluate (error, with message).
type EventEffect struct {
	Kind          string    `json:"kind"`
	WorkflowName  string    `json:"workflowName"`
	WorkflowRunID *string   `json:"workflowRunId"`
	Message       *string   `json:"message"`
	CreatedAt     time.Time `json:"createdAt"`
}

// EventOf converts a backend record.
func EventOf(e *backend.EventRecord) StoredEvent {
	out := StoredEvent{ID: e.ID, Name: e.Name, Data: e.Data, Key: e.Key, IdempotencyKey: e.IdempotencyKey, CreatedAt: e.CreatedAt}
	for _, f := range e.Effects {
		out.Effects = append(out.Effects, EventEffect{Kind: string(f.Kind), WorkflowName: f.WorkflowName, WorkflowRunID: f.WorkflowRunID, Message: f.Message, CreatedAt: f.CreatedAt})
	}
	if e.Effects != nil && out.Effects == nil {
		out.Effects = []EventEffect{}
	}
	return out
}

// publishEvents serves POST /v1/events: one event object or an array of
// 1 to 5,000 (backend.MaxEventsPerPublish), each event's data at most
// 512 KiB, the whole body within Options.MaxBodyBytes. All are published
// in one transaction, or none (400 naming the event and field).
func (h *Handler) publishEvents(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	var raw json.RawMessage
	if err := decodeBody(r, &raw, false); err != nil {
		return err
	}
	var reqs []publishEventRequest
	trimmed := bytes.TrimSpace(raw)
	isArray := len(trimmed) > 0 && trimmed[0] == '['
	if isArray {
		if err := decodeJSON(trimmed, &reqs); err != nil {
			return err
		}
		if len(reqs) == 0 {
			return badField("", "the array of events is empty")
		}
		if len(reqs) > backend.MaxEventsPerPublish {
			return badField("", "%d events in one request, above the limit of %d", len(reqs), backend.MaxEventsPerPublish)
		}
	} else {
		var one publishEventRequest
		if err := decodeJSON(trimmed, &one); err != nil {
			return err
		}
		reqs = []publishEventRequest{one}
	}
	evs := make([]ow.Event, len(reqs))
	for i, req := range reqs {
		field := func(f string) string {
			if !isArray {
				return f
			}
			return fmt.Sprintf("[%d].%s", i, f)
		}
		if req.Name == "" || len(req.Name) > backend.MaxEventNameLength || !backend.ValidText(req.Name) {
			return badField(field("name"), "name is required: 1 to %d bytes of text", backend.MaxEventNameLength)
		}
		ev := ow.Event{Name: req.Name}
		if req.Data != nil {
			if len(req.Data) > backend.MaxEventDataBytes {
				return badField(field("data"), "data is %d bytes, above the limit of %d", len(req.Data), backend.MaxEventDataBytes)
			}
			if err := backend.ValidateJSON(req.Data); err != nil {
				return badField(field("data"), "data cannot be stored: %s", err)
			}
			ev.Data = req.Data
		}
		for _, k := range []struct {
			name string
			v    *string
			dst  *string
		}{{"key", req.Key, &ev.Key}, {"idempotencyKey", req.IdempotencyKey, &ev.IdempotencyKey}} {
			if k.v == nil {
				continue
			}
			if *k.v == "" || len(*k.v) > backend.MaxEventNameLength || !backend.ValidText(*k.v) {
				return badField(field(k.name), "%s must be 1 to %d bytes of text", k.name, backend.MaxEventNameLength)
			}
			*k.dst = *k.v
		}
		evs[i] = ev
	}
	out, err := h.c.PublishEvents(r.Context(), evs)
	if err != nil {
		return asAPIError(err, "")
	}
	res := PublishEventsResult{Events: make([]PublishedEvent, len(out))}
	for i, p := range out {
		res.Events[i] = PublishedEvent{ID: p.ID, Duplicate: p.Duplicate, Started: nonNil(p.Started), Canceled: nonNil(p.Canceled)}
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// listEvents serves GET /v1/events: newest first, ?name= filters,
// ?limit= and ?cursor= paginate.
func (h *Handler) listEvents(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, "limit", "cursor", "name")
	if err != nil {
		return err
	}
	limit, err := q.limit(backend.DefaultPageSize)
	if err != nil {
		return err
	}
	cursor := q.str("cursor")
	if _, err := backend.DecodeEventCursor(cursor); err != nil {
		return badField("cursor", "cursor %q is not one this route answered; pass back the cursor of the previous page", cursor)
	}
	page, err := h.c.ListEvents(r.Context(), backend.ListEventsParams{Name: q.str("name"), Limit: limit, After: cursor})
	if err != nil {
		return asAPIError(err, "")
	}
	// An event's data is listed with it within the page's byte budget.
	budget := backend.PageBudget{Max: h.opts.MaxListBytes}
	for i := range page.Data {
		if !budget.Fits(len(page.Data[i].Data)) && i > 0 {
			next := backend.EventCursor(page.Data[i-1].Seq)
			page.Data, page.Next = page.Data[:i], &next
			break
		}
	}
	writeJSON(w, http.StatusOK, listOf(page.Data, page.Next, EventOf))
	return nil
}

// getEvent serves GET /v1/events/{id}: the event and what it did.
func (h *Handler) getEvent(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := noQuery(r); err != nil {
		return err
	}
	ev, err := h.c.GetEvent(r.Context(), id)
	if errors.Is(err, backend.ErrEventNotFound) {
		return errorf(http.StatusNotFound, CodeNotFound, "id", "no event %q", id)
	}
	if err != nil {
		return asAPIError(err, "")
	}
	if ev.Effects == nil {
		ev.Effects = []backend.EventEffect{}
	}
	writeJSON(w, http.StatusOK, EventOf(ev))
	return nil
}

// EventTrigger is a stored trigger (kind start) or cancelOn declaration
// (kind cancel) of a workflow.
type EventTrigger struct {
	WorkflowName string  `json:"workflowName"`
	Version      *string `json:"version"`
	Kind         string  `json:"kind"`
	EventName    string  `json:"eventName"`
	Condition    string  `json:"condition"`
	// Singleton is the singleton start each triggered run is (the
	// workflow's Spec.Singleton); absent: none.
	Singleton *backend.Singleton `json:"singleton,omitempty"`
	// Batch is the batch a matching event is appended to instead of
	// starting a run (the workflow's Spec.Batch); absent: none.
	Batch      *TriggerBatch `json:"batch,omitempty"`
	DeclaredBy string        `json:"declaredBy"`
	UpdatedAt  time.Time     `json:"updatedAt"`
}

// TriggerBatch is a batched trigger's backend.BatchOptions in the API's
// terms (as POST /v1/batches takes them): the timeout in seconds.
type TriggerBatch struct {
	MaxSize        int     `json:"maxSize"`
	TimeoutSeconds float64 `json:"timeoutSeconds"`
	MaxBytes       int     `json:"maxBytes"`
}

// EventTriggersRequest is the body of PUT /v1/event-triggers/{workflow}:
// the workflow's triggers and cancelOn declarations, replacing the stored
// ones ([ow.Client.DeclareEventTriggers]).
type EventTriggersRequest struct {
	// Version is the version triggered runs start with (absent:
	// unversioned).
	Version string `json:"version"`
	// Triggers start a run per matching event; CancelOn cancel the
	// active runs whose input matches. At most 10 each.
	Triggers []TriggerDeclaration `json:"triggers"`
	CancelOn []TriggerDeclaration `json:"cancelOn"`
}

// TriggerDeclaration is one trigger or cancelOn declaration: the event
// name and an optional CEL condition ([ow.EventTrigger]).
type TriggerDeclaration struct {
	Event string `json:"event"`
	If    string `json:"if"`
}

// EventTriggersResult is the answer of PUT /v1/event-triggers/{workflow}:
// whether the stored set changed, and the workflow's declarations as
// stored.
type EventTriggersResult struct {
	Changed bool           `json:"changed"`
	Data    []EventTrigger `json:"data"`
}

// putEventTriggers serves PUT /v1/event-triggers/{workflow}: each
// declaration's event name and CEL condition are checked first, a bad one
// answered 400 naming it (field triggers[i].if, the CEL issue's
// line:column in the message), and nothing is stored.
func (h *Handler) putEventTriggers(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	workflow, err := pathID(r, "workflow")
	if err != nil {
		return err
	}
	var req EventTriggersRequest
	if err := decodeBody(r, &req, false); err != nil {
		return err
	}
	if req.Version != "" && (len(req.Version) > backend.MaxVersionLength || !backend.ValidText(req.Version)) {
		return badField("version", "version must be at most %d bytes of text", backend.MaxVersionLength)
	}
	conv := func(what string, ds []TriggerDeclaration) ([]ow.EventTrigger, error) {
		if len(ds) > backend.MaxEventTriggersPerWorkflow {
			return nil, badField(what, "%d declarations, above the limit of %d", len(ds), backend.MaxEventTriggersPerWorkflow)
		}
		out := make([]ow.EventTrigger, len(ds))
		for i, d := range ds {
			if err := (backend.PublishEventParams{Name: d.Event}).Validate(); err != nil {
				return nil, badField(fmt.Sprintf("%s[%d].event", what, i), "event must be 1 to %d bytes of text", backend.MaxEventNameLength)
			}
			if d.If != "" {
				if len(d.If) > backend.MaxEventConditionLength || !backend.ValidText(d.If) {
					return nil, badField(fmt.Sprintf("%s[%d].if", what, i), "the condition must be at most %d bytes of text", backend.MaxEventConditionLength)
				}
				if _, err := eventexpr.Compile(d.If); err != nil {
					return nil, badField(fmt.Sprintf("%s[%d].if", what, i), "%s[%d] on event %q: the condition does not compile: %v", what, i, d.Event, err)
				}
			}
			out[i] = ow.EventTrigger{Event: d.Event, If: d.If}
		}
		return out, nil
	}
	triggers, err := conv("triggers", req.Triggers)
	if err != nil {
		return err
	}
	cancelOn, err := conv("cancelOn", req.CancelOn)
	if err != nil {
		return err
	}
	changed, err := h.c.DeclareEventTriggers(r.Context(), workflow, req.Version, triggers, cancelOn)
	if err != nil {
		return asAPIError(err, "")
	}
	ts, err := h.c.ListEventTriggers(r.Context(), workflow)
	if err != nil {
		return asAPIError(err, "")
	}
	writeJSON(w, http.StatusOK, EventTriggersResult{Changed: changed, Data: apiTriggers(ts)})
	return nil
}

// apiTriggers are stored declarations as the API shows them.
func apiTriggers(ts []backend.EventTrigger) []EventTrigger {
	out := make([]EventTrigger, 0, len(ts))
	for _, t := range ts {
		et := EventTrigger{WorkflowName: t.WorkflowName, Version: t.Version, Kind: string(t.Kind), EventName: t.EventName,
			Condition: t.Condition, Singleton: t.Singleton, DeclaredBy: t.DeclaredBy, UpdatedAt: t.UpdatedAt}
		if t.Batch != nil {
			et.Batch = &TriggerBatch{MaxSize: t.Batch.MaxSize, TimeoutSeconds: t.Batch.Timeout.Seconds(), MaxBytes: t.Batch.MaxBytes}
		}
		out = append(out, et)
	}
	return out
}

// listEventTriggers serves GET /v1/event-triggers (?workflow= filters).
func (h *Handler) listEventTriggers(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, "workflow")
	if err != nil {
		return err
	}
	ts, err := h.c.ListEventTriggers(r.Context(), q.str("workflow"))
	if err != nil {
		return asAPIError(err, "")
	}
	out := List[EventTrigger]{Data: apiTriggers(ts)}
	writeJSON(w, http.StatusOK, out)
	return nil
}
