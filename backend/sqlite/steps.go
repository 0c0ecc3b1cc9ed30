package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// insertStepArgs is an attempt to insert and its validated JSON columns
// (text, or nil for SQL NULL).
type insertStepArgs struct {
	step                           *backend.StepAttempt
	config, context, output, errJS any
}

// insertStep inserts the attempt a.step into run runID while workerID
// owns it: started_at is a.step.StartedAt or now, finished_at
// a.step.FinishedAt, or now for a completed or failed attempt.
func (b *Backend) insertStep(ctx context.Context, tx *txn, now time.Time, runID, workerID string, a *insertStepArgs) error {
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
	var stepID string
	err := tx.QueryRowContext(ctx, b.q.InsertStep,
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
		sql.Named("now", timeArg(now))).Scan(&stepID)
	if errors.Is(err, sql.ErrNoRows) {
		return b.fenceError(ctx, tx, runID)
	}
	return err
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
	step, err := scanStep(q.QueryRowContext(ctx, b.q.GetStep, sql.Named("ns", b.ns), sql.Named("step_id", stepID)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, backend.ErrStepNotFound
	}
	return step, err
}

// updateStep runs a step UPDATE fenced with owned_step (the named
// arguments ns, run_id, step_id, worker_id and now are added to args) and
// explains a miss.
func (b *Backend) updateStep(ctx context.Context, tx *txn, now time.Time, runID, stepID, workerID, query string, args ...any) error {
	all := append([]any{
		sql.Named("ns", b.ns),
		sql.Named("run_id", runID),
		sql.Named("step_id", stepID),
		sql.Named("worker_id", workerID),
		sql.Named("now", timeArg(now)),
	}, args...)
	var got string
	err := tx.QueryRowContext(ctx, query, all...).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return b.stepFenceError(ctx, tx, runID, stepID, workerID)
	}
	return err
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
