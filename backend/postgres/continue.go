package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

var _ backend.RunContinuer = (*Backend)(nil)

// ContinueWorkflowRun implements [backend.RunContinuer] in one
// transaction (sql/continue.sql): the run is locked under its fence
// (continue_lock_run), its successor inserted (continue_insert_run), the
// run completed with the successor's id (continue_end_run), its
// unreceived run signals moved, its parent's attempt and its schedules
// relinked. The statements' NOTIFYs are delivered at the commit.
func (b *Backend) ContinueWorkflowRun(ctx context.Context, p backend.ContinueWorkflowRunParams) (*backend.WorkflowRun, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("continue workflow run as new: %w", err)
	}
	nextID := id.New(id.PrefixRun)
	var next *backend.WorkflowRun
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		old, err := queryRun(ctx, tx, b.q.ContinueLockRun, b.namespace, p.WorkflowRunID, p.WorkerID)
		if errors.Is(err, pgx.ErrNoRows) {
			return b.fenceError(ctx, "continue workflow run as new", p.WorkflowRunID, p.WorkerID)
		}
		if err != nil {
			return err
		}
		var esc escapes
		input := esc.jsonOr(b.namespace, tableRuns, nextID, "input", p.Input, "null")
		runContext := esc.json(b.namespace, tableRuns, nextID, "context", backend.ContinuationContext(old.Context, p.Context, old.ID))
		var availableAt any
		if !p.AvailableAt.IsZero() {
			availableAt = ms(p.AvailableAt)
		}
		next, err = queryRun(ctx, tx, b.q.ContinueInsertRun, b.namespace, old.ID, nextID, input, p.Version, runContext, availableAt, b.at())
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, b.q.ContinueEndRun, b.namespace, old.ID, p.WorkerID, string(backend.ContinuedOutput(nextID)), nextID, b.at())
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return b.fenceError(ctx, "continue workflow run as new", p.WorkflowRunID, p.WorkerID)
		}
		batch := &pgx.Batch{}
		batch.Queue(b.q.ContinueMoveSignals, b.namespace, old.ID, nextID)
		if old.ParentStepAttemptID != nil && old.ParentStepAttemptNamespaceID != nil {
			batch.Queue(b.q.ContinueRelinkParent, *old.ParentStepAttemptNamespaceID, *old.ParentStepAttemptID, old.ID, b.namespace, nextID, b.at())
		}
		batch.Queue(b.q.ContinueScheduleRuns, b.namespace, old.ID, nextID)
		batch.Queue(b.q.ContinueCopyAttrs, b.namespace, old.ID, nextID)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		return b.recordEscapes(ctx, tx, &esc)
	})
	if err == nil {
		err = b.decodeRuns(ctx, next)
	}
	if err != nil {
		return nil, fmt.Errorf("continue workflow run %s as new: %w", p.WorkflowRunID, err)
	}
	return next, nil
}
