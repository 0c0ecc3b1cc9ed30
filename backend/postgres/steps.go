package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
)

// GetStepAttempt implements [backend.Backend].
func (b *Backend) GetStepAttempt(ctx context.Context, stepAttemptID string) (*backend.StepAttempt, error) {
	if !backend.ValidText(stepAttemptID) {
		return nil, fmt.Errorf("get step attempt %q: %w", stepAttemptID, backend.ErrStepNotFound)
	}
	var step *backend.StepAttempt
	err := b.readPool(ctx, func(db *pgxpool.Pool) (err error) {
		step, err = queryStep(ctx, db, b.q.GetStep, b.namespace, stepAttemptID)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("get step attempt %s: %w", stepAttemptID, backend.ErrStepNotFound)
	}
	if err == nil {
		err = b.decodeSteps(ctx, step)
	}
	if err != nil {
		return nil, fmt.Errorf("get step attempt %s: %w", stepAttemptID, err)
	}
	return step, nil
}

// ListStepAttempts implements [backend.Backend]: oldest first. A run
// without attempts, or a missing run, gives an empty page.
func (b *Backend) ListStepAttempts(ctx context.Context, p backend.ListStepAttemptsParams) (*backend.Page[backend.StepAttempt], error) {
	limit, after, before, err := pageParams(p.Limit, p.After, p.Before)
	if err != nil {
		return nil, fmt.Errorf("list step attempts of workflow run %s: %w", p.WorkflowRunID, err)
	}
	if !backend.ValidText(p.WorkflowRunID) { // no run has such an id
		return &backend.Page[backend.StepAttempt]{Data: []backend.StepAttempt{}}, nil
	}
	base := b.q.ListSteps
	if p.OmitPayloads {
		base = b.q.ListStepsSummary
	}
	q := newPageQuery(base, b.namespace, p.WorkflowRunID)
	sql := q.finish("sa", false, after, before, limit)
	var steps []*backend.StepAttempt
	err = b.readPool(ctx, func(db *pgxpool.Pool) error {
		qctx, cancel := context.WithCancel(ctx)
		defer cancel()
		rows, err := db.Query(qctx, sql, q.args...)
		if err != nil {
			return err
		}
		steps, limit, err = collectPage(rows, cancel, scanStep, (*backend.StepAttempt).PayloadBytes, p.MaxBytes, limit)
		return err
	})
	if err == nil {
		err = b.decodeSteps(ctx, steps...)
	}
	if err != nil {
		return nil, fmt.Errorf("list step attempts of workflow run %s: %w", p.WorkflowRunID, err)
	}
	return buildPage(steps, limit, after != nil, before != nil, func(s *backend.StepAttempt) backend.Cursor {
		return backend.Cursor{CreatedAt: s.CreatedAt, ID: s.ID}
	}), nil
}

var _ backend.HistoryReader = (*Backend)(nil)

// ListStepHistories implements [backend.HistoryReader] with one query.
func (b *Backend) ListStepHistories(ctx context.Context, workflowRunIDs []string) (map[string][]backend.StepAttempt, error) {
	out := make(map[string][]backend.StepAttempt, len(workflowRunIDs))
	if len(workflowRunIDs) == 0 {
		return out, nil
	}
	rows, err := b.pool.Query(ctx, b.q.ListStepHistories, b.namespace, workflowRunIDs)
	if err != nil {
		return nil, fmt.Errorf("list step histories of %d workflow runs: %w", len(workflowRunIDs), err)
	}
	steps, err := pgx.CollectRows(rows, scanStep)
	if err == nil {
		err = b.decodeSteps(ctx, steps...)
	}
	if err != nil {
		return nil, fmt.Errorf("list step histories of %d workflow runs: %w", len(workflowRunIDs), err)
	}
	for _, s := range steps {
		out[s.WorkflowRunID] = append(out[s.WorkflowRunID], *s)
	}
	return out, nil
}

func queryStep(ctx context.Context, q querier, sql string, args ...any) (*backend.StepAttempt, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectExactlyOneRow(rows, scanStep)
}
