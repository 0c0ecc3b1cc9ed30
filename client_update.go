package openworkflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// Errors of updates ([Client.UpdateRun]), tested with errors.Is.
var (
	// ErrUpdateRejected: the run refused the update without running its
	// handler — its validator returned an error, it declares no handler
	// of that name, or it finished first ([*UpdateRejectedError] says
	// which). Nothing of it is in the run's history.
	ErrUpdateRejected = errors.New("workflow run update rejected")
	// ErrUpdateFailed: the update's handler ran and returned an error
	// ([*UpdateFailedError]).
	ErrUpdateFailed = errors.New("workflow run update failed")
	// ErrUpdateNotFound: the run has no update with that id.
	ErrUpdateNotFound = backend.ErrUpdateNotFound
	// ErrTooManyUpdates: the run has [backend.MaxInFlightUpdates] updates
	// waiting, or had [backend.MaxUpdatesPerRun]; retry once some settle.
	ErrTooManyUpdates = backend.ErrTooManyUpdates
)

// CodeRunFinished is the Code of the stored error of an update read as
// rejected because its run finished before handling it.
const CodeRunFinished = "RUN_FINISHED"

// UpdateRejectedError is the error of a rejected update: Err is the
// validator's error as stored (or why the run refused it). It matches
// [ErrUpdateRejected], and also [ErrRunTerminal] when the run finished
// before handling the update (Err.Code is [CodeRunFinished]).
type UpdateRejectedError struct {
	// RunID, UpdateID and Name name the update.
	RunID, UpdateID, Name string
	// Err is the stored reason: the validator's error, an unknown name, or
	// the run finished first (Code CodeRunFinished).
	Err *Error
}

// Error names the update, the run and the reason.
func (e *UpdateRejectedError) Error() string {
	return fmt.Sprintf("update %q (id %s) of run %s rejected: %v", e.Name, e.UpdateID, e.RunID, e.Err)
}

// Is matches ErrUpdateRejected, and ErrRunTerminal for a run that finished.
func (e *UpdateRejectedError) Is(target error) bool {
	return target == ErrUpdateRejected || (target == ErrRunTerminal && e.Err != nil && e.Err.Code == CodeRunFinished)
}

// Unwrap returns the stored reason.
func (e *UpdateRejectedError) Unwrap() error { return e.Err }

// UpdateFailedError is the error of an update whose handler returned an
// error (Err, as stored). It matches [ErrUpdateFailed].
type UpdateFailedError struct {
	// RunID, UpdateID and Name name the update.
	RunID, UpdateID, Name string
	// Err is the handler's error as stored.
	Err *Error
}

// Error names the update, the run and the handler's error.
func (e *UpdateFailedError) Error() string {
	return fmt.Sprintf("update %q (id %s) of run %s failed: %v", e.Name, e.UpdateID, e.RunID, e.Err)
}

// Is matches ErrUpdateFailed.
func (e *UpdateFailedError) Is(target error) bool { return target == ErrUpdateFailed }

// Unwrap returns the handler's error as stored.
func (e *UpdateFailedError) Unwrap() error { return e.Err }

// UpdateTimeoutError is returned when the caller's context ended before
// the update settled: Stage is the state it had reached (admitted: no
// worker has handled it yet; it may still be). Call [Client.WaitUpdate]
// (or UpdateRun again with the same id, [WithUpdateID]) to go on
// waiting. It unwraps to the context's error.
type UpdateTimeoutError struct {
	// RunID and UpdateID name the update.
	RunID, UpdateID string
	// Stage is the state the update had when the wait ended.
	Stage backend.RunUpdateState
	// Err is the context's error (nil from UpdateOutcome).
	Err error
}

// Error names the update and the stage it reached.
func (e *UpdateTimeoutError) Error() string {
	return fmt.Sprintf("update %s of run %s still %s when the wait ended: %v", e.UpdateID, e.RunID, e.Stage, e.Err)
}

// Unwrap returns the context's error.
func (e *UpdateTimeoutError) Unwrap() error { return e.Err }

// UpdateOption configures [Client.UpdateRun] and [Client.AdmitUpdate].
type UpdateOption func(*updateOptions)

type updateOptions struct{ id string }

// WithUpdateID sets the update's id, its idempotency key within the run:
// an update with an id the run already has is not admitted again, and
// its caller gets the first one's outcome. Default: a new id ("upd_…").
func WithUpdateID(id string) UpdateOption { return func(o *updateOptions) { o.id = id } }

// updateStore returns the client's UpdateStore, or ErrNotSupported.
func (c *Client) updateStore() (backend.UpdateStore, error) {
	s, ok := c.b.(backend.UpdateStore)
	if !ok {
		return nil, fmt.Errorf("updates: %w", backend.ErrNotSupported)
	}
	return s, nil
}

// UpdateRun sends the update name with arg (JSON-encoded) to the run
// runID and waits for its handler's JSON result, as Temporal's
// UpdateWorkflow waiting for the Completed stage: the run handles it at
// its next wait point, or at once when it is parked ([HandleUpdate]).
// ctx bounds the wait. Errors: [*UpdateRejectedError] (the validator's
// message; also [ErrRunTerminal] when the run finished first),
// [*UpdateFailedError] (the handler's error), an error wrapping
// [ErrRunNotFound], [ErrRunTerminal] (a new update for a finished run),
// [ErrTooManyUpdates] or [ErrInvalidArgument] at admission, and
// [*UpdateTimeoutError] when ctx ends first. Decode the result with
// json.Unmarshal, or use [Update] for a typed one.
func (c *Client) UpdateRun(ctx context.Context, runID, name string, arg any, opts ...UpdateOption) (json.RawMessage, error) {
	u, err := c.AdmitUpdate(ctx, runID, name, arg, opts...)
	if err != nil {
		return nil, err
	}
	if !u.State.Settled() {
		if u, err = c.WaitUpdate(ctx, runID, u.ID); err != nil {
			return nil, err
		}
	}
	return UpdateOutcome(u)
}

// Update is [Client.UpdateRun] with the result decoded into T.
func Update[T any](ctx context.Context, c *Client, runID, name string, arg any, opts ...UpdateOption) (T, error) {
	var out T
	raw, err := c.UpdateRun(ctx, runID, name, arg, opts...)
	if err != nil {
		return out, err
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			return out, fmt.Errorf("decode result of update %q of run %s into %T: %w", name, runID, out, err)
		}
	}
	return out, nil
}

// UpdateOutcome turns a settled update into UpdateRun's answer: its
// result, or the error of its rejection or failure. An update not yet
// settled gives an [*UpdateTimeoutError] with a nil Err.
func UpdateOutcome(u *backend.RunUpdate) (json.RawMessage, error) {
	switch u.State {
	case backend.UpdateCompleted:
		return u.Result, nil
	case backend.UpdateRejected:
		return nil, &UpdateRejectedError{RunID: u.WorkflowRunID, UpdateID: u.ID, Name: u.Name, Err: decodeError(u.Error)}
	case backend.UpdateFailed:
		return nil, &UpdateFailedError{RunID: u.WorkflowRunID, UpdateID: u.ID, Name: u.Name, Err: decodeError(u.Error)}
	}
	return nil, &UpdateTimeoutError{RunID: u.WorkflowRunID, UpdateID: u.ID, Stage: u.State}
}

// AdmitUpdate stores the update name with arg (JSON-encoded, at most
// [backend.MaxUpdateInputBytes]) for the run runID and wakes the run if it
// is parked, without waiting for it: the admission of [Client.UpdateRun].
// An id the run already has ([WithUpdateID]) returns that update as it
// stands (Duplicate set). Errors as UpdateRun's admission.
func (c *Client) AdmitUpdate(ctx context.Context, runID, name string, arg any, opts ...UpdateOption) (*backend.RunUpdate, error) {
	var o updateOptions
	for _, f := range opts {
		f(&o)
	}
	if o.id == "" {
		o.id = id.New(id.PrefixUpdate)
	}
	store, err := c.updateStore()
	if err != nil {
		return nil, err
	}
	raw, err := encodeValue(arg)
	if err != nil {
		return nil, fmt.Errorf("update %q of workflow run %s: %w: input: %w", name, runID, ErrInvalidArgument, err)
	}
	u, err := store.AdmitRunUpdate(ctx, backend.AdmitRunUpdateParams{WorkflowRunID: runID, UpdateID: o.id, Name: name, Input: raw})
	if err != nil {
		return nil, err
	}
	return c.finishedRunView(ctx, u)
}

// GetUpdate returns the update updateID of the run runID. An update still
// admitted when its run has finished (completed, failed, canceled) is
// returned rejected, with an error of code [CodeRunFinished]: no worker
// will handle it (nothing is written; the row stays as stored). Errors:
// [ErrUpdateNotFound].
func (c *Client) GetUpdate(ctx context.Context, runID, updateID string) (*backend.RunUpdate, error) {
	store, err := c.updateStore()
	if err != nil {
		return nil, err
	}
	u, err := store.GetRunUpdate(ctx, runID, updateID)
	if err != nil {
		return nil, err
	}
	return c.finishedRunView(ctx, u)
}

// ListUpdates returns the run's updates in admission order, those of a
// finished run that were never handled shown rejected as GetUpdate does.
func (c *Client) ListUpdates(ctx context.Context, runID string) ([]backend.RunUpdate, error) {
	store, err := c.updateStore()
	if err != nil {
		return nil, err
	}
	list, err := store.ListRunUpdates(ctx, runID, false)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].State == backend.UpdateAdmitted {
			u, err := c.finishedRunView(ctx, &list[i])
			if err != nil {
				return nil, err
			}
			list[i] = *u
		}
	}
	return list, nil
}

// finishedRunView returns u, or, when u is admitted and its run finished,
// u rejected with CodeRunFinished.
func (c *Client) finishedRunView(ctx context.Context, u *backend.RunUpdate) (*backend.RunUpdate, error) {
	if u.State != backend.UpdateAdmitted {
		return u, nil
	}
	run, err := c.b.GetWorkflowRun(ctx, u.WorkflowRunID)
	if err != nil {
		return nil, fmt.Errorf("update %s: read its run: %w", u.ID, err)
	}
	s := run.Status.Normalize()
	if !s.Terminal() {
		return u, nil
	}
	v := *u
	v.State = backend.UpdateRejected
	v.Error, _ = json.Marshal(Error{Message: fmt.Sprintf("the run %s before it handled the update", s), Code: CodeRunFinished})
	at := run.UpdatedAt
	if run.FinishedAt != nil {
		at = *run.FinishedAt
	}
	v.SettledAt = &at
	return &v, nil
}

// updatePoll is the longest WaitUpdate waits between two reads of the
// update (events are hints), and how often it wakes the update's run
// again, should the run have parked in the instant between reading its
// updates and parking.
const updatePoll = time.Second

// WaitUpdate waits until the update updateID of the run runID is settled
// (rejected, completed or failed, or read as rejected once its run
// finished) and returns it; ctx bounds the wait, and when it ends first
// the error is an [*UpdateTimeoutError] with the stage reached. It wakes
// on the backend's settlement events (PostgreSQL NOTIFY, SQLite's hub in
// the writer's process) and reads the update again after 5 ms, 10 ms, …,
// then every second.
func (c *Client) WaitUpdate(ctx context.Context, runID, updateID string) (*backend.RunUpdate, error) {
	store, err := c.updateStore()
	if err != nil {
		return nil, err
	}
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := c.b.Subscribe(subCtx)
	if err != nil {
		events = nil
	}
	// Reads back off from 5 ms to updatePoll, events or not: SQLite's
	// events reach only the writer's process, so a worker in another
	// process settles unannounced.
	poll := 5 * time.Millisecond
	lastWake := time.Now()
	for {
		u, err := c.GetUpdate(ctx, runID, updateID)
		if err != nil {
			return nil, timeoutOr(ctx, runID, updateID, backend.UpdateAdmitted, err)
		}
		if u.State.Settled() {
			return u, nil
		}
		if time.Since(lastWake) >= updatePoll {
			// Wake the run again (an admission of the same id does).
			lastWake = time.Now()
			if _, err := store.AdmitRunUpdate(ctx, backend.AdmitRunUpdateParams{WorkflowRunID: runID, UpdateID: updateID, Name: u.Name}); err != nil {
				return nil, timeoutOr(ctx, runID, updateID, u.State, err)
			}
		}
		wait := poll
		poll = min(poll*2, updatePoll)
		if err := waitForSettled(ctx, events, runID, updateID, wait); err != nil {
			return nil, &UpdateTimeoutError{RunID: runID, UpdateID: updateID, Stage: u.State, Err: err}
		}
	}
}

// timeoutOr is err, or an UpdateTimeoutError when it is ctx's ending.
func timeoutOr(ctx context.Context, runID, updateID string, stage backend.RunUpdateState, err error) error {
	if ctx.Err() != nil {
		return &UpdateTimeoutError{RunID: runID, UpdateID: updateID, Stage: stage, Err: ctx.Err()}
	}
	return err
}

// waitForSettled returns when an event says the update settled or its run
// finished, or that events may have been missed (backend.EventResync),
// after d, or with ctx's error.
func waitForSettled(ctx context.Context, events <-chan backend.Event, runID, updateID string, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.WorkflowRunID == runID && ((ev.Kind == backend.EventUpdateSettled && ev.UpdateID == updateID) || ev.Kind == backend.EventRunFinished) {
				return nil
			}
			if ev.Kind == backend.EventResync {
				return nil // the settlement may have been missed: read again
			}
		}
	}
}
