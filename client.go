package openworkflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// Client starts, inspects, cancels and signals runs. It holds no state but
// its backend; it is safe for concurrent use.
type Client struct {
	b  backend.Client
	tr tracing
}

// ClientOption configures a [Client] (see [NewClient]).
type ClientOption func(*clientOptions)

type clientOptions struct {
	tp trace.TracerProvider
}

// WithTracerProvider makes the client record OpenTelemetry spans
// (workflow_run.create, workflow_run.cancel, signal.send, named as in
// OpenWorkflow 0.10; see package telemetry) with tp, and store the
// creating span's context with each run so that its executions link to it.
// Without it the client records no spans.
func WithTracerProvider(tp trace.TracerProvider) ClientOption {
	return func(o *clientOptions) { o.tp = tp }
}

// NewClient returns a client on b: any backend, or anything that
// implements the client side of the storage seam.
func NewClient(b backend.Client, opts ...ClientOption) *Client {
	var o clientOptions
	for _, f := range opts {
		f(&o)
	}
	return &Client{b: b, tr: newTracing(o.tp)}
}

// Backend returns the client's backend.
func (c *Client) Backend() backend.Client { return c.b }

// StartOption configures a run at start: [WithIdempotencyKey],
// [WithStartAt], [WithDeadline], [WithConcurrencyKey], [WithPriority],
// [WithSearchAttributes], [WithSingleton], [WithSingletonSkipError],
// [WithFairness].
type StartOption func(*startOptions)

type startOptions struct {
	idempotencyKey          *string
	availableAt, deadlineAt *time.Time
	concurrencyKey          *string
	priority                int
	searchAttributes        backend.SearchAttributes
	singleton               *backend.Singleton
	singletonSkipError      bool
	debounce                *Debounce
	fairness, specFairness  *backend.Fairness
}

// apply sets the options on the create parameters p.
func (o startOptions) apply(p *backend.CreateWorkflowRunParams) {
	p.IdempotencyKey, p.AvailableAt, p.DeadlineAt = o.idempotencyKey, o.availableAt, o.deadlineAt
	p.ConcurrencyKey, p.Priority = o.concurrencyKey, o.priority
	p.SearchAttributes = o.searchAttributes
	p.Singleton = o.singleton
	p.Fairness = o.resolvedFairness()
}

func newStartOptions(opts []StartOption) startOptions {
	var o startOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithIdempotencyKey makes the start idempotent: within 24 hours, a start
// of the same workflow name with the same key returns the first run
// (whatever its status or version) instead of creating one, as in
// OpenWorkflow.
func WithIdempotencyKey(key string) StartOption {
	return func(o *startOptions) { o.idempotencyKey = &key }
}

// WithStartAt delays the run until t (a past t starts at once).
func WithStartAt(t time.Time) StartOption {
	return func(o *startOptions) { t := t.UTC(); o.availableAt = &t }
}

// WithDeadline fails the run if it has not finished by t; nothing is
// retried past it, and a step executing at t sees its context canceled
// (the context carries the deadline).
func WithDeadline(t time.Time) StartOption {
	return func(o *startOptions) { t := t.UTC(); o.deadlineAt = &t }
}

// WithConcurrencyKey sets the key the per-key limits of the workflow count
// the run under ([Limits.ConcurrencyPerKey], [Limits.RateLimit]): e.g. the
// customer id, so that at most N runs per customer hold a slot at once.
// Runs started without a key ("" is none) share one key. The key is stored
// with the run whether or not its workflow has limits (valid UTF-8 without
// U+0000, at most 1,024 bytes, else the start fails with an error wrapping
// backend.ErrInvalidArgument).
func WithConcurrencyKey(key string) StartOption {
	return func(o *startOptions) {
		if key == "" {
			o.concurrencyKey = nil
			return
		}
		o.concurrencyKey = &key
	}
}

// WithPriority sets the run's priority: claims take due runs of a higher
// priority first, and runs of one priority in the order they became due
// (FIFO), whether they are new, handed back or woken from a wait (a
// sleep, a child, a signal): a run of priority 10 that slept wakes ahead
// of the runs of priority 0 (see docs/architecture.md, "Limits and
// priorities"). Default 0, the priority of every run the TypeScript SDK
// starts; negative priorities go after them. At most 2^31−1 in absolute
// value.
func WithPriority(priority int) StartOption {
	return func(o *startOptions) { o.priority = priority }
}

// Start starts a run of wf with input and returns its handle. It returns an
// error if input cannot be JSON-encoded or the backend refuses the run.
//
// A Spec with a Singleton makes every start through Start a singleton
// start ([WithSingleton] overrides it). A start in mode skip that found
// an active run and was given [WithSingletonSkipError] returns that run's
// handle with an error wrapping [ErrSingletonSkipped].
func (wf *Workflow[I, O]) Start(ctx context.Context, c *Client, input I, opts ...StartOption) (*Handle[O], error) {
	if s := wf.spec.Singleton; s != nil {
		opts = append([]StartOption{WithSingleton(s.Key, s.Mode)}, opts...)
	}
	if f := wf.spec.Fairness; f != nil {
		opts = append([]StartOption{withSpecFairness(*f)}, opts...)
	}
	h, err := c.StartByName(ctx, wf.spec.Name, wf.spec.Version, input, opts...)
	if h == nil {
		return nil, err
	}
	return &Handle[O]{RunHandle: h}, err
}

// StartByName starts a run of the workflow name and version ("" for
// unversioned) with input JSON-encoded; for workflows not defined in this
// process.
func (c *Client) StartByName(ctx context.Context, name, version string, input any, opts ...StartOption) (*RunHandle, error) {
	ctx, p, span, err := c.createParams(ctx, name, version, input, opts)
	if err != nil {
		return nil, err
	}
	defer span.End()
	if d := newStartOptions(opts).debounce; d != nil {
		h, err := c.startDebounced(ctx, name, p, *d)
		if err != nil {
			recordError(span, err)
			return nil, err
		}
		span.SetAttributes(runAttributes(h.Run)...)
		return h, nil
	}
	claim := reserveStartClaim(c.b, &p)
	run, err := c.b.CreateWorkflowRun(ctx, p)
	var claimedUntil time.Time
	var claimedPass <-chan struct{}
	if claim != nil && claim.settle(run, err) {
		claimedUntil, claimedPass = claim.leased.Add(p.Claim.LeaseDuration), claim.ended
	}
	if err != nil {
		recordError(span, err)
		return nil, fmt.Errorf("start workflow %q: %w", name, err)
	}
	span.SetAttributes(runAttributes(run)...)
	h := c.startedHandle(name, run, p.Input)
	h.claimedUntil, h.claimedPass = claimedUntil, claimedPass
	if run.SingletonSkipped && newStartOptions(opts).singletonSkipError {
		return h, fmt.Errorf("start workflow %q: singleton key %q: run %s is active: %w", name, p.Singleton.Key, run.ID, ErrSingletonSkipped)
	}
	return h, nil
}

// Handle returns the handle of an existing run, by id.
func (c *Client) Handle(runID string) *RunHandle { return &RunHandle{ID: runID, c: c} }

// GetRun returns a run, or an error wrapping backend.ErrRunNotFound.
func (c *Client) GetRun(ctx context.Context, runID string) (*backend.WorkflowRun, error) {
	return c.b.GetWorkflowRun(ctx, runID)
}

// ListRuns lists runs newest first, filtered and paginated by p.
func (c *Client) ListRuns(ctx context.Context, p backend.ListWorkflowRunsParams) (*backend.Page[backend.WorkflowRun], error) {
	return c.b.ListWorkflowRuns(ctx, p)
}

// CountMatchingRuns counts the runs [Client.ListRuns] would list with p's
// filters and query, across all pages (backend.Client.CountMatchingRuns).
func (c *Client) CountMatchingRuns(ctx context.Context, p backend.ListWorkflowRunsParams) (int64, error) {
	return c.b.CountMatchingRuns(ctx, p)
}

// SearchAttributes returns the search attributes of the runs given, by
// run id (a run without any has no entry), or backend.ErrNotSupported
// when the backend stores none.
func (c *Client) SearchAttributes(ctx context.Context, runIDs ...string) (map[string]backend.SearchAttributes, error) {
	store, ok := c.b.(backend.SearchAttributeStore)
	if !ok {
		return nil, fmt.Errorf("search attributes: %w", backend.ErrNotSupported)
	}
	return store.SearchAttributesOf(ctx, runIDs)
}

// ListSteps lists a run's step attempts oldest first.
func (c *Client) ListSteps(ctx context.Context, p backend.ListStepAttemptsParams) (*backend.Page[backend.StepAttempt], error) {
	return c.b.ListStepAttempts(ctx, p)
}

// GetStep returns one step attempt by id, or an error wrapping
// backend.ErrStepNotFound.
func (c *Client) GetStep(ctx context.Context, stepAttemptID string) (*backend.StepAttempt, error) {
	return c.b.GetStepAttempt(ctx, stepAttemptID)
}

// CountRuns counts runs per status.
func (c *Client) CountRuns(ctx context.Context) (backend.RunCounts, error) {
	return c.b.CountWorkflowRuns(ctx)
}

// CancelRun cancels a pending or running run; the worker executing it
// notices within one heartbeat (at once when the backend notifies), its
// step's context is canceled and nothing more is committed. Canceling a
// canceled run is a no-op; a completed or failed run gives an error
// wrapping backend.ErrRunTerminal, a missing one backend.ErrRunNotFound.
// Children of the run keep running.
func (c *Client) CancelRun(ctx context.Context, runID string) (*backend.WorkflowRun, error) {
	ctx, span := c.tr.start(ctx, telemetry.SpanWorkflowRunCancel, trace.WithAttributes(telemetry.AttrRunID.String(runID)))
	defer span.End()
	run, err := c.b.CancelWorkflowRun(ctx, runID)
	if err != nil {
		recordError(span, err)
		return nil, err
	}
	span.SetAttributes(runAttributes(run)...)
	if origin := c.tr.origin(run.Context); origin.IsValid() {
		span.AddLink(trace.Link{SpanContext: origin})
	}
	return run, nil
}

// SendSignal delivers signal with data (JSON-encoded) to every run waiting
// for it now and returns their ids; no waiter means nobody receives it
// (signals are not buffered: see SignalRun for a signal to one run that
// waits until the run does). A non-empty idempotencyKey makes a repeated
// send a no-op that returns the first send's ids.
func (c *Client) SendSignal(ctx context.Context, signal string, data any, idempotencyKey string) ([]string, error) {
	if signal == "" {
		return nil, fmt.Errorf("send signal: %w: empty signal name", backend.ErrInvalidArgument)
	}
	raw, err := encodeValue(data)
	if err != nil {
		return nil, fmt.Errorf("send signal %q: data: %w", signal, err)
	}
	p := backend.SendSignalParams{Signal: signal, Data: raw}
	if idempotencyKey != "" {
		p.IdempotencyKey = &idempotencyKey
	}
	ctx, span := c.tr.start(ctx, telemetry.SpanSignalSend, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(telemetry.AttrSignalName.String(signal)))
	defer span.End()
	ids, err := c.b.SendSignal(ctx, p)
	if err != nil {
		recordError(span, err)
		return nil, err
	}
	span.SetAttributes(telemetry.AttrSignalRecipientCount.Int(len(ids)))
	return ids, nil
}

// SignalRun sends signal with data (JSON-encoded) to the run runID alone,
// as Temporal does: unlike SendSignal, the signal is stored until the run
// waits for it ([WaitForSignal] with that name), then received by exactly
// one wait; the signals sent to one run and name are received in send
// order. A run already waiting for it is woken at once (the result's
// Delivered). A non-empty idempotencyKey makes a repeated send to the same
// run and signal a no-op returning the first send (Duplicate). A missing
// run gives an error wrapping backend.ErrRunNotFound, a completed, failed
// or canceled one backend.ErrRunTerminal: start a new run, or send before
// the run ends. A run that continued as new ([ContinueAsNew]) is not an
// end: the signal goes to its successor, or the chain's current run, so
// the first run's id addresses the whole chain (an idempotency key then
// dedupes against the signals that run holds: those not yet received
// moved there with the switch). Only Go workers receive stored signals: a TypeScript run
// receives a signal sent so only if it is waiting for it at the send.
func (c *Client) SignalRun(ctx context.Context, runID, signal string, data any, idempotencyKey string) (*backend.RunSignal, error) {
	if signal == "" {
		return nil, fmt.Errorf("signal workflow run %s: %w: empty signal name", runID, backend.ErrInvalidArgument)
	}
	raw, err := encodeValue(data)
	if err != nil {
		return nil, fmt.Errorf("signal %q to workflow run %s: data: %w", signal, runID, err)
	}
	p := backend.SignalRunParams{WorkflowRunID: runID, Signal: signal, Data: raw}
	if idempotencyKey != "" {
		p.IdempotencyKey = &idempotencyKey
	}
	ctx, span := c.tr.start(ctx, telemetry.SpanSignalSend, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(telemetry.AttrSignalName.String(signal), telemetry.AttrRunID.String(runID)))
	defer span.End()
	s, err := c.b.SignalRun(ctx, p)
	for errors.Is(err, backend.ErrRunTerminal) {
		// A run that continued as new hands its signals on: the signal
		// goes to its successor (and on down the chain), as the signals
		// stored for it moved there at the switch.
		run, gerr := c.b.GetWorkflowRun(ctx, p.WorkflowRunID)
		next, continued := "", false
		if gerr == nil {
			next, continued = backend.ContinuedTo(run.Context)
		}
		if !continued {
			break
		}
		p.WorkflowRunID = next
		s, err = c.b.SignalRun(ctx, p)
	}
	if err != nil {
		recordError(span, err)
		return nil, err
	}
	return s, nil
}

// RunHandle refers to one run.
type RunHandle struct {
	// ID is the run id.
	ID string
	// WorkflowName is the run's workflow, when known.
	WorkflowName string
	// Run is the run as stored when a start made the handle (with an
	// idempotency key, the existing run the start returned); nil for a
	// handle from [Client.Handle].
	Run *WorkflowRun
	// Reused is true when the start created nothing: its idempotency key
	// matched a run started within 24 hours, which Run is (as
	// OpenWorkflow's TypeScript SDK answers such a start). InputDiffers
	// is true when, moreover, that run's input is not this start's
	// (compared as JSON values: key order, whitespace and the writing of
	// numbers aside, [backend.SameJSON]): this start's input was dropped,
	// which is most likely a mistake (a key reused for other work) — see
	// [ErrIdempotencyConflict]. Both are false on a handle from
	// [Client.Handle].
	Reused, InputDiffers bool
	// SingletonSkipped is true when the start was a singleton start in
	// mode skip ([WithSingleton]) that created nothing because its key had
	// an active run, which Run is. False on a handle from [Client.Handle].
	SingletonSkipped bool
	// Debounced is true when a start with [WithDebounce] joined the
	// pending run of its key rather than creating one.
	Debounced bool
	c         *Client
	// claimedUntil, when set, is the end of the lease with which the
	// start claimed the run for a worker of this process (Result need not
	// read the run before it: awaitClaimedHere).
	claimedUntil time.Time
	claimedPass  <-chan struct{} // closed when that pass freed its slot
}

// Conflict returns an error wrapping [ErrIdempotencyConflict], naming the
// earlier run, when the start that made h found an earlier run of
// another input under its idempotency key ([RunHandle.InputDiffers]);
// nil otherwise.
func (h *RunHandle) Conflict() error {
	if !h.InputDiffers || h.Run == nil {
		return nil
	}
	key := ""
	if h.Run.IdempotencyKey != nil {
		key = *h.Run.IdempotencyKey
	}
	return fmt.Errorf("%w: key %q already started run %s of workflow %q (created %s) with another input; this start's input was dropped: use a new key for new work",
		ErrIdempotencyConflict, key, h.Run.ID, h.Run.WorkflowName, h.Run.CreatedAt.Format(time.RFC3339))
}

// startedHandle is the handle of the run a start of input returned.
func (c *Client) startedHandle(name string, run *backend.WorkflowRun, input json.RawMessage) *RunHandle {
	h := &RunHandle{ID: run.ID, WorkflowName: name, Run: run, c: c, Reused: run.Reused, SingletonSkipped: run.SingletonSkipped}
	h.InputDiffers = run.Reused && !backend.SameJSON(run.Input, input)
	return h
}

// resultFallbackPoll is how often Result re-reads the run when the backend
// notifies completions (events are hints, so a missed one must not hang
// Result); without notifications it polls with backoff from 10 ms to this.
const resultFallbackPoll = 2 * time.Second

// ResultOption configures [RunHandle.Result].
type ResultOption func(*resultOptions)

type resultOptions struct{ noFollow bool }

// DisableFollowingRuns makes [RunHandle.Result] of a run that continued as
// new ([ContinueAsNew]) return a *[RunContinuedError] naming its
// successor, instead of following the chain to its last run, as
// Temporal's WorkflowRunGetOptions.DisableFollowingRuns.
func DisableFollowingRuns() ResultOption {
	return func(o *resultOptions) { o.noFollow = true }
}

// Result waits until the run finishes and returns its JSON output. It
// returns a *[RunFailedError] if the run failed, an error wrapping
// [ErrRunCanceled] if it was canceled, and ctx's error if ctx ends first
// (bound the wait with a context deadline). It wakes on the backend's
// completion event when the backend has them, instead of polling.
//
// A run that continued as new ([ContinueAsNew]) is followed, as Temporal
// follows runs by default: Result waits for its successor, and so on to
// the chain's last run, whose output or failure it returns; so the handle
// of a start that an idempotency key answered with the chain's first run
// gets the chain's result. [DisableFollowingRuns] returns a
// *[RunContinuedError] instead.
func (h *RunHandle) Result(ctx context.Context, opts ...ResultOption) (json.RawMessage, error) {
	var o resultOptions
	for _, opt := range opts {
		opt(&o)
	}
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := h.c.b.Subscribe(subCtx)
	if err != nil {
		events = nil
	}
	poll := 10 * time.Millisecond
	runID := h.ID
	if events != nil {
		f, err := h.awaitClaimedHere(ctx, events)
		if err != nil {
			return nil, err
		}
		if f != nil {
			return h.finished(runID, f)
		}
	}
	for {
		run, err := h.c.b.GetWorkflowRun(ctx, runID)
		if err != nil {
			return nil, err
		}
		if h.WorkflowName == "" {
			h.WorkflowName = run.WorkflowName
		}
		switch run.Status.Normalize() {
		case backend.RunCompleted:
			next, continued := backend.ContinuedTo(run.Context)
			if !continued {
				return run.Output, nil
			}
			if o.noFollow {
				return nil, &RunContinuedError{RunID: run.ID, WorkflowName: run.WorkflowName, NextRunID: next}
			}
			runID = next
			continue
		case backend.RunFailed:
			return nil, &RunFailedError{RunID: run.ID, WorkflowName: run.WorkflowName, Err: decodeError(run.Error)}
		case backend.RunCanceled:
			return nil, fmt.Errorf("workflow %s (run %s): %w", run.WorkflowName, run.ID, ErrRunCanceled)
		}
		wait := resultFallbackPoll
		if events == nil {
			wait, poll = poll, min(poll*2, resultFallbackPoll)
		}
		f, err := waitForFinish(ctx, events, runID, wait)
		if err != nil {
			return nil, err
		}
		if f != nil {
			return h.finished(runID, f)
		}
	}
}

// awaitClaimedHere waits, without reading the run, for the end of a run
// that its start claimed for a worker of this process (worker_startclaim.go),
// when Result came within that claim's lease: the run's end is then
// committed by this process, which publishes it to its subscribers, and
// only after Result subscribed, or it is among the ends the backend
// remembers (backend.FinishRecorder). Any other end (a cancel, a lost
// lease) is announced too. It returns how the run ended when an event
// said so; nil when Result must read the run (not such a run, an event
// without the outcome, a resync, or resultFallbackPoll passed).
func (h *RunHandle) awaitClaimedHere(ctx context.Context, events <-chan backend.Event) (*backend.FinishedRun, error) {
	fr, ok := h.c.b.(backend.FinishRecorder)
	if !ok || h.claimedUntil.IsZero() || !time.Now().Before(h.claimedUntil) {
		return nil, nil
	}
	if ev, ok := fr.RecentFinish(h.ID); ok && ev.Finished != nil {
		return ev.Finished, nil
	}
	t := time.NewTimer(resultFallbackPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			return nil, nil
		case ev, ok := <-events:
			switch {
			case !ok || ev.Kind == backend.EventResync:
				return nil, nil
			case ev.Kind != backend.EventRunFinished || ev.WorkflowRunID != h.ID:
				continue
			case ev.Finished != nil:
				return ev.Finished, nil
			}
			// An announcement without the outcome: the NOTIFY that rode in
			// the completing commit can come before this process's own
			// event. Once the pass here freed its slot, its writes
			// returned and its event, if it ended the run, was published.
			select {
			case <-h.claimedPass:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if ev, ok := fr.RecentFinish(h.ID); ok && ev.Finished != nil {
				return ev.Finished, nil
			}
			return nil, nil // ended elsewhere (a cancel): read it
		}
	}
}

// finished is Result's answer for run runID that ended as f said,
// published by the backend that committed its end (backend.Event.Finished):
// the worker is in this process, and the run need not be read again. A
// run that continued as new never comes here: a continuation publishes no
// Finished (ContinueWorkflowRun), so Result reads it and follows the chain.
func (h *RunHandle) finished(runID string, f *backend.FinishedRun) (json.RawMessage, error) {
	switch f.Status.Normalize() {
	case backend.RunCompleted:
		return bytes.Clone(f.Output), nil // the event's bytes are shared
	case backend.RunFailed:
		return nil, &RunFailedError{RunID: runID, WorkflowName: h.WorkflowName, Err: decodeError(bytes.Clone(f.Error))}
	}
	return nil, fmt.Errorf("workflow %s (run %s): %w", h.WorkflowName, runID, ErrRunCanceled)
}

// waitForFinish returns when an event says run finished or that events
// may have been missed (backend.EventResync), after d, or with ctx's
// error. When the event carries how the run ended (it was published
// by the backend that wrote it), that is returned too; otherwise nil, and
// the caller reads the run.
func waitForFinish(ctx context.Context, events <-chan backend.Event, runID string, d time.Duration) (*backend.FinishedRun, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			return nil, nil
		case ev, ok := <-events:
			if !ok {
				events = nil // subscription ended: wait for the timer
				continue
			}
			if ev.Kind == backend.EventRunFinished && ev.WorkflowRunID == runID {
				return ev.Finished, nil
			}
			if ev.Kind == backend.EventResync {
				return nil, nil // the finish may have been missed: read the run
			}
		}
	}
}

// Cancel cancels the run; see [Client.CancelRun].
func (h *RunHandle) Cancel(ctx context.Context) error {
	_, err := h.c.CancelRun(ctx, h.ID)
	return err
}

// Handle is a typed [RunHandle] whose Result decodes the output into O.
type Handle[O any] struct {
	*RunHandle
}

// Result waits for the run's output, as [RunHandle.Result] (options
// included), decoded into O.
func (h *Handle[O]) Result(ctx context.Context, opts ...ResultOption) (O, error) {
	var out O
	raw, err := h.RunHandle.Result(ctx, opts...)
	if err != nil {
		return out, err
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			return out, fmt.Errorf("decode output of run %s into %s: %w", h.ID, reflect.TypeFor[O](), err)
		}
	}
	return out, nil
}

// StartMany starts one run of wf per input in a single batch (one
// statement on PostgreSQL) and returns their handles in input order. opts apply to every run;
// an idempotency key given here is suffixed with the input's index.
func (wf *Workflow[I, O]) StartMany(ctx context.Context, c *Client, inputs []I, opts ...StartOption) ([]*Handle[O], error) {
	anyInputs := make([]any, len(inputs))
	for i, in := range inputs {
		anyInputs[i] = in
	}
	if f := wf.spec.Fairness; f != nil {
		opts = append([]StartOption{withSpecFairness(*f)}, opts...)
	}
	hs, err := c.StartManyByName(ctx, wf.spec.Name, wf.spec.Version, anyInputs, opts...)
	if err != nil {
		return nil, err
	}
	out := make([]*Handle[O], len(hs))
	for i, h := range hs {
		out[i] = &Handle[O]{RunHandle: h}
	}
	return out, nil
}

// StartManyByName is [Workflow.StartMany] by workflow name and version.
func (c *Client) StartManyByName(ctx context.Context, name, version string, inputs []any, opts ...StartOption) ([]*RunHandle, error) {
	if name == "" {
		return nil, fmt.Errorf("start workflows: %w: empty workflow name", backend.ErrInvalidArgument)
	}
	ctx, span := c.tr.start(ctx, telemetry.SpanWorkflowRunCreate, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(telemetry.AttrWorkflowName.String(name)))
	defer span.End()
	runContext := c.tr.inject(ctx)
	o := newStartOptions(opts)
	if err := refuseDebounce(o, name, "StartMany"); err != nil {
		return nil, err
	}
	ps := make([]backend.CreateWorkflowRunParams, len(inputs))
	for i, input := range inputs {
		in, err := encodeValue(input)
		if err != nil {
			return nil, fmt.Errorf("start workflow %q: input %d: %w", name, i, err)
		}
		p := backend.CreateWorkflowRunParams{WorkflowName: name, Version: versionPtr(version), Input: in, Context: runContext}
		o.apply(&p)
		if p.IdempotencyKey != nil {
			k := fmt.Sprintf("%s:%d", *p.IdempotencyKey, i)
			p.IdempotencyKey = &k
		}
		ps[i] = p
	}
	runs, err := c.b.CreateWorkflowRuns(ctx, ps)
	if err != nil {
		recordError(span, err)
		return nil, fmt.Errorf("start %d runs of workflow %q: %w", len(ps), name, err)
	}
	hs := make([]*RunHandle, len(runs))
	for i, r := range runs {
		hs[i] = c.startedHandle(name, r, ps[i].Input)
	}
	return hs, nil
}

// encodeValue JSON-encodes v, a value of the caller's, and checks that
// every backend can store it ([backend.ValidateJSON]). A panic of v's
// MarshalJSON is returned as an error.
func encodeValue(v any) (raw json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			raw, err = nil, fmt.Errorf("%w: encoding a %T panicked: %v", backend.ErrInvalidArgument, v, r)
		}
	}()
	if raw, err = marshalValue(v); err != nil {
		return nil, fmt.Errorf("%w: cannot encode a %T as JSON: %w", backend.ErrInvalidArgument, v, err)
	}
	if err := backend.ValidateJSON(raw); err != nil {
		return nil, fmt.Errorf("cannot be stored: %w", err)
	}
	return raw, nil
}

// RetryRun retries the failed run p.WorkflowRunID from its failed step:
// the run becomes pending and due now, its completed steps keep their
// results (their functions are not called again), and the failed step —
// or the workflow, for a failure outside steps — gets a fresh retry
// budget. p.DeadlineAt is the run's new deadline (nil: none). A run that
// is not failed gives an error wrapping backend.ErrRunNotFailed, a missing
// one backend.ErrRunNotFound. A run its workflow marked as not to be
// retried forward ([MarkNotRetryable]: a DAG run that began to compensate)
// gives a [*RunNotRetryableError] wrapping [ErrRunNotRetryable], whatever
// its status, and is left as it is. As OpenWorkflow's users asked in their
// issue #520.
//
// The mark is read first, for its reason; the backend's retry checks it
// again in its own statement (backend.ErrRunNotRetryable), so a run
// marked by another retry's pass in between is refused all the same.
func (c *Client) RetryRun(ctx context.Context, p backend.RetryWorkflowRunParams) (*WorkflowRun, error) {
	reason, marked, err := c.notRetryable(ctx, p.WorkflowRunID)
	if errors.Is(err, backend.ErrInvalidArgument) {
		// An id no backend stores (as the backend's retry would say).
		return nil, fmt.Errorf("retry workflow run %q: %w", p.WorkflowRunID, backend.ErrRunNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("retry workflow run %s: %w", p.WorkflowRunID, err)
	}
	if marked {
		return nil, &RunNotRetryableError{RunID: p.WorkflowRunID, Reason: reason}
	}
	run, err := c.b.RetryWorkflowRun(ctx, p)
	if errors.Is(err, backend.ErrRunNotRetryable) {
		if reason, _, rerr := c.notRetryable(ctx, p.WorkflowRunID); rerr == nil && reason != "" {
			return nil, &RunNotRetryableError{RunID: p.WorkflowRunID, Reason: reason}
		}
	}
	return run, err
}
