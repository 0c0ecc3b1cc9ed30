package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// CreateStepAttempt inserts a running attempt of run p.WorkflowRunID while
// that run is running under p.WorkerID (config {} when nil, context SQL
// NULL when nil). It fails with [backend.ErrNotOwner] or
// [backend.ErrRunNotFound], and with [backend.ErrInvalidArgument] for an
// empty step name or kind or invalid JSON.
func (b *Backend) CreateStepAttempt(ctx context.Context, p backend.CreateStepAttemptParams) (*backend.StepAttempt, error) {
	if p.StepName == "" || p.Kind == "" {
		return nil, fmt.Errorf("create step attempt for workflow run %s: %w: empty step name or kind",
			p.WorkflowRunID, backend.ErrInvalidArgument)
	}
	config, err := jsonArgOr("config", p.Config, "{}")
	if err != nil {
		return nil, fmt.Errorf("create step attempt %q for workflow run %s: %w", p.StepName, p.WorkflowRunID, err)
	}
	stepContext, err := jsonArg("context", p.Context)
	if err != nil {
		return nil, fmt.Errorf("create step attempt %q for workflow run %s: %w", p.StepName, p.WorkflowRunID, err)
	}
	ins := insertStepArgs{
		step: &backend.StepAttempt{
			ID: id.New(id.PrefixStep), StepName: p.StepName, Kind: p.Kind, Status: backend.StepRunning,
		},
		config: config, context: stepContext,
	}
	var step *backend.StepAttempt
	err = b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		var err error
		step, err = b.insertStep(ctx, tx, now, p.WorkflowRunID, p.WorkerID, &ins, true)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create step attempt %q for workflow run %s: %w", p.StepName, p.WorkflowRunID, err)
	}
	return step, nil
}

// insertStepArgs is an attempt to insert and its validated JSON columns
// (text, or nil for SQL NULL).
type insertStepArgs struct {
	step                           *backend.StepAttempt
	config, context, output, errJS any
}

// insertStep inserts the attempt a.step into run runID while workerID
// owns it: started_at is a.step.StartedAt or now, finished_at
// a.step.FinishedAt, or now for a completed or failed attempt.
//
// It returns the inserted row when full is set, else nil (the batch does
// not need it, and skips reading and parsing it back).
func (b *Backend) insertStep(ctx context.Context, tx *txn, now time.Time, runID, workerID string, a *insertStepArgs, full bool) (*backend.StepAttempt, error) {
	s := a.step
	startedAt, finishedAt := timeArg(now), any(nil)
	if s.StartedAt != nil {
		startedAt = timeArg(*s.StartedAt)
	}
	if s.FinishedAt != nil {
		finishedAt = timeArg(*s.FinishedAt)
	} else if s.Status != backend.StepRunning {
		finishedAt = timeArg(now)
	}
	query := qInsertStepID
	if full {
		query = qInsertStep
	}
	row := tx.QueryRowContext(ctx, query,
		sql.Named("ns", b.ns),
		sql.Named("step_id", s.ID),
		sql.Named("run_id", runID),
		sql.Named("worker_id", workerID),
		sql.Named("step_name", s.StepName),
		sql.Named("kind", string(s.Kind)),
		sql.Named("status", string(s.Status)),
		sql.Named("config", a.config),
		sql.Named("context", a.context),
		sql.Named("output", a.output),
		sql.Named("error", a.errJS),
		sql.Named("child_ns", nullStringArg(s.ChildWorkflowRunNamespaceID)),
		sql.Named("child_id", nullStringArg(s.ChildWorkflowRunID)),
		sql.Named("started_at", startedAt),
		sql.Named("finished_at", finishedAt),
		sql.Named("now", timeArg(now)))
	var step *backend.StepAttempt
	var err error
	if full {
		step, err = scanStep(row)
	} else {
		var stepID string
		err = row.Scan(&stepID)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, b.fenceError(ctx, tx, runID)
	}
	return step, err
}

// GetStepAttempt returns the attempt, or an error wrapping
// [backend.ErrStepNotFound].
func (b *Backend) GetStepAttempt(ctx context.Context, stepAttemptID string) (*backend.StepAttempt, error) {
	var step *backend.StepAttempt
	err := b.read(ctx, func() (err error) {
		step, err = b.getStep(ctx, b.reader(), stepAttemptID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get step attempt %s: %w", stepAttemptID, err)
	}
	return step, nil
}

// getStep reads one attempt; a missing one is an error wrapping
// backend.ErrStepNotFound.
func (b *Backend) getStep(ctx context.Context, q querier, stepID string) (*backend.StepAttempt, error) {
	step, err := scanStep(q.QueryRowContext(ctx, qGetStep, sql.Named("ns", b.ns), sql.Named("step_id", stepID)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, backend.ErrStepNotFound
	}
	return step, err
}

// CompleteStepAttempt marks a running attempt completed with p.Output
// (JSON null when nil) while its run is running under p.WorkerID.
// Completing a completed attempt returns it unchanged (first output
// kept). Errors wrap [backend.ErrRunNotFound], [backend.ErrNotOwner],
// [backend.ErrStepNotFound] or, for a failed attempt,
// [backend.ErrStepNotRunning].
func (b *Backend) CompleteStepAttempt(ctx context.Context, p backend.CompleteStepAttemptParams) (*backend.StepAttempt, error) {
	output, err := jsonArgOr("output", p.Output, "null")
	if err != nil {
		return nil, fmt.Errorf("complete step attempt %s: %w", p.StepAttemptID, err)
	}
	step, err := b.ownedStepUpdate(ctx, p.WorkflowRunID, p.StepAttemptID, p.WorkerID, qCompleteStep,
		sql.Named("output", output))
	if err != nil {
		return nil, fmt.Errorf("complete step attempt %s: %w", p.StepAttemptID, err)
	}
	return step, nil
}

// FailStepAttempt marks a running attempt failed with p.Error while its
// run is running under p.WorkerID; failing a failed attempt returns it
// unchanged. Errors are those of [Backend.CompleteStepAttempt].
func (b *Backend) FailStepAttempt(ctx context.Context, p backend.FailStepAttemptParams) (*backend.StepAttempt, error) {
	errJSON, err := jsonArg("error", p.Error)
	if err != nil {
		return nil, fmt.Errorf("fail step attempt %s: %w", p.StepAttemptID, err)
	}
	step, err := b.ownedStepUpdate(ctx, p.WorkflowRunID, p.StepAttemptID, p.WorkerID, qFailStep,
		sql.Named("error", errJSON))
	if err != nil {
		return nil, fmt.Errorf("fail step attempt %s: %w", p.StepAttemptID, err)
	}
	return step, nil
}

// SetStepAttemptChildWorkflowRun links a running attempt to the child run
// it started, while its run is running under p.WorkerID. Errors are those
// of [Backend.CompleteStepAttempt], or [backend.ErrRunNotFound] naming
// the child when no such child run exists.
func (b *Backend) SetStepAttemptChildWorkflowRun(ctx context.Context, p backend.SetStepAttemptChildWorkflowRunParams) (*backend.StepAttempt, error) {
	step, err := b.ownedStepUpdate(ctx, p.WorkflowRunID, p.StepAttemptID, p.WorkerID, qSetStepChild,
		sql.Named("child_ns", p.ChildWorkflowRunNamespaceID),
		sql.Named("child_id", p.ChildWorkflowRunID))
	if isConstraint(err) {
		err = fmt.Errorf("child workflow run %s/%s: %w", p.ChildWorkflowRunNamespaceID, p.ChildWorkflowRunID, backend.ErrRunNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("set child workflow run of step attempt %s: %w", p.StepAttemptID, err)
	}
	return step, nil
}

// ownedStepUpdate runs updateStep in its own write transaction.
func (b *Backend) ownedStepUpdate(ctx context.Context, runID, stepID, workerID, query string, args ...any) (*backend.StepAttempt, error) {
	var step *backend.StepAttempt
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		var err error
		step, err = b.updateStep(ctx, tx, now, runID, stepID, workerID, query, args...)
		return err
	})
	return step, err
}

// updateStep runs a step UPDATE fenced with stepOwned (the named
// arguments ns, run_id, step_id, worker_id and now are added to args) and
// explains a miss.
func (b *Backend) updateStep(ctx context.Context, tx *txn, now time.Time, runID, stepID, workerID, query string, args ...any) (*backend.StepAttempt, error) {
	all := append([]any{
		sql.Named("ns", b.ns),
		sql.Named("run_id", runID),
		sql.Named("step_id", stepID),
		sql.Named("worker_id", workerID),
		sql.Named("now", timeArg(now)),
	}, args...)
	step, err := scanStep(tx.QueryRowContext(ctx, query, all...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, b.stepFenceError(ctx, tx, runID, stepID, workerID)
	}
	return step, err
}

// stepFenceError explains why a fenced step write matched no row, in this
// order: the run is missing (ErrRunNotFound), not running under workerID
// (ErrNotOwner), the step is missing or belongs to another run
// (ErrStepNotFound), or the step is not in a status the write accepts
// (ErrStepNotRunning).
func (b *Backend) stepFenceError(ctx context.Context, tx *txn, runID, stepID, workerID string) error {
	run, err := b.getRun(ctx, tx, runID)
	if err != nil {
		return fmt.Errorf("workflow run %s: %w", runID, err)
	}
	if run.Status != backend.RunRunning || run.WorkerID == nil || *run.WorkerID != workerID {
		return fmt.Errorf("workflow run %s: %w", runID, backend.ErrNotOwner)
	}
	step, err := b.getStep(ctx, tx, stepID)
	if err != nil {
		return err
	}
	if step.WorkflowRunID != runID {
		return fmt.Errorf("%w in workflow run %s", backend.ErrStepNotFound, runID)
	}
	return fmt.Errorf("%w: status is %s", backend.ErrStepNotRunning, step.Status)
}
