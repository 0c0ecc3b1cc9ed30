package backend

import (
	"context"
	"fmt"
)

// MaxPauseReasonLength is the longest pause reason in bytes
// ([PauseWorkflowRunParams.Reason]), Temporal's limit on a pause's
// reason (limit.maxIDLength, 1000).
const MaxPauseReasonLength = 1000

// Paused reports whether the run is paused: PausedAt is set and the run
// is not terminal. A terminal run is never paused, even when it ended
// while paused (canceled, failed by its deadline, or completed by a
// pass that was finishing when the pause came) and its pause columns
// were left as they were.
func (r *WorkflowRun) Paused() bool {
	return r != nil && r.PausedAt != nil && !r.Status.Terminal()
}

// RunPauser pauses and resumes runs: this SDK's own state, not
// OpenWorkflow's (go migration 12; statuses stay OpenWorkflow's five and
// "paused" is derived from the columns, as Temporal's pause_info beside
// its status). Both backends implement it. Each call acts on one run, in
// one transaction, and says whether it acted, so that a bulk action can
// report each run as acted on or skipped.
type RunPauser interface {
	// PauseWorkflowRun pauses a pending, running or sleeping run: no
	// claim takes it, OpenWorkflow's TypeScript claim included
	// (available_at NULL, its due time saved aside, as for a run waiting
	// for admission, which is not admitted while paused). A run a worker
	// executes stays leased to it: its step in progress finishes and is
	// recorded, its heartbeat then fails with [ErrRunPaused] and it
	// hands the run back ([WriteParkRun], accepted while paused) without
	// starting another step. Signals, hook payloads and children's ends
	// are recorded while paused and only move the saved due time; the
	// deadline keeps running (as Temporal's run timeout): the deadline
	// sweep fails a paused run whose deadline passes. An admitted run of
	// a limited workflow keeps its admission (as a parked one does).
	// Pausing a paused run changes nothing (Acted false, its first
	// reason kept). A completed, failed or canceled run gives an error
	// wrapping [ErrRunTerminal], a missing one [ErrRunNotFound], a
	// reason longer than [MaxPauseReasonLength] or not valid text
	// [ErrInvalidArgument].
	PauseWorkflowRun(ctx context.Context, p PauseWorkflowRunParams) (*RunControlResult, error)
	// ResumeWorkflowRun resumes a paused or a canceled run.
	//
	// A paused run is unpaused where it was: its saved due time is
	// restored (available_at, or go_queued_at for a run waiting for
	// admission), moved to now if a wake-up came while it was paused; it
	// is announced as work when due.
	//
	// A canceled run is resumed in place, as DBOS's ResumeWorkflow: same
	// id, status pending and due now (waiting for admission again if its
	// workflow has limits, as a retry), error, finished_at, worker_id and
	// any pause cleared, attempts kept. Its step history is kept, so a
	// replay returns the completed steps' results; a step that was
	// running when the run was canceled has no completed attempt and runs
	// again. A completed attempt of kind [StepRetry] named
	// "__resume:<p.MarkID>" (output {"attempts": n}) is added, from which
	// the retry budgets count again, as after a manual retry. A canceled
	// run whose deadline has passed is refused with [ErrDeadlinePassed]
	// (it would fail at its next claim); fork it instead.
	//
	// A pending, running or sleeping run that is not paused is left as it
	// is (Acted false). A completed run gives an error wrapping
	// [ErrRunTerminal], a failed one [ErrRunNotCanceled] (failed runs are
	// retried: [Client.RetryWorkflowRun]), a missing one [ErrRunNotFound].
	ResumeWorkflowRun(ctx context.Context, p ResumeWorkflowRunParams) (*RunControlResult, error)
}

// PauseWorkflowRunParams are the inputs of [RunPauser.PauseWorkflowRun].
type PauseWorkflowRunParams struct {
	// WorkflowRunID is the run to pause.
	WorkflowRunID string
	// Reason is stored with the pause and shown with the run; "" for
	// none. At most [MaxPauseReasonLength] bytes of valid text.
	Reason string
}

// Validate checks the reason: valid text ([ValidText]) of at most
// [MaxPauseReasonLength] bytes. It returns an error wrapping
// [ErrInvalidArgument] saying what is wrong.
func (p PauseWorkflowRunParams) Validate() error {
	if p.WorkflowRunID == "" {
		return fmt.Errorf("%w: pause: no workflow run id", ErrInvalidArgument)
	}
	if len(p.Reason) > MaxPauseReasonLength {
		return fmt.Errorf("%w: pause of run %s: reason is %d bytes, at most %d allowed",
			ErrInvalidArgument, p.WorkflowRunID, len(p.Reason), MaxPauseReasonLength)
	}
	if !ValidText(p.Reason) {
		return fmt.Errorf("%w: pause of run %s: reason is not valid UTF-8 or holds U+0000", ErrInvalidArgument, p.WorkflowRunID)
	}
	return nil
}

// ResumeWorkflowRunParams are the inputs of [RunPauser.ResumeWorkflowRun].
type ResumeWorkflowRunParams struct {
	// WorkflowRunID is the run to resume.
	WorkflowRunID string
	// MarkID is the id of the retry-kind attempt recorded when a canceled
	// run is resumed ("step_" + ULID from this SDK); required.
	MarkID string
}

// RunControlResult is the outcome of a pause or a resume of one run.
type RunControlResult struct {
	// Run is the run as stored after the call.
	Run *WorkflowRun
	// Acted is false when the run was already as asked (a pause of a
	// paused run, a resume of a run neither paused nor canceled), so
	// nothing was written.
	Acted bool
}

// ResumeRefusal is what [RunPauser.ResumeWorkflowRun] answers for a run
// its statements did not resume, read after them: not acted on for a
// run that is not terminal (not paused: nothing to resume), else the
// error naming why (completed: [ErrRunTerminal]; failed:
// [ErrRunNotCanceled]; canceled with its deadline passed:
// [ErrDeadlinePassed]). Both backends use it, so they refuse alike.
func ResumeRefusal(run *WorkflowRun) (*RunControlResult, error) {
	switch run.Status.Normalize() {
	case RunCompleted:
		return nil, fmt.Errorf("cannot resume workflow run %s: it completed: %w", run.ID, ErrRunTerminal)
	case RunFailed:
		return nil, fmt.Errorf("cannot resume workflow run %s: it failed; retry it instead: %w", run.ID, ErrRunNotCanceled)
	case RunCanceled:
		at := "?"
		if run.DeadlineAt != nil {
			at = FormatTime(*run.DeadlineAt)
		}
		return nil, fmt.Errorf("cannot resume canceled workflow run %s: its deadline passed at %s; fork it to run it again: %w",
			run.ID, at, ErrDeadlinePassed)
	}
	return &RunControlResult{Run: run}, nil
}
