package openworkflow

import (
	"context"
	"fmt"

	"github.com/openworkflow-go/openworkflow/backend"
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
	return es.PublishEvents(ctx, backend.PublishEventsParams{Events: ps, Matcher: eventMatcher})
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

// eventMatcher evaluates trigger and cancelOn conditions during a
// publish; nil until the CEL package is wired (every condition then fails
// to evaluate, recorded, no match).
var eventMatcher backend.EventMatcher
