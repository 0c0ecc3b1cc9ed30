package openworkflow

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/eventexpr"
)

// Event is one event to publish with [Client.PublishEvents].
type Event struct {
	// Name is the event's name, e.g. "order.created"; required, at most
	// backend.MaxEventNameLength bytes.
	Name string
	// Data is the payload, JSON-encoded (a json.RawMessage is kept as
	// it is); nil publishes {}. At most backend.MaxEventDataBytes
	// (512 KiB, as Inngest) once encoded.
	Data any
	// Key is an optional key the event carries: the runs it starts get
	// it as their concurrency key, so per-key limits apply to it.
	Key string
	// IdempotencyKey, when set, deduplicates for 24 hours
	// (backend.EventDedupPeriod, as Inngest's event id): a second publish
	// with it is acknowledged with the first event's id
	// (PublishedEvent.Duplicate) and stores and triggers nothing.
	IdempotencyKey string
}

// PublishOptions are the options of [Client.PublishEvent].
type PublishOptions struct {
	// Key is [Event.Key].
	Key string
	// IdempotencyKey is [Event.IdempotencyKey].
	IdempotencyKey string
}

// eventStore returns the client's backend as an EventStore, or an error
// wrapping backend.ErrNotSupported.
func (c *Client) eventStore(op string) (backend.EventStore, error) {
	es, ok := c.b.(backend.EventStore)
	if !ok {
		return nil, fmt.Errorf("%s: %w: the backend (%T) stores no events (backend.EventStore)", op, backend.ErrNotSupported, c.b)
	}
	return es, nil
}

// PublishEvent publishes one event named name with data (JSON-encoded)
// and returns its id and the runs it started and canceled. In the same
// transaction as the event is stored, every workflow whose trigger
// ([Spec.Triggers]) matches starts exactly one run with the event as
// input, the active runs matching a cancelOn declaration ([Spec.CancelOn])
// are canceled, and runs waiting for the event get it. A condition that
// fails to evaluate is no match, recorded on the event
// ([Client.GetEvent]); it never fails the publish. Errors wrap
// backend.ErrInvalidArgument for a bad name, key or payload (nothing is
// stored), backend.ErrNotSupported for a backend without events.
func (c *Client) PublishEvent(ctx context.Context, name string, data any, opts PublishOptions) (*backend.PublishedEvent, error) {
	out, err := c.PublishEvents(ctx, []Event{{Name: name, Data: data, Key: opts.Key, IdempotencyKey: opts.IdempotencyKey}})
	if err != nil {
		return nil, err
	}
	return &out[0], nil
}

// PublishEvents publishes events in one transaction, in order (at most
// backend.MaxEventsPerPublish, 5,000), as [Client.PublishEvent] does each:
// one answer per event, in order. One invalid event fails the whole
// publish and stores nothing.
func (c *Client) PublishEvents(ctx context.Context, events []Event) ([]backend.PublishedEvent, error) {
	es, err := c.eventStore("publish events")
	if err != nil {
		return nil, err
	}
	ps := make([]backend.PublishEventParams, len(events))
	for i, e := range events {
		p := backend.PublishEventParams{Name: e.Name}
		if e.Data != nil {
			if p.Data, err = encodeValue(e.Data); err != nil {
				return nil, fmt.Errorf("publish event %d (%q): data: %w: %w", i, e.Name, backend.ErrInvalidArgument, err)
			}
		}
		if e.Key != "" {
			p.Key = &e.Key
		}
		if e.IdempotencyKey != "" {
			p.IdempotencyKey = &e.IdempotencyKey
		}
		ps[i] = p
	}
	return es.PublishEvents(ctx, backend.PublishEventsParams{Events: ps, Matcher: &celMatcher{}})
}

// GetEvent returns the event with what it did: the runs it started, woke
// and canceled, and the conditions that failed to evaluate on it. An
// unknown id gives an error wrapping backend.ErrEventNotFound.
func (c *Client) GetEvent(ctx context.Context, eventID string) (*backend.EventRecord, error) {
	es, err := c.eventStore("get event")
	if err != nil {
		return nil, err
	}
	return es.GetEvent(ctx, eventID)
}

// ListEvents lists events newest first, a page at a time (see
// [backend.ListEventsParams]).
func (c *Client) ListEvents(ctx context.Context, p backend.ListEventsParams) (*backend.Page[backend.EventRecord], error) {
	es, err := c.eventStore("list events")
	if err != nil {
		return nil, err
	}
	return es.ListEvents(ctx, p)
}

// ListEventTriggers lists the stored triggers and cancelOn declarations,
// of one workflow when workflowName is set.
func (c *Client) ListEventTriggers(ctx context.Context, workflowName string) ([]backend.EventTrigger, error) {
	es, err := c.eventStore("list event triggers")
	if err != nil {
		return nil, err
	}
	return es.ListEventTriggers(ctx, workflowName)
}

// celMatcher evaluates trigger and cancelOn conditions during one
// publish with package eventexpr (compiled programs cached by source),
// decoding each event's data once.
type celMatcher struct {
	data map[*backend.EventRecord]any
}

// Match implements [backend.EventMatcher]: condition sees event (name,
// id, key, data, time) and input (the run's input decoded from JSON; null
// for a trigger).
func (m *celMatcher) Match(ctx context.Context, condition string, ev *backend.EventRecord, input json.RawMessage) (bool, error) {
	x, err := eventexpr.Compile(condition)
	if err != nil {
		return false, err
	}
	data, ok := m.data[ev]
	if !ok {
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			return false, fmt.Errorf("decode the data of event %s: %w", ev.ID, err)
		}
		if m.data == nil {
			m.data = map[*backend.EventRecord]any{}
		}
		m.data[ev] = data
	}
	var in any
	if len(input) > 0 {
		if err := json.Unmarshal(input, &in); err != nil {
			return false, fmt.Errorf("decode the run's input: %w", err)
		}
	}
	var key string
	if ev.Key != nil {
		key = *ev.Key
	}
	return x.Match(ctx, eventexpr.Event{Name: ev.Name, ID: ev.ID, Key: key, Data: data, Time: ev.CreatedAt}, in)
}

// EventTrigger declares events that start a workflow's runs
// ([Spec.Triggers]) or cancel them ([Spec.CancelOn]), as Inngest's
// triggers and cancelOn.
type EventTrigger struct {
	// Event is the event name; required.
	Event string
	// If is an optional CEL condition (package eventexpr): over event
	// (name, id, key, data, time) for a trigger, e.g.
	// `event.data.amount > 100.0`; over event and input (the run's input)
	// for cancelOn, e.g. `event.data.orderId == input.orderId`. Empty
	// always matches. It is compiled and type-checked when the workflow
	// is registered; a runtime error on an event is no match, recorded on
	// the event.
	If string
}

// checkEventTriggers compiles the triggers and cancelOn declarations of
// s, naming the workflow, the declaration and the CEL issue on error.
func checkEventTriggers(s Spec) error {
	if len(s.Triggers) > 0 && s.Singleton != nil && s.Batch != nil {
		return fmt.Errorf("workflow %s: Spec.Triggers with both Spec.Singleton and Spec.Batch: a triggered event is batched or starts a singleton run, not both: %w", s, backend.ErrInvalidArgument)
	}
	for _, d := range []struct {
		what string
		ts   []EventTrigger
	}{{"Triggers", s.Triggers}, {"CancelOn", s.CancelOn}} {
		if len(d.ts) > backend.MaxEventTriggersPerWorkflow {
			return fmt.Errorf("workflow %s: Spec.%s has %d entries, above the limit of %d: %w", s, d.what, len(d.ts), backend.MaxEventTriggersPerWorkflow, backend.ErrInvalidArgument)
		}
		for i, t := range d.ts {
			if err := (backend.PublishEventParams{Name: t.Event}).Validate(); err != nil {
				return fmt.Errorf("workflow %s: Spec.%s[%d]: %w", s, d.what, i, err)
			}
			if t.If == "" {
				continue
			}
			if _, err := eventexpr.Compile(t.If); err != nil {
				return fmt.Errorf("workflow %s: Spec.%s[%d] on event %q: condition does not compile: %w: %w", s, d.what, i, t.Event, backend.ErrInvalidArgument, err)
			}
		}
	}
	return nil
}

// storedTriggers are the declarations of s as a backend stores them: a
// trigger carries the workflow's Spec.Batch or Spec.Singleton, so that
// every publisher applies them to the runs it starts.
func storedTriggers(s Spec) []backend.EventTrigger {
	var out []backend.EventTrigger
	for _, t := range s.Triggers {
		out = append(out, backend.EventTrigger{WorkflowName: s.Name, Version: versionPtr(s.Version), Kind: backend.TriggerStart, EventName: t.Event, Condition: t.If,
			Singleton: s.Singleton, Batch: s.Batch})
	}
	for _, t := range s.CancelOn {
		out = append(out, backend.EventTrigger{WorkflowName: s.Name, Version: versionPtr(s.Version), Kind: backend.TriggerCancel, EventName: t.Event, Condition: t.If})
	}
	return out
}

// startTriggers stores the triggers and cancelOn declarations of the
// registered workflows (Worker.Start), so that every publisher of the
// namespace sees them. A workflow registered without any leaves stored
// ones in force (as limits: an old deployment restarting mid-rollout does
// not remove them); Client.DeleteEventTriggers removes them.
func (w *Worker) startTriggers(ctx context.Context) error {
	w.reg.mu.RLock()
	byName := map[string]Spec{}
	var conflict error
	for _, d := range w.reg.defs {
		s := d.Spec()
		if len(s.Triggers)+len(s.CancelOn) == 0 {
			continue
		}
		if prev, ok := byName[s.Name]; ok && conflict == nil {
			conflict = fmt.Errorf("openworkflow: workflow %q: versions %q and %q both declare event triggers; declare them on one version (the one triggered runs start)", s.Name, prev.Version, s.Version)
		}
		byName[s.Name] = s
	}
	w.reg.mu.RUnlock()
	if conflict != nil || len(byName) == 0 {
		return conflict
	}
	es, ok := w.b.(backend.EventStore)
	if !ok {
		return fmt.Errorf("openworkflow: workflows declare event triggers, but the backend (%T) stores no events (backend.EventStore): %w", w.b, backend.ErrNotSupported)
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		s := byName[name]
		changed, err := es.PutEventTriggers(ctx, name, storedTriggers(s), w.limitsDeclarer(name))
		if err != nil {
			return fmt.Errorf("openworkflow: store the event triggers of workflow %q: %w", name, err)
		}
		if changed {
			w.log.Info("openworkflow: stored the event triggers of a workflow", "workflow", name, "triggers", len(s.Triggers), "cancel_on", len(s.CancelOn))
		}
	}
	return nil
}

// DeclareEventTriggers stores the triggers and cancelOn declarations of
// workflowName (runs started with version; "" unversioned) as a worker
// registering a workflow with [Spec.Triggers] and [Spec.CancelOn] stores
// them, replacing the stored set, for a workflow no Go worker of this
// process registers: one executed by TypeScript workers, or by an
// interpreter of stored definitions (DAG, OpenFlow). The conditions are
// compiled first: an error wraps backend.ErrInvalidArgument and names the
// declaration (Triggers[i] or CancelOn[i]), its event, and the CEL issue's
// line:column, and nothing is stored. A Go worker registering the workflow
// with other declarations replaces these at its start. It reports whether
// the stored set changed.
func (c *Client) DeclareEventTriggers(ctx context.Context, workflowName, version string, triggers, cancelOn []EventTrigger) (bool, error) {
	es, err := c.eventStore("declare event triggers")
	if err != nil {
		return false, err
	}
	s := Spec{Name: workflowName, Version: version, Triggers: triggers, CancelOn: cancelOn}
	if err := checkEventTriggers(s); err != nil {
		return false, fmt.Errorf("declare event triggers: %w", err)
	}
	return es.PutEventTriggers(ctx, workflowName, storedTriggers(s), "api")
}

// DeleteEventTriggers removes the stored triggers and cancelOn
// declarations of workflowName (a worker registering it with
// declarations stores them again at its start). It reports whether there
// were any.
func (c *Client) DeleteEventTriggers(ctx context.Context, workflowName string) (bool, error) {
	es, err := c.eventStore("delete event triggers")
	if err != nil {
		return false, err
	}
	return es.PutEventTriggers(ctx, workflowName, nil, "")
}
