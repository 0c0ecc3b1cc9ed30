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

var _ backend.RunContinuer = (*Backend)(nil)

// ContinueWorkflowRun implements [backend.RunContinuer] in one BEGIN
// IMMEDIATE transaction (sql/continue.sql): the run is read under its
// fence, its successor inserted, the run completed with the successor's
// id, its unreceived run signals moved, its parent's attempt and its
// schedules relinked. It publishes EventRunFinished for the old run and
// EventWorkAvailable after the commit.
func (b *Backend) ContinueWorkflowRun(ctx context.Context, p backend.ContinueWorkflowRunParams) (*backend.WorkflowRun, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("continue workflow run as new: %w", err)
	}
	input, err := jsonArgOr("input", p.Input, "null")
	if err != nil {
		return nil, fmt.Errorf("continue workflow run as new: %w", err)
	}
	var version any
	if p.Version != nil {
		version = *p.Version
	}
	var next *backend.WorkflowRun
	err = b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		ns, runID, workerID := sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID), sql.Named("worker_id", p.WorkerID)
		old, err := scanRun(tx.QueryRowContext(ctx, b.q.ContinueGetOwnedRun, ns, runID, workerID))
		if errors.Is(err, sql.ErrNoRows) {
			ferr := b.fenceError(ctx, tx, p.WorkflowRunID)
			if errors.Is(ferr, backend.ErrRunNotFound) {
				return fmt.Errorf("%w (%w)", ferr, backend.ErrNotOwner)
			}
			return ferr
		}
		if err != nil {
			return err
		}
		runContext, err := jsonArg("context", backend.ContinuationContext(old.Context, p.Context, old.ID))
		if err != nil {
			return err
		}
		availableAt := now
		if !p.AvailableAt.IsZero() {
			availableAt = p.AvailableAt
		}
		nextID := sql.Named("next_id", id.New(id.PrefixRun))
		at := sql.Named("now", timeArg(now))
		next, err = scanRun(tx.QueryRowContext(ctx, b.q.ContinueInsertRun, ns, runID, nextID, sql.Named("version", version),
			sql.Named("input", input), sql.Named("context", runContext), sql.Named("available_at", timeArg(availableAt)), at))
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, b.q.ContinueEndRun, ns, runID, workerID, nextID,
			sql.Named("output", string(backend.ContinuedOutput(next.ID))), at); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, b.q.ContinueMoveSignals, ns, runID, nextID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, b.q.ContinueCopyAttrs, ns, runID, nextID); err != nil {
			return err
		}
		if old.ParentStepAttemptID != nil && old.ParentStepAttemptNamespaceID != nil {
			if _, err := tx.ExecContext(ctx, b.q.ContinueRelinkParent, ns, runID, nextID, at,
				sql.Named("parent_ns", *old.ParentStepAttemptNamespaceID), sql.Named("parent_id", *old.ParentStepAttemptID)); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, b.q.ContinueScheduleLastRun, ns, runID, nextID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, b.q.ContinueScheduleRuns, ns, runID, nextID); err != nil {
			return err
		}
		ev.runFinished(b.ns, old.ID, nil) // nil: Result reads it and follows the chain
		ev.workAvailable(b.ns)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("continue workflow run %s as new: %w", p.WorkflowRunID, err)
	}
	return next, nil
}
