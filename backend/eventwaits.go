package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrEventWaitNotFound: no event wait is stored for that step attempt.
var ErrEventWaitNotFound = errors.New("event wait not found")

// StepEventWait is this SDK's step kind of ow.WaitForEvent: a wait for the
// next event of a name whose match holds (context {"kind":"event-wait",
// "event","match","timeoutAt","lookbackMs"?}, output the event as
// [TriggeredRunInput] writes it, or null on timeout). Its open state lives
// in go_event_waits (go migration 19), read by [EventWaiter].
const StepEventWait StepKind = "event-wait"

// Limits of event waits.
const (
	// MaxUnindexedWaitsPerPublish bounds the waits of one event name whose
	// match has no indexable equality (no event.<path> == <input expr>
	// conjunct) that one published event is evaluated against, oldest
	// first: 1,000. Beyond it an event reaches only the oldest 1,000 of
	// them; give such waits an equality conjunct to index them.
	MaxUnindexedWaitsPerPublish = 1000
	// MaxLookbackEvents bounds the stored events a look-back wait reads
	// when it starts, oldest first: 1,000.
	MaxLookbackEvents = 1000
	// MaxLookback is the longest look-back window: 7 days.
	MaxLookback = 7 * 24 * time.Hour
)

// OpenEventWaitParams are the inputs of [EventWaiter.OpenEventWait].
type OpenEventWaitParams struct {
	// WorkflowRunID, WorkflowName and StepName identify the waiting run
	// and step; StepAttemptID is the running event-wait attempt (the
	// wait's key).
	WorkflowRunID, WorkflowName, StepName, StepAttemptID string
	// EventName is the name of the events waited for.
	EventName string
	// Match is the CEL match (package eventexpr), "" for any event.
	Match string
	// Input is the run's JSON input, which the match reads as input.
	Input json.RawMessage
	// IndexPath and IndexValue are the match's first index key
	// (eventexpr.IndexKey.PathKey and its canonical value for Input); both
	// nil when it has none.
	IndexPath, IndexValue *string
	// Lookback, when positive, makes stored events of the name published
	// up to Lookback before the wait's start candidates too (as Hatchet's
	// consider_events_since); at most [MaxLookback].
	Lookback time.Duration
	// TimeoutAt is when the wait times out.
	TimeoutAt time.Time
	// Matcher evaluates Match on the look-back's stored events.
	Matcher EventMatcher
}

// Validate checks p; the error wraps [ErrInvalidArgument].
func (p OpenEventWaitParams) Validate() error {
	if p.WorkflowRunID == "" || p.StepAttemptID == "" {
		return fmt.Errorf("%w: event wait: run and step attempt ids are required", ErrInvalidArgument)
	}
	if err := (PublishEventParams{Name: p.EventName}).Validate(); err != nil {
		return fmt.Errorf("event wait: %w", err)
	}
	if len(p.Match) > MaxEventConditionLength {
		return fmt.Errorf("%w: event wait on %q: the match is %d bytes, above the limit of %d", ErrInvalidArgument, p.EventName, len(p.Match), MaxEventConditionLength)
	}
	if p.Lookback < 0 || p.Lookback > MaxLookback {
		return fmt.Errorf("%w: event wait on %q: look-back %s is outside 0 to %s", ErrInvalidArgument, p.EventName, p.Lookback, MaxLookback)
	}
	if (p.IndexPath == nil) != (p.IndexValue == nil) {
		return fmt.Errorf("%w: event wait on %q: index path and value go together", ErrInvalidArgument, p.EventName)
	}
	return nil
}

// EventWait is one wait of ow.WaitForEvent as stored in go_event_waits.
type EventWait struct {
	// StepAttemptID is the event-wait attempt; WorkflowRunID its run.
	StepAttemptID string `json:"stepAttemptId"`
	WorkflowRunID string `json:"workflowRunId"`
	// StepName is the wait's step.
	StepName string `json:"stepName"`
	// EventName and Match are what it waits for.
	EventName string `json:"eventName"`
	Match     string `json:"match"`
	// IndexPath is the indexed equality's path (JSON array), nil when the
	// match has none.
	IndexPath *string `json:"indexPath,omitempty"`
	// SinceAt is the start of its look-back window, nil without one.
	SinceAt *time.Time `json:"sinceAt,omitempty"`
	// TimeoutAt is its deadline; CreatedAt when it started.
	TimeoutAt time.Time `json:"timeoutAt"`
	CreatedAt time.Time `json:"createdAt"`
	// EventID and Event are the delivered event (Event as
	// [TriggeredRunInput]), nil while open or after a timeout.
	EventID     *string         `json:"eventId,omitempty"`
	Event       json.RawMessage `json:"event,omitempty"`
	DeliveredAt *time.Time      `json:"deliveredAt,omitempty"`
	// ClosedAt is when it timed out, nil otherwise.
	ClosedAt *time.Time `json:"closedAt,omitempty"`
	// LastError is the last error evaluating its match on an event.
	LastError *string `json:"lastError,omitempty"`
}

// Open reports whether the wait still waits.
func (w *EventWait) Open() bool { return w.EventID == nil && w.ClosedAt == nil }

// EventWaiter is an optional capability of a [Backend] that is also an
// [EventStore]: the waits of ow.WaitForEvent (go migration 19). Every
// [EventStore.PublishEvents] delivers each new event, in its transaction,
// to the open waits of its name whose match holds (found by their index
// key, plus at most [MaxUnindexedWaitsPerPublish] without one), at most
// one event per wait, wakes their runs and records [EffectWoke]. Both
// built-in backends implement it.
type EventWaiter interface {
	// OpenEventWait stores the wait of p.StepAttemptID if it is not stored
	// yet (a replay finds it as it was) and returns it. A new wait sees
	// events published after it; with p.Lookback it is first delivered
	// the oldest stored event of its name since then whose match holds.
	OpenEventWait(ctx context.Context, p OpenEventWaitParams) (*EventWait, error)
	// CloseEventWait ends the wait of stepAttemptID at its timeout unless
	// an event was delivered first, and returns it: Event set when it was
	// delivered, ClosedAt otherwise. An unknown attempt fails with an
	// error wrapping [ErrEventWaitNotFound].
	CloseEventWait(ctx context.Context, stepAttemptID string) (*EventWait, error)
	// ListEventWaits returns the waits of a run, oldest first.
	ListEventWaits(ctx context.Context, workflowRunID string) ([]EventWait, error)
}
