package openworkflow

import (
	"context"
	"fmt"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// RunControlResult is the outcome of [Client.PauseRun] and
// [Client.ResumeRun]: the run as stored after the call, and whether the
// call changed it (false for a pause of a paused run, or a resume of a run
// that was neither paused nor canceled).
type RunControlResult = backend.RunControlResult

// PauseRun pauses run runID (this SDK's own, as Temporal's
// PauseWorkflowExecution): from now on no worker starts a step of it, a
// TypeScript OpenWorkflow worker on the same database included, until
// [Client.ResumeRun]. The run keeps its status; [WorkflowRun.Paused]
// reports the pause and PausedAt and PauseReason say when and why.
//
// A run a worker is executing finishes the step in progress, which is
// recorded; the worker learns of the pause at its next heartbeat
// (WorkerOptions.HeartbeatInterval) and hands the run back without
// starting another step. Signals, hook payloads and children's ends are
// recorded while the run is paused; its sleeps come due; nothing runs
// until it is resumed, when it is due at once if anything woke it. Its
// deadline keeps running while it is paused (as Temporal's run timeout):
// a paused run whose deadline passes fails. A paused run holds no worker
// slot; an admitted run of a workflow with concurrency limits keeps its
// admission (as a sleeping run does), and a run still waiting for
// admission is not admitted while paused. [Client.CancelRun] cancels a
// paused run at once.
//
// reason (at most [backend.MaxPauseReasonLength] bytes; "" for none) is
// stored with the pause. Pausing a paused run changes nothing and keeps
// the first reason. Errors: [ErrRunTerminal] for a completed, failed or
// canceled run, [ErrRunNotFound], [ErrInvalidArgument] for a bad reason,
// and backend.ErrNotSupported for a backend without pause.
func (c *Client) PauseRun(ctx context.Context, runID, reason string) (*RunControlResult, error) {
	p, err := c.pauser()
	if err != nil {
		return nil, fmt.Errorf("pause workflow run %s: %w", runID, err)
	}
	return p.PauseWorkflowRun(ctx, backend.PauseWorkflowRunParams{WorkflowRunID: runID, Reason: reason})
}

// ResumeRun resumes run runID, which is either paused or canceled.
//
// A paused run is unpaused where it was: it is due again at the time it
// was due (a pending run's start, a sleep's end), or at once when a
// signal, a hook payload or a child's end woke it while paused, or when a
// worker handed it back mid-pass.
//
// A canceled run is resumed in place, as DBOS's ResumeWorkflow (not a new
// run: that is [Client.ForkRun]): same id, pending and due now, its step
// history kept, so its replay returns the results of the steps that
// completed, and a step that was running when it was canceled runs again.
// Its retry budgets count from the resume, as after [Client.RetryRun]; a
// run of a workflow with limits waits for admission again. Its deadline is
// kept: a canceled run whose deadline has passed is refused with
// [ErrDeadlinePassed] (fork it to run it again).
//
// A run neither paused nor canceled is left as it is (Acted false).
// Errors: [ErrRunTerminal] for a completed run, [ErrRunNotCanceled] for a
// failed one (retry it with [Client.RetryRun]), [ErrRunNotFound].
func (c *Client) ResumeRun(ctx context.Context, runID string) (*RunControlResult, error) {
	p, err := c.pauser()
	if err != nil {
		return nil, fmt.Errorf("resume workflow run %s: %w", runID, err)
	}
	return p.ResumeWorkflowRun(ctx, backend.ResumeWorkflowRunParams{WorkflowRunID: runID, MarkID: id.New(id.PrefixStep)})
}

// pauser is the client's backend as a [backend.RunPauser].
func (c *Client) pauser() (backend.RunPauser, error) {
	p, ok := c.b.(backend.RunPauser)
	if !ok {
		return nil, fmt.Errorf("pause and resume: %w", backend.ErrNotSupported)
	}
	return p, nil
}
