package openworkflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/openworkflow-go/openworkflow/backend"
)

// updateStepPrefix begins the durable key of an accepted update's handler
// step: "__update:<name>:<update id>". The update id makes the key unique
// in the run whatever the workflow's own steps are called, so the step is
// found by key on every replay and is never taken for another.
const updateStepPrefix = "__update:"

// updateStepKey is the durable key of update u's handler step.
func updateStepKey(name, updateID string) string {
	return updateStepPrefix + name + ":" + updateID
}

// errStepInValidator is what a step called inside an update validator
// returns; the update is then rejected.
var errStepInValidator = errors.New("openworkflow: an update validator may not call steps, sleep or wait (it must not change the run)")

// updateHandler is one declared update handler, with its types erased.
type updateHandler struct {
	// validate decodes the input and runs the validator (nil: accept).
	validate func(input json.RawMessage) error
	// run decodes the input, runs the handler and encodes its result.
	run func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)
}

// HandleUpdate declares, for the rest of this pass, the handler of the
// updates named name that clients send with [Client.UpdateRun], as
// Temporal's workflow.SetUpdateHandlerWithOptions. Call it at the top of
// the workflow function, before its first wait point: every pass (each
// replay from the top) declares it again, and a later declaration of a
// name replaces the earlier one.
//
// The run handles the updates admitted for it at its next wait point
// (when a Sleep, WaitForSignal, child or hook wait parks it), or at once
// when it is parked already (the update wakes it; it parks again until its
// own wake-up time), in admission order:
//
//   - validator (nil: accept all) receives the decoded input and returns
//     nil to accept or an error to reject. It runs before anything is
//     recorded and may not call steps (a step call in it returns an error
//     and rejects the update); a rejection, a panic in it and an input that
//     does not decode into In write only the update's state and message:
//     no step attempt, nothing in the run's history. A validator runs at
//     most once per update; a replay never runs it again.
//   - handler runs as a durable step named "__update:<name>:<update id>"
//     (once per update id: its recorded result is what every later pass
//     and every caller gets). Its context is a step's. Its result is
//     JSON-encoded as the update's result; an error (or panic) fails the
//     update — the caller gets an [*UpdateFailedError] — but not the run,
//     and is not retried. The handler runs as a step, so it does not change
//     the workflow function's variables on replay: what the workflow must
//     learn from an update it reads from a step's result (see
//     docs/updates.md).
//
// An update whose name the run has not declared by the wait point where
// it is handled is rejected ("unknown update"), as Temporal rejects an
// update with no handler. Errors: [ErrNotInWorkflow]; an empty name or a
// nil handler.
func HandleUpdate[In, Out any](ctx Context, name string, handler func(ctx context.Context, in In) (Out, error), validator func(in In) error) error {
	x, err := execOf(ctx)
	if err != nil {
		return err
	}
	if name == "" {
		return NonRetryable(errors.New("handle update: empty update name"))
	}
	if handler == nil {
		return NonRetryable(fmt.Errorf("handle update %q: nil handler", name))
	}
	decode := func(raw json.RawMessage) (In, error) {
		var in In
		if len(raw) == 0 {
			return in, nil
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return in, fmt.Errorf("input does not decode into %T: %w", in, err)
		}
		return in, nil
	}
	h := &updateHandler{
		validate: func(raw json.RawMessage) error {
			in, err := decode(raw)
			if err != nil || validator == nil {
				return err
			}
			return validator(in)
		},
		run: func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
			in, err := decode(raw)
			if err != nil {
				return nil, err
			}
			out, err := handler(ctx, in)
			if err != nil {
				return nil, err
			}
			return marshalValue(out)
		},
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.updateHandlers == nil {
		x.updateHandlers = make(map[string]*updateHandler)
	}
	x.updateHandlers[name] = h
	return nil
}

// updateOutcome is the output recorded by an update's handler step: its
// result, or the error it returned (a failed update is still recorded as
// a completed step, so that a replay finds it and never runs it again).
type updateOutcome struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// handlerNames lists the declared update names, sorted, for messages.
func (x *pass) handlerNames() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	names := make([]string, 0, len(x.updateHandlers))
	for n := range x.updateHandlers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (x *pass) updateHandler(name string) (*updateHandler, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	h, ok := x.updateHandlers[name]
	return h, ok
}

// wantsUpdates reports whether the pass must read its run's admitted
// updates at its wait point: it declared a handler, or it was woken
// before any of its waits came due (an update, or a delivery, woke it).
func (x *pass) wantsUpdates() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.updateHandlers) > 0 || x.wokenEarly
}

// handleUpdates handles the run's admitted updates at the pass's wait
// point (parking true: the pass is about to park) or end (parking false:
// the run completes): an update whose handler step is recorded is settled
// from the record (a pass that crashed after the step and before the
// settlement); at a wait point, the others are validated and handled in
// admission order. At the run's completion the others are left admitted:
// a caller reads an admitted update of a finished run as rejected (see
// Client.GetUpdate). It returns an error only when the pass lost its run.
func (x *pass) handleUpdates(store backend.UpdateStore, parking bool) error {
	pending, err := store.ListRunUpdates(x.ctx, x.run.ID, true)
	if err != nil {
		return x.backendErr("read the run's updates", err)
	}
	for _, u := range pending {
		if err := x.handleUpdate(store, u, parking); err != nil {
			return err
		}
	}
	return nil
}

func (x *pass) handleUpdate(store backend.UpdateStore, u backend.RunUpdate, parking bool) error {
	key := updateStepKey(u.Name, u.ID)
	if a, ok := x.hist.Completed(key); ok {
		return x.settleUpdate(store, u, a.Output)
	}
	if !parking {
		return nil
	}
	h, ok := x.updateHandler(u.Name)
	if !ok {
		return x.rejectUpdate(store, u, fmt.Errorf("unknown update %q: the workflow declares no handler for it (it declares %q)", u.Name, x.handlerNames()))
	}
	// A running attempt of the handler's step is an acceptance a crashed
	// pass recorded (a handler running longer than RunningStepAfter has
	// its row written): the validator accepted it then, and is not asked
	// again.
	if _, accepted := x.hist.Running(key); !accepted {
		if err := x.validateUpdate(h, u.Input); err != nil {
			return x.rejectUpdate(store, u, err)
		}
	}
	outcome, err := runFunction(x, key, func(ctx context.Context) (updateOutcome, error) {
		raw, err := callProtected(func() (json.RawMessage, error) { return h.run(ctx, u.Input) })
		if err != nil {
			return updateOutcome{Error: encodeError(err)}, nil
		}
		return updateOutcome{Result: raw}, nil
	}, nil, true)
	var stepErr *StepError
	switch {
	case errors.As(err, &stepErr) && !x.isLost():
		// The outcome could not be recorded (a result no backend can
		// store): the update fails with that error, once — its step's
		// failed attempt is in the history, and the settled row is never
		// handled again.
		if err := x.flush(); err != nil {
			return err
		}
		return x.settle(store, backend.SettleRunUpdateParams{WorkflowRunID: x.run.ID, WorkerID: x.workerID, UpdateID: u.ID,
			State: backend.UpdateFailed, Error: stepErr.stored})
	case err != nil:
		return err // the step could not be recorded: the pass lost its run
	}
	if err := x.flush(); err != nil {
		return err
	}
	raw, _ := json.Marshal(outcome)
	return x.settleUpdate(store, u, raw)
}

// validateUpdate runs h's validator with steps forbidden: a step call in
// it makes the validation fail, even if the validator swallowed the
// step's error. A panic is a rejection too.
func (x *pass) validateUpdate(h *updateHandler, input json.RawMessage) error {
	x.mu.Lock()
	x.validating, x.validatorStepped = true, false
	x.mu.Unlock()
	_, err := callProtected(func() (struct{}, error) { return struct{}{}, h.validate(input) })
	x.mu.Lock()
	stepped := x.validatorStepped
	x.validating, x.validatorStepped = false, false
	x.mu.Unlock()
	if err == nil && stepped {
		err = errStepInValidator
	}
	return err
}

func (x *pass) rejectUpdate(store backend.UpdateStore, u backend.RunUpdate, cause error) error {
	stored := encodeError(cause)
	return x.settle(store, backend.SettleRunUpdateParams{WorkflowRunID: x.run.ID, WorkerID: x.workerID, UpdateID: u.ID,
		State: backend.UpdateRejected, Error: stored})
}

// settleUpdate settles u from its handler step's recorded output.
func (x *pass) settleUpdate(store backend.UpdateStore, u backend.RunUpdate, output json.RawMessage) error {
	var o updateOutcome
	if err := json.Unmarshal(output, &o); err != nil {
		o.Error = encodeError(fmt.Errorf("the recorded result of update %s cannot be read: %w", u.ID, err))
	}
	p := backend.SettleRunUpdateParams{WorkflowRunID: x.run.ID, WorkerID: x.workerID, UpdateID: u.ID}
	if len(o.Error) > 0 {
		p.State, p.Error = backend.UpdateFailed, o.Error
	} else {
		p.State, p.Result = backend.UpdateCompleted, o.Result
		if len(p.Result) == 0 {
			p.Result = json.RawMessage("null")
		}
	}
	return x.settle(store, p)
}

func (x *pass) settle(store backend.UpdateStore, p backend.SettleRunUpdateParams) error {
	if err := store.SettleRunUpdate(x.ctx, p); err != nil {
		return x.backendErr(fmt.Sprintf("settle update %s", p.UpdateID), err)
	}
	return nil
}
