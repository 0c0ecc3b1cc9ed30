package backend

import (
	"context"
	"fmt"
	"time"
)

// RunPruner is an optional capability of a [Backend]: deleting the
// finished runs of the namespace older than a retention period, with
// everything they own, in small batches. Both built-in backends implement
// it; package openworkflow's Client.PruneRuns walks the batches and the
// Pruner service runs it periodically (`ow runs prune`, `ow server`).
//
// What a prune deletes. A run is deleted when its stored status is
// terminal (completed, failed or canceled, legacy "succeeded" included),
// it finished before [PruneWorkflowRunsParams.FinishedBefore] (its
// finished_at, or its updated_at when a legacy row has none), and it is
// not in use. With the run go its step attempts, the signals delivered to
// them, its hooks and their payloads, its streams and their chunks, and
// (PostgreSQL) the records of its escaped JSON values. Deleting a run
// unlinks, never deletes, what points at it from elsewhere: a child's
// link to a deleted parent's step, a parent step's link to a deleted
// child (OpenWorkflow's foreign keys, ON DELETE SET NULL).
//
// What is in use and kept. A finished child run whose parent still waits
// for it — a step attempt of kind workflow that is running, either the
// parent step the child names or one linked to the child — is kept: the
// parent's step reads the child's output from the child's row when it
// resumes (the result is copied into the parent's step only then). It
// goes in a later prune, once the parent's step finished or the parent
// was itself deleted. A run that is not terminal is never deleted,
// whatever its age, so neither is a run with a live hook (a hook lives
// while its run is not terminal). A run that is locked by another
// transaction when the batch reaches it (PostgreSQL: a retry or a cancel
// writing it at that moment) is skipped, not waited for.
//
// Batches. One call examines the candidates after p.After in (created_at,
// id) order, deletes at most p.Limit of them in one short transaction,
// and returns the cursor to continue from, so that no transaction holds
// many locks or runs long, and a long prune makes progress a batch at a
// time. Runs skipped as in use are passed by the cursor: a later prune,
// starting over, sees them again.
//
// Counts. The counts the call returns are those of the runs it deleted,
// by the status they had, so that a cache of [Client.CountWorkflowRuns]
// can subtract them; the counts the backend reports afterwards no longer
// include them.
type RunPruner interface {
	// PruneWorkflowRuns deletes one batch of finished runs as described
	// above (with p.DryRun, deletes nothing and reports what it would
	// have deleted). Invalid params ([PruneWorkflowRunsParams.Validate])
	// fail with [ErrInvalidArgument] and delete nothing. On any other
	// error the batch's transaction is rolled back: nothing of it was
	// deleted.
	PruneWorkflowRuns(ctx context.Context, p PruneWorkflowRunsParams) (PruneResult, error)
}

// DefaultPruneBatch is the number of runs one [RunPruner.PruneWorkflowRuns]
// call deletes at most when Limit is 0; MaxPruneBatch the largest Limit.
const (
	DefaultPruneBatch = 500
	MaxPruneBatch     = 10_000
)

// PruneWorkflowRunsParams are the inputs of [RunPruner.PruneWorkflowRuns].
type PruneWorkflowRunsParams struct {
	// FinishedBefore is the cutoff, required: runs that finished strictly
	// before it are candidates.
	FinishedBefore time.Time
	// WorkflowName, when set, restricts the batch to that workflow's runs.
	WorkflowName string
	// ExceptWorkflowNames are workflows whose runs the batch leaves alone
	// (those with a retention of their own). At most 1,000 names.
	ExceptWorkflowNames []string
	// After is the Next of the previous batch of the same walk; "" starts
	// from the oldest run.
	After string
	// Limit is the most runs the batch deletes; 0 means
	// [DefaultPruneBatch], above [MaxPruneBatch] is invalid.
	Limit int
	// DryRun counts what the batch would delete and deletes nothing.
	DryRun bool
}

// Validate checks p as every backend does, with errors wrapping
// [ErrInvalidArgument] that name the field: a cutoff is given, the
// workflow names are valid text ([ValidText]), at most 1,000 exceptions,
// the cursor is one [PruneResult.Next] made, and Limit is from 0 to
// [MaxPruneBatch]. It returns the batch size and the decoded cursor (nil
// for none).
func (p PruneWorkflowRunsParams) Validate() (limit int, after *Cursor, err error) {
	if p.FinishedBefore.IsZero() {
		return 0, nil, fmt.Errorf("%w: a prune needs a FinishedBefore cutoff", ErrInvalidArgument)
	}
	if err := checkText("workflow name", p.WorkflowName); err != nil {
		return 0, nil, err
	}
	if len(p.ExceptWorkflowNames) > 1000 {
		return 0, nil, fmt.Errorf("%w: %d excepted workflow names, at most 1000", ErrInvalidArgument, len(p.ExceptWorkflowNames))
	}
	for _, n := range p.ExceptWorkflowNames {
		if err := checkText("excepted workflow name", n); err != nil {
			return 0, nil, err
		}
	}
	switch {
	case p.Limit < 0 || p.Limit > MaxPruneBatch:
		return 0, nil, fmt.Errorf("%w: prune batch limit %d, want 0 (default %d) to %d", ErrInvalidArgument, p.Limit, DefaultPruneBatch, MaxPruneBatch)
	case p.Limit == 0:
		limit = DefaultPruneBatch
	default:
		limit = p.Limit
	}
	if p.After != "" {
		c, err := DecodeCursor(p.After)
		if err != nil {
			return 0, nil, fmt.Errorf("prune cursor: %w", err)
		}
		after = &c
	}
	return limit, after, nil
}

// PruneResult is what one batch of [RunPruner.PruneWorkflowRuns] did.
type PruneResult struct {
	// Deleted counts the runs deleted (with DryRun: that would have been),
	// by the status they had.
	Deleted RunCounts `json:"deleted"`
	// Next is the cursor of the next batch, "" when the walk is done (the
	// batch found fewer candidates than its limit).
	Next string `json:"next,omitempty"`
}

// Total is the number of runs counted in c, all statuses.
func (c RunCounts) Total() int { return c.Pending + c.Running + c.Completed + c.Failed + c.Canceled }

// Plus returns c + d, status by status (the totals of several batches).
func (c RunCounts) Plus(d RunCounts) RunCounts {
	return RunCounts{
		Pending: c.Pending + d.Pending, Running: c.Running + d.Running, Completed: c.Completed + d.Completed,
		Failed: c.Failed + d.Failed, Canceled: c.Canceled + d.Canceled,
	}
}

// Sub subtracts d from c, status by status (a counts cache forgetting the
// runs a prune deleted).
func (c RunCounts) Sub(d RunCounts) RunCounts {
	return RunCounts{
		Pending: c.Pending - d.Pending, Running: c.Running - d.Running, Completed: c.Completed - d.Completed,
		Failed: c.Failed - d.Failed, Canceled: c.Canceled - d.Canceled,
	}
}

// TerminalStoredStatuses are the values of workflow_runs.status a prune
// deletes: the terminal statuses and OpenWorkflow's legacy "succeeded".
var TerminalStoredStatuses = []RunStatus{RunCompleted, RunSucceeded, RunFailed, RunCanceled}
