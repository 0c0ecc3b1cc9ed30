package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits of events, as Inngest's (pkg/consts/consts.go): an event's data
// is at most 512 KiB, a publish carries at most 5,000 events, and an
// idempotency key deduplicates for 24 hours.
const (
	// MaxEventNameLength is the longest event name, key or idempotency
	// key, in bytes.
	MaxEventNameLength = 255
	// MaxEventDataBytes is the largest event data, in bytes of JSON.
	MaxEventDataBytes = 512 << 10
	// MaxEventsPerPublish is the most events one PublishEvents takes.
	MaxEventsPerPublish = 5000
	// EventDedupPeriod is how long an event's idempotency key
	// deduplicates: a publish with the key of an event published within
	// it is acknowledged with that event's id and stores and triggers
	// nothing (Inngest's 24 h).
	EventDedupPeriod = 24 * time.Hour
	// MaxEventConditionLength is the longest CEL condition of a trigger or
	// cancelOn declaration, in bytes (the reference's 4 KiB, §7.5).
	MaxEventConditionLength = 4 << 10
	// MaxEventTriggersPerWorkflow is the most triggers, and separately the
	// most cancelOn declarations, one workflow declares (Inngest allows 10
	// triggers and 5 cancellations; we allow 10 of each).
	MaxEventTriggersPerWorkflow = 10
)

// ErrEventNotFound: no stored event has that id in this namespace.
var ErrEventNotFound = errors.New("event not found")

// EventRecord is one published event, as stored in go_events.
type EventRecord struct {
	// NamespaceID is the namespace the event was published in.
	NamespaceID string `json:"namespaceId"`
	// ID is the event's id ("evt_" + ULID).
	ID string `json:"id"`
	// Seq orders the namespace's events: a later publish has a higher seq.
	Seq int64 `json:"seq"`
	// Name is the event's name, e.g. "order.created".
	Name string `json:"name"`
	// Data is the event's JSON payload ({} when published without one),
	// byte for byte as published.
	Data json.RawMessage `json:"data"`
	// Key is the optional key the event carries (for flow control by key).
	Key *string `json:"key,omitempty"`
	// IdempotencyKey is the key the event was deduplicated by, while its
	// row keeps it (it is cleared when a later publish reuses it after
	// [EventDedupPeriod]).
	IdempotencyKey *string `json:"idempotencyKey,omitempty"`
	// CreatedAt is when it was published (UTC, milliseconds).
	CreatedAt time.Time `json:"createdAt"`
	// Effects are what the event did, oldest first; filled by
	// [EventStore.GetEvent] only.
	Effects []EventEffect `json:"effects,omitempty"`
}

// EventEffectKind says what an event did to a run.
type EventEffectKind string

// The kinds of [EventEffect].
const (
	// EffectStarted: a trigger of the workflow started the run.
	EffectStarted EventEffectKind = "started"
	// EffectWoke: the event was delivered to a run waiting for it.
	EffectWoke EventEffectKind = "woke"
	// EffectCanceled: a cancelOn declaration of the workflow canceled the
	// run.
	EffectCanceled EventEffectKind = "canceled"
	// EffectError: a condition failed to evaluate on the event (a runtime
	// CEL error), which counts as no match; Message says why.
	EffectError EventEffectKind = "error"
	// EffectBatched: a trigger of a batched workflow
	// ([EventTrigger.Batch]) appended the event to the workflow's open
	// batch of the event's key; WorkflowRunID is the run the append
	// flushed the batch into, nil while the batch stays open.
	EffectBatched EventEffectKind = "batched"
	// EffectSkipped: a trigger of a singleton workflow in mode skip
	// ([EventTrigger.Singleton]) found the key's active run, whose id
	// WorkflowRunID is, and started nothing.
	EffectSkipped EventEffectKind = "skipped"
)

// EventEffect is one thing an event did, stored in go_event_effects.
type EventEffect struct {
	// Kind is what happened.
	Kind EventEffectKind `json:"kind"`
	// WorkflowName is the workflow whose trigger, cancelOn or wait it was.
	WorkflowName string `json:"workflowName"`
	// WorkflowRunID is the run started, woken or canceled; for an error,
	// the run whose input the condition was evaluated with, if any.
	WorkflowRunID *string `json:"workflowRunId,omitempty"`
	// Message explains an error (the CEL error and the condition).
	Message *string `json:"message,omitempty"`
	// CreatedAt is when it happened (UTC, milliseconds).
	CreatedAt time.Time `json:"createdAt"`
}

// PublishEventParams is one event to publish.
type PublishEventParams struct {
	// Name is required: valid text of at most [MaxEventNameLength] bytes.
	Name string
	// Data is the JSON payload, at most [MaxEventDataBytes]; nil or empty
	// means {}.
	Data json.RawMessage
	// Key is an optional key the event carries.
	Key *string
	// IdempotencyKey, when set, deduplicates for [EventDedupPeriod].
	IdempotencyKey *string
}

// Validate checks p as every EventStore does before writing; the error
// wraps [ErrInvalidArgument] and names the field.
func (p PublishEventParams) Validate() error {
	if p.Name == "" {
		return fmt.Errorf("%w: event name is empty", ErrInvalidArgument)
	}
	for _, f := range []struct {
		what string
		v    *string
	}{{"event name", &p.Name}, {"event key", p.Key}, {"event idempotency key", p.IdempotencyKey}} {
		if f.v == nil {
			continue
		}
		if len(*f.v) > MaxEventNameLength {
			return fmt.Errorf("%w: %s %.40q… is longer than %d bytes", ErrInvalidArgument, f.what, *f.v, MaxEventNameLength)
		}
		if err := checkText(f.what, *f.v); err != nil {
			return err
		}
	}
	if p.IdempotencyKey != nil && *p.IdempotencyKey == "" {
		return fmt.Errorf("%w: event %q: the idempotency key is empty (omit it instead)", ErrInvalidArgument, p.Name)
	}
	if len(p.Data) > MaxEventDataBytes {
		return fmt.Errorf("%w: data of event %q is %d bytes, above the limit of %d", ErrInvalidArgument, p.Name, len(p.Data), MaxEventDataBytes)
	}
	if len(p.Data) > 0 {
		return checkJSONField(fmt.Sprintf("data of event %q", p.Name), p.Data)
	}
	return nil
}

// DataOrEmpty is the data to store: p.Data, or {} when empty.
func (p PublishEventParams) DataOrEmpty() json.RawMessage {
	if len(p.Data) == 0 {
		return json.RawMessage("{}")
	}
	return p.Data
}

// EventMatcher evaluates the CEL conditions of triggers and cancelOn
// declarations during a publish. The SDK's client passes one built on
// package eventexpr; the backends call it and never parse CEL themselves.
type EventMatcher interface {
	// Match reports whether condition (CEL source) holds for event and,
	// for a cancelOn declaration, the run's input (nil for a trigger). An
	// error (a runtime CEL error, a cost limit) counts as no match and is
	// recorded on the event as an [EffectError].
	Match(ctx context.Context, condition string, event *EventRecord, input json.RawMessage) (bool, error)
}

// PublishEventsParams are the inputs of [EventStore.PublishEvents].
type PublishEventsParams struct {
	// Events are published in order; 1 to [MaxEventsPerPublish].
	Events []PublishEventParams
	// Matcher evaluates the conditions; nil makes every condition other
	// than "" fail to evaluate (recorded as an error, no match).
	Matcher EventMatcher
}

// Validate checks every event and the count.
func (p PublishEventsParams) Validate() error {
	if len(p.Events) == 0 {
		return fmt.Errorf("%w: no events to publish", ErrInvalidArgument)
	}
	if len(p.Events) > MaxEventsPerPublish {
		return fmt.Errorf("%w: %d events in one publish, above the limit of %d", ErrInvalidArgument, len(p.Events), MaxEventsPerPublish)
	}
	for i, e := range p.Events {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	return nil
}

// PublishedEvent is the answer for one published event.
type PublishedEvent struct {
	// ID is the event's id; for a duplicate, the first event's.
	ID string `json:"id"`
	// Duplicate is true when the idempotency key matched an event
	// published within [EventDedupPeriod]: nothing was stored or
	// triggered.
	Duplicate bool `json:"duplicate,omitempty"`
	// Started are the runs the event's triggers started.
	Started []string `json:"started,omitempty"`
	// Canceled are the runs its cancelOn declarations canceled.
	Canceled []string `json:"canceled,omitempty"`
}

// EventTriggerKind says whether a declaration starts or cancels runs.
type EventTriggerKind string

// The kinds of [EventTrigger].
const (
	// TriggerStart: a matching event starts a run of the workflow, with
	// the event as its input.
	TriggerStart EventTriggerKind = "start"
	// TriggerCancel: a matching event cancels the workflow's active runs
	// whose input the condition holds for (cancelOn).
	TriggerCancel EventTriggerKind = "cancel"
)

// EventTrigger is one stored declaration of a workflow: the events that
// start its runs, or that cancel them (cancelOn).
type EventTrigger struct {
	// WorkflowName is the declaring workflow.
	WorkflowName string `json:"workflowName"`
	// Version is the workflow version runs are started with (nil:
	// unversioned); ignored for cancelOn, which applies to every version.
	Version *string `json:"version,omitempty"`
	// Kind is start or cancel.
	Kind EventTriggerKind `json:"kind"`
	// EventName is the name of the events it reacts to.
	EventName string `json:"eventName"`
	// Condition is a CEL expression over event (and, for cancel, input);
	// "" always matches.
	Condition string `json:"condition,omitempty"`
	// Singleton, on a start declaration, makes each run it starts a
	// singleton start ([Singleton]), decided in the publish's transaction
	// as [Backend.CreateWorkflowRun] decides it: the workflow's
	// Spec.Singleton, stored with the declaration so that every publisher
	// applies it. Nil: none.
	Singleton *Singleton `json:"singleton,omitempty"`
	// Batch, on a start declaration, makes a matching event an item of
	// the workflow's open batch of the event's key ("" without one)
	// instead of a run of its own ([BatchStore]): the item is the event
	// as a triggered run's input would be, appended in the publish's
	// transaction. The workflow's Spec.Batch. Nil: one run per event.
	// Not with Singleton.
	Batch *BatchOptions `json:"batch,omitempty"`
	// DeclaredBy names who stored it (a worker id and its workflows).
	DeclaredBy string `json:"declaredBy,omitempty"`
	// UpdatedAt is when it was stored (UTC, milliseconds).
	UpdatedAt time.Time `json:"updatedAt"`
}

// ValidateEventTriggers checks a workflow's declarations as every
// EventStore does before storing them: valid names and event names, at
// most [MaxEventTriggersPerWorkflow] of each kind, conditions of at most
// [MaxEventConditionLength] bytes. It does not compile the CEL (the SDK
// does, at registration). The error wraps [ErrInvalidArgument].
func ValidateEventTriggers(workflowName string, ts []EventTrigger) error {
	if workflowName == "" {
		return fmt.Errorf("%w: event triggers: empty workflow name", ErrInvalidArgument)
	}
	if err := checkText("workflow name", workflowName); err != nil {
		return err
	}
	count := map[EventTriggerKind]int{}
	for i, t := range ts {
		if t.Kind != TriggerStart && t.Kind != TriggerCancel {
			return fmt.Errorf("%w: workflow %q, declaration %d: kind %q is neither %q nor %q", ErrInvalidArgument, workflowName, i, t.Kind, TriggerStart, TriggerCancel)
		}
		if count[t.Kind]++; count[t.Kind] > MaxEventTriggersPerWorkflow {
			return fmt.Errorf("%w: workflow %q declares more than %d %s triggers", ErrInvalidArgument, workflowName, MaxEventTriggersPerWorkflow, t.Kind)
		}
		if err := (PublishEventParams{Name: t.EventName}).Validate(); err != nil {
			return fmt.Errorf("workflow %q, %s trigger %d: %w", workflowName, t.Kind, i, err)
		}
		if len(t.Condition) > MaxEventConditionLength {
			return fmt.Errorf("%w: workflow %q, %s trigger on %q: the condition is %d bytes, above the limit of %d", ErrInvalidArgument, workflowName, t.Kind, t.EventName, len(t.Condition), MaxEventConditionLength)
		}
		if err := checkText("trigger condition", t.Condition); err != nil {
			return err
		}
		if err := t.validateFlow(); err != nil {
			return fmt.Errorf("workflow %q, %s trigger on %q: %w", workflowName, t.Kind, t.EventName, err)
		}
	}
	return nil
}

// ListEventsParams filter and paginate [EventStore.ListEvents].
type ListEventsParams struct {
	// Name, when set, lists only events of that name.
	Name string
	// Limit is the page size; 0 means [DefaultPageSize], above
	// [MaxPageSize] or negative fails with [ErrInvalidArgument].
	Limit int
	// After is the Next cursor of a previous page; "" starts at the
	// newest event.
	After string
}

// EventCursor encodes the position after event seq in a newest-first list.
func EventCursor(seq int64) string { return strconv.FormatInt(seq, 10) }

// DecodeEventCursor parses an [EventCursor]; 0 for "". A malformed cursor
// fails with [ErrInvalidArgument].
func DecodeEventCursor(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: cursor %q is not an event list cursor", ErrInvalidArgument, s)
	}
	return n, nil
}

// EventRunIdempotencyKey is the idempotency key of the run that event
// eventID starts of workflow workflowName: "event:<eventId>:<workflow>".
// With it a trigger starts at most one run per (event, workflow) however
// often the start is attempted, and a TypeScript client sees where the
// run came from.
func EventRunIdempotencyKey(eventID, workflowName string) string {
	return "event:" + eventID + ":" + workflowName
}

// TriggeredRunInput is the input of a run that event e started: the event
// as JSON, {"id","name","data","key"?,"createdAt"}, so a workflow reads
// input.data.
func TriggeredRunInput(e *EventRecord) json.RawMessage {
	b, _ := json.Marshal(struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Data      json.RawMessage `json:"data"`
		Key       *string         `json:"key,omitempty"`
		CreatedAt string          `json:"createdAt"`
	}{e.ID, e.Name, e.Data, e.Key, FormatTime(e.CreatedAt)})
	return b
}

// EventStore is an optional capability of a [Backend]: publishing events,
// storing the event declarations of workflows (triggers and cancelOn),
// and reading events back with what they did, in this SDK's own tables
// (go migration 18). Both built-in backends implement it.
type EventStore interface {
	// PublishEvents stores p.Events in one transaction and, in the same
	// transaction, for each new event: starts one run of every workflow
	// with a start trigger on its name whose condition matches (the
	// event as input, idempotency key [EventRunIdempotencyKey], through
	// the ordinary run creation, so a workflow's stored limits apply),
	// cancels the active runs of every workflow with a cancelOn
	// declaration on its name whose condition matches the event and the
	// run's input, hands the event to the other consumers (runs waiting
	// for it), and records all it did ([EventEffect]). A condition that
	// fails to evaluate is no match, recorded; it never fails the
	// publish. An event whose idempotency key was used within
	// [EventDedupPeriod] is acknowledged with the first event's id and
	// does nothing. Invalid params fail with [ErrInvalidArgument] and
	// store nothing.
	PublishEvents(ctx context.Context, p PublishEventsParams) ([]PublishedEvent, error)
	// GetEvent returns the event with its effects, or an error wrapping
	// [ErrEventNotFound].
	GetEvent(ctx context.Context, id string) (*EventRecord, error)
	// ListEvents lists events newest first (by seq), without effects.
	ListEvents(ctx context.Context, p ListEventsParams) (*Page[EventRecord], error)
	// PutEventTriggers replaces the declarations of workflowName (both
	// kinds) with ts, whose WorkflowName is ignored; an empty ts removes
	// them. Invalid ones ([ValidateEventTriggers]) fail with
	// [ErrInvalidArgument]. It reports whether the stored ones changed.
	PutEventTriggers(ctx context.Context, workflowName string, ts []EventTrigger, declaredBy string) (changed bool, err error)
	// ListEventTriggers lists the stored declarations, of one workflow
	// when workflowName is set, by workflow name, kind and position.
	ListEventTriggers(ctx context.Context, workflowName string) ([]EventTrigger, error)
	// PruneEvents deletes up to limit events created before cutoff, with
	// their effects, oldest first, and returns how many it deleted.
	PruneEvents(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// ErrNoEventMatcher is the evaluation error of a condition when a publish
// has no [EventMatcher].
var ErrNoEventMatcher = errors.New("no CEL evaluator was given to the publish (PublishEventsParams.Matcher)")

// MatchEvent evaluates condition with m: "" always matches; a nil m fails
// with [ErrNoEventMatcher]; a panic of m is an error, never a crash.
func MatchEvent(ctx context.Context, m EventMatcher, condition string, ev *EventRecord, input json.RawMessage) (ok bool, err error) {
	if condition == "" {
		return true, nil
	}
	if m == nil {
		return false, ErrNoEventMatcher
	}
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, fmt.Errorf("the evaluation panicked: %v", r)
		}
	}()
	return m.Match(ctx, condition, ev, input)
}

// TriggeredRunParams are the create params of the run event ev starts of
// workflow (version): the event as input ([TriggeredRunInput]), the
// idempotency key [EventRunIdempotencyKey], and the event's key as
// concurrency key, so per-key limits apply to the event's key.
func TriggeredRunParams(workflow string, version *string, ev *EventRecord) CreateWorkflowRunParams {
	key := EventRunIdempotencyKey(ev.ID, workflow)
	return CreateWorkflowRunParams{
		WorkflowName:   workflow,
		Version:        version,
		IdempotencyKey: &key,
		Input:          TriggeredRunInput(ev),
		ConcurrencyKey: ev.Key,
	}
}

// EventPage makes a page of evs, read with limit+1 rows, newest first.
func EventPage(evs []EventRecord, limit int) *Page[EventRecord] {
	page := &Page[EventRecord]{Data: evs}
	if page.Data == nil {
		page.Data = []EventRecord{}
	}
	if len(evs) > limit {
		page.Data = evs[:limit]
		next := EventCursor(evs[limit-1].Seq)
		page.Next = &next
	}
	return page
}

// SameEventTriggers reports whether stored old and new declarations are
// the same (kind, event, condition, version, in order).
func SameEventTriggers(old, ts []EventTrigger) bool {
	if len(old) != len(ts) {
		return false
	}
	for i := range old {
		a, b := old[i], ts[i]
		if a.Kind != b.Kind || a.EventName != b.EventName || a.Condition != b.Condition || !samePtr(a.Version, b.Version) ||
			!samePtr(a.FlowText(), b.FlowText()) {
			return false
		}
	}
	return true
}

func samePtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// EventTriggerArrays are the columns of ts for one insert: kinds,
// positions (per kind, from 0), event names and conditions. ts must be
// ordered start triggers first, as stores list them (kind order).
func EventTriggerArrays(ts []EventTrigger) (kinds []string, pos []int32, names, conds []string, flows []*string) {
	n := map[EventTriggerKind]int32{}
	for _, t := range ts {
		kinds, pos = append(kinds, string(t.Kind)), append(pos, n[t.Kind])
		n[t.Kind]++
		names, conds, flows = append(names, t.EventName), append(conds, t.Condition), append(flows, t.FlowText())
	}
	return kinds, pos, names, conds, flows
}

// triggerFlow is the stored form of a declaration's flow control
// (go_event_triggers.flow, go migration 23): JSON text, NULL when the
// declaration has none.
type triggerFlow struct {
	Singleton *Singleton   `json:"singleton,omitempty"`
	Batch     *storedBatch `json:"batch,omitempty"`
}

// storedBatch is BatchOptions in triggerFlow, the timeout in
// milliseconds.
type storedBatch struct {
	MaxSize   int   `json:"maxSize"`
	TimeoutMs int64 `json:"timeoutMs"`
	MaxBytes  int   `json:"maxBytes,omitempty"`
}

// validateFlow checks t's Singleton and Batch: only on a start
// declaration, not both, each valid.
func (t EventTrigger) validateFlow() error {
	if t.Singleton == nil && t.Batch == nil {
		return nil
	}
	if t.Kind != TriggerStart {
		return fmt.Errorf("%w: a %s declaration takes no singleton or batch", ErrInvalidArgument, t.Kind)
	}
	if t.Singleton != nil && t.Batch != nil {
		return fmt.Errorf("%w: a trigger is batched or a singleton, not both (a batch's run is started by its flush)", ErrInvalidArgument)
	}
	if t.Singleton != nil {
		if err := t.Singleton.Validate(); err != nil {
			return fmt.Errorf("singleton: %w", err)
		}
	}
	if t.Batch != nil {
		if _, err := t.Batch.Validate(); err != nil {
			return fmt.Errorf("batch: %w", err)
		}
	}
	return nil
}

// FlowText is t's Singleton and Batch as go_event_triggers.flow stores
// them: JSON text, nil when t has neither.
func (t EventTrigger) FlowText() *string {
	if t.Singleton == nil && t.Batch == nil {
		return nil
	}
	f := triggerFlow{Singleton: t.Singleton}
	if t.Batch != nil {
		f.Batch = &storedBatch{t.Batch.MaxSize, t.Batch.Timeout.Milliseconds(), t.Batch.MaxBytes}
	}
	raw, err := json.Marshal(f)
	if err != nil {
		panic(err) // strings and numbers only
	}
	s := string(raw)
	return &s
}

// ParseTriggerFlow reads go_event_triggers.flow (FlowText) into t's
// Singleton and Batch; nil text sets neither.
func (t *EventTrigger) ParseTriggerFlow(text *string) error {
	t.Singleton, t.Batch = nil, nil
	if text == nil {
		return nil
	}
	var f triggerFlow
	if err := json.Unmarshal([]byte(*text), &f); err != nil {
		return fmt.Errorf("the stored flow control %q of workflow %q's trigger on %q: %w", *text, t.WorkflowName, t.EventName, err)
	}
	t.Singleton = f.Singleton
	if f.Batch != nil {
		t.Batch = &BatchOptions{MaxSize: f.Batch.MaxSize, Timeout: time.Duration(f.Batch.TimeoutMs) * time.Millisecond, MaxBytes: f.Batch.MaxBytes}
	}
	return nil
}

// TriggeredBatchItem is what a batched trigger ([EventTrigger.Batch]) of
// workflow (version) appends for event ev: the event, as a triggered
// run's input is, to the batch of the event's key.
func TriggeredBatchItem(workflow string, version *string, opts BatchOptions, ev *EventRecord) AppendBatchItemParams {
	p := AppendBatchItemParams{WorkflowName: workflow, Version: version, Item: TriggeredRunInput(ev), Options: opts}
	if ev.Key != nil {
		p.Key = *ev.Key
	}
	return p
}

// SortEventTriggers returns ts ordered as the stores list them: by kind
// (cancel before start), keeping the declaration order within a kind.
func SortEventTriggers(ts []EventTrigger) []EventTrigger {
	out := slices.Clone(ts)
	slices.SortStableFunc(out, func(a, b EventTrigger) int { return strings.Compare(string(a.Kind), string(b.Kind)) })
	return out
}

// PlanTriggeredStart says what a start declaration of workflow (runs of
// version) whose stored flow control is flowText (go_event_triggers.flow)
// does for the new event ev, in the publish's transaction: with a batch,
// append item (non-nil, validated, its defaults applied) to the batch of
// the event's key; else create p, the triggered run (TriggeredRunParams),
// a singleton start when the declaration has a singleton.
func PlanTriggeredStart(workflow string, version, flowText *string, ev *EventRecord) (item *AppendBatchItemParams, p CreateWorkflowRunParams, err error) {
	d := EventTrigger{WorkflowName: workflow, EventName: ev.Name}
	if err := d.ParseTriggerFlow(flowText); err != nil {
		return nil, p, err
	}
	if d.Batch != nil {
		it, err := TriggeredBatchItem(workflow, version, *d.Batch, ev).Validate()
		if err != nil {
			return nil, p, err
		}
		return &it, p, nil
	}
	p = TriggeredRunParams(workflow, version, ev)
	p.Singleton = d.Singleton
	return nil, p, nil
}

// BatchedEffect is the effect of a batched trigger's append: batched,
// with the run the append flushed the batch into (the last, when it
// flushed two), if any.
func BatchedEffect(workflow string, added *BatchAppend) EventEffect {
	e := EventEffect{Kind: EffectBatched, WorkflowName: workflow}
	if n := len(added.Flushed); n > 0 {
		e.WorkflowRunID = &added.Flushed[n-1].ID
	}
	return e
}
