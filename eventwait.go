package openworkflow

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/eventexpr"
)

// ReceivedEvent is the event a [WaitForEvent] received, its data decoded
// into T.
type ReceivedEvent[T any] struct {
	// ID is the event's id ("evt_" + ULID).
	ID string `json:"id"`
	// Name is the event's name.
	Name string `json:"name"`
	// Data is the event's payload decoded into T.
	Data T `json:"data"`
	// Key is the event's key, nil when it has none.
	Key *string `json:"key,omitempty"`
	// CreatedAt is when it was published (UTC, milliseconds).
	CreatedAt time.Time `json:"createdAt"`
}

// WithLookback lets a [WaitForEvent] also take an event of its name
// published up to d before the wait started (as Hatchet's
// consider_events_since): the oldest such stored event whose match holds
// is delivered at once. Without it (or with d <= 0) only events published
// after the wait started are delivered, as Inngest's waitForEvent (an
// event published just before the wait is missed: inngest/inngest#1433).
// At most backend.MaxLookback (7 days); the window's first
// backend.MaxLookbackEvents (1,000) events are read.
func WithLookback(d time.Duration) WaitOption {
	return func(o *waitOptions) { o.lookback = d }
}

// eventWaitContext is the context of an event-wait attempt,
// {"kind":"event-wait","event","match","timeoutAt","lookbackMs"}.
type eventWaitContext struct {
	Kind       string `json:"kind"`
	Event      string `json:"event"`
	Match      string `json:"match"`
	TimeoutAt  string `json:"timeoutAt"`
	LookbackMs int64  `json:"lookbackMs,omitempty"`
}

// WaitForEvent waits durably for the next published event named event
// (Client.PublishEvent) whose match holds, and returns it with
// received=true; after timeout (<= 0: [DefaultWaitTimeout]) it returns
// received=false. match is a CEL expression over event (name, data, key,
// id, time) and input (this run's input), "" for any event of the name;
// see package eventexpr, e.g.
//
//	ev, ok, err := ow.WaitForEvent[Payment](ctx, "payment.settled",
//		`event.data.orderId == input.orderId`, 24*time.Hour)
//
// The wait is a step (named after the event, or [WithStepName]): the run
// parks and holds no worker slot until a matching event or the timeout,
// and a replay returns the same event. One event wakes every wait it
// matches; a wait takes one event. Only events published after the wait
// started are delivered, unless [WithLookback]. A match with an equality
// event.<path> == <expression over input> is indexed, so a publish finds
// it without evaluating the other waits; waits without one are evaluated
// on each publish of the name, at most backend.MaxUnindexedWaitsPerPublish
// of them (docs/wait-for-event.md).
//
// A match that does not compile or is not a bool fails the step without
// retry (a *eventexpr.CompileError naming line and column). A match that
// fails on an event (a missing key, say) does not match it; the error is
// recorded on the event and the wait. The backend must implement
// backend.EventWaiter, or the step fails with backend.ErrNotSupported.
func WaitForEvent[T any](ctx Context, event, match string, timeout time.Duration, opts ...WaitOption) (ev ReceivedEvent[T], received bool, err error) {
	var zero ReceivedEvent[T]
	x, err := execOf(ctx)
	if err != nil {
		return zero, false, err
	}
	o := newWaitOptions(opts)
	name := o.name
	if name == "" {
		name = event
	}
	key := x.hist.Resolve(name)
	result := func(raw json.RawMessage) (ReceivedEvent[T], bool, error) {
		if len(raw) == 0 || string(raw) == "null" {
			return zero, false, nil
		}
		v, err := decodeOutput[ReceivedEvent[T]](key, raw)
		return v, err == nil, err
	}
	if a, ok := x.hist.Completed(key); ok {
		return result(a.Output)
	}
	fail := func(err error) (ReceivedEvent[T], bool, error) {
		return zero, false, NonRetryable(fmt.Errorf("wait for event %q (step %q): %w", event, key, err))
	}
	ew, ok := x.b.(backend.EventWaiter)
	if !ok {
		return fail(fmt.Errorf("%w: the backend cannot wait for events", backend.ErrNotSupported))
	}
	p := backend.OpenEventWaitParams{WorkflowRunID: x.run.ID, WorkflowName: x.run.WorkflowName, StepName: key,
		EventName: event, Match: match, Input: x.run.Input, Lookback: o.lookback, Matcher: &celMatcher{}}
	if match != "" {
		expr, err := eventexpr.Compile(match)
		if err != nil {
			return fail(err)
		}
		if ks := expr.IndexKeys(); len(ks) > 0 {
			if v, ok, err := ks[0].Value(x.ctx, decodeInput(x.run.Input)); err == nil && ok {
				pk := ks[0].PathKey()
				p.IndexPath, p.IndexValue = &pk, &v
			}
		}
	}
	check := p
	check.StepAttemptID = "(not created yet)"
	if err := check.Validate(); err != nil {
		return fail(err)
	}
	a, ok := x.hist.Running(key)
	if !ok {
		if timeout <= 0 {
			timeout = DefaultWaitTimeout
		}
		at := backend.FormatTime(x.now().Add(timeout))
		if a, err = x.createAttempt(key, backend.StepEventWait, eventWaitContext{Kind: "event-wait", Event: event, Match: match,
			TimeoutAt: at, LookbackMs: o.lookback.Milliseconds()}, false); err != nil {
			return zero, false, err
		}
	}
	at, _ := waitTime(a)
	p.StepAttemptID, p.TimeoutAt = a.ID, at
	w, err := ew.OpenEventWait(x.ctx, p)
	if err != nil {
		return zero, false, x.backendErr(fmt.Sprintf("open the wait for event %q", event), err)
	}
	if w.Open() && !x.now().Before(at) {
		if w, err = ew.CloseEventWait(x.ctx, a.ID); err != nil {
			return zero, false, x.backendErr(fmt.Sprintf("time out the wait for event %q", event), err)
		}
	}
	var out json.RawMessage
	switch {
	case w.EventID != nil:
		out = w.Event
	case w.ClosedAt != nil:
		out = json.RawMessage("null")
	default:
		return zero, false, x.suspend(at)
	}
	x.completeAttempt(a, out)
	return result(out)
}

// decodeInput is a run's JSON input as a CEL match's input sees it (nil
// for none or for input that does not decode).
func decodeInput(raw json.RawMessage) any {
	var v any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &v)
	}
	return v
}

// ListEventWaits returns the event waits ([WaitForEvent]) of run runID,
// open or done, oldest first; the backend must implement
// backend.EventWaiter, or the error wraps backend.ErrNotSupported.
func (c *Client) ListEventWaits(ctx context.Context, runID string) ([]backend.EventWait, error) {
	ew, ok := c.b.(backend.EventWaiter)
	if !ok {
		return nil, fmt.Errorf("list event waits: %w: the backend cannot wait for events", backend.ErrNotSupported)
	}
	return ew.ListEventWaits(ctx, runID)
}
