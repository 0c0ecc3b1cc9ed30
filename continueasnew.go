package openworkflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// ErrContinuedAsNew is matched (errors.Is) by the error a workflow returns
// to continue as new ([ContinueAsNew]) and by the error
// [RunHandle.Result] returns, with [DisableFollowingRuns], for a run that
// continued as new ([RunContinuedError]).
var ErrContinuedAsNew = errors.New("workflow run continued as new")

// ContinueAsNewError is what [ContinueAsNew] returns: a workflow function
// returning it (directly or wrapped) ends its run and starts a fresh run
// of the same workflow with Input, as Temporal Go's
// workflow.NewContinueAsNewError. errors.Is(err, ErrContinuedAsNew) holds.
type ContinueAsNewError struct {
	// Input is the successor's input, as JSON.
	Input json.RawMessage
	// Version is the successor's workflow version; nil: the run's own.
	Version *string
	// Delay is how long after the switch the successor is first due
	// (Temporal's BackoffStartInterval); 0: at once.
	Delay time.Duration
	// err is why Input could not be encoded (the run then fails).
	err error
}

// Error says that the run continues as new, or why it cannot.
func (e *ContinueAsNewError) Error() string {
	if e.err != nil {
		return fmt.Sprintf("continue as new: %v", e.err)
	}
	return "continue as new"
}

// Is reports whether target is [ErrContinuedAsNew].
func (e *ContinueAsNewError) Is(target error) bool { return target == ErrContinuedAsNew }

// ContinueAsNewOption configures [ContinueAsNew].
type ContinueAsNewOption func(*ContinueAsNewError)

// ContinueWithVersion makes the successor a run of version v of the same
// workflow (a worker of that version must be registered to execute it);
// without it the successor has the run's version.
func ContinueWithVersion(v string) ContinueAsNewOption {
	return func(e *ContinueAsNewError) { e.Version = &v }
}

// ContinueAfter makes the successor first due d after the switch
// (Temporal's BackoffStartInterval); without it, or with d <= 0, at once.
func ContinueAfter(d time.Duration) ContinueAsNewOption {
	return func(e *ContinueAsNewError) { e.Delay = max(d, 0) }
}

// ContinueAsNew returns the error a workflow function returns to end its
// run and start a fresh run of the same workflow with input and an empty
// history, so that an endless workflow (a loop, a long-lived entity)
// keeps a bounded history:
//
//	if ow.HistoryLength(ctx) > 1000 {
//		return 0, ow.ContinueAsNew(state)
//	}
//
// The worker commits the run's recorded steps, then in one transaction
// fenced on the run's lease ([backend.RunContinuer]) stores the run
// completed with the output {"continuedAsNew": {"runId": <successor>}} and
// inserts the successor: same workflow name and version (or
// [ContinueWithVersion]'s), priority, concurrency key, deadline (the
// deadline bounds the whole chain), parent link and schedule; no
// idempotency key (the first run keeps its own, so a start with it
// returns the first run, whose [RunHandle.Result] follows the chain).
// Signals sent to the run ([Client.SignalRun]) and not yet received move
// to the successor in that transaction; signals the workflow received
// but did not act on are not re-delivered (drain them before returning).
// The run's hooks end with it (a hook is live while its run is not
// terminal). A worker that lost the run's lease creates nothing; once
// committed, a replay of the old run never happens (it is completed), so
// a chain has exactly one successor per link.
//
// Return it from the workflow function itself, not from a step: a step
// returning it fails as any error does. A workflow whose backend lacks
// [backend.RunContinuer], or whose input cannot be encoded as JSON,
// fails without retry, saying why.
func ContinueAsNew(input any, opts ...ContinueAsNewOption) error {
	e := &ContinueAsNewError{}
	e.Input, e.err = encodeValue(input)
	for _, o := range opts {
		o(e)
	}
	return e
}

// Continuation is what a run started by [ContinueAsNew] records of the
// run it continues: its id and this run's generation in the chain (1 for
// the first successor). See [RunInfo].ContinuedFrom.
type Continuation = backend.Continuation

// RunContinuedError is returned by [RunHandle.Result] with
// [DisableFollowingRuns] for a run that continued as new:
// errors.Is(err, ErrContinuedAsNew) holds, and NextRunID is its successor.
type RunContinuedError struct {
	// RunID and WorkflowName are the run whose result was asked for.
	RunID, WorkflowName string
	// NextRunID is its successor, whose Result carries on.
	NextRunID string
}

// Error names the run and its successor.
func (e *RunContinuedError) Error() string {
	return fmt.Sprintf("workflow %s (run %s) continued as new as run %s", e.WorkflowName, e.RunID, e.NextRunID)
}

// Is reports whether target is [ErrContinuedAsNew].
func (e *RunContinuedError) Is(target error) bool { return target == ErrContinuedAsNew }

// HistoryLength is the number of step attempts the executing run has
// recorded so far (replayed and new, of every kind), which grows with each
// step, retry and wait; a workflow that loops compares it with a bound of
// its own to decide when to [ContinueAsNew]. A run fails with
// [StepLimitExceededError] beyond [StepLimit] (1,000) attempts, and a
// worker reads a run's whole history at each claim, so a few hundred is a
// good bound (Temporal suggests continuing at 4,096 events).
func HistoryLength(ctx Context) int { return ctx.exec().hist.Count() }

// continueAsNew makes the transition of a pass whose workflow returned
// can: its recorded steps are committed, then the run ends and its
// successor starts in one fenced transaction. A backend without
// RunContinuer, or an input that cannot be encoded, fails the run for
// good.
func (w *Worker) continueAsNew(x *pass, can *ContinueAsNewError) {
	rc, ok := w.b.(backend.RunContinuer)
	var why error
	switch {
	case can.err != nil:
		why = fmt.Errorf("the input of the successor of run %s cannot be encoded: %w", x.run.ID, can.err)
	case !ok:
		why = fmt.Errorf("run %s returned ContinueAsNew, but its backend (%T) does not implement backend.RunContinuer", x.run.ID, w.b)
	}
	if why != nil {
		tw := backend.Write{Kind: backend.WriteFailRun, WorkflowRunID: x.run.ID, WorkerID: x.workerID, Error: encodeError(NonRetryable(why))}
		if err := x.write(tw); err != nil {
			w.settle(x)
			return
		}
		x.outcome = telemetry.OutcomeFailed
		w.observeRunFinished(x, backend.RunFailed)
		return
	}
	if err := x.flush(); err != nil {
		w.settle(x)
		return
	}
	p := backend.ContinueWorkflowRunParams{WorkflowRunID: x.run.ID, WorkerID: x.workerID, Input: can.Input, Version: can.Version,
		Context: w.tr.inject(x.ctx)}
	if can.Delay > 0 {
		p.AvailableAt = x.now().Add(can.Delay)
	}
	next, err := rc.ContinueWorkflowRun(x.ctx, p)
	if err != nil {
		_ = x.lose(err)
		w.settle(x)
		return
	}
	x.outcome = telemetry.OutcomeCompleted
	x.span.SetAttributes(telemetry.AttrExecutionOutcome.String(x.outcome))
	w.observeRunFinished(x, backend.RunCompleted)
	if next.AvailableAt != nil {
		w.noteWake(*next.AvailableAt)
	}
	w.log.Debug("openworkflow: run continued as new", "run", x.run.ID, "next", next.ID)
}
