package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// CreateStepAttempt implements [backend.Backend]: one statement that locks
// the owned run row (FOR NO KEY UPDATE) and inserts the running attempt.
func (b *Backend) CreateStepAttempt(ctx context.Context, p backend.CreateStepAttemptParams) (*backend.StepAttempt, error) {
	if p.StepName == "" || p.Kind == "" {
		return nil, fmt.Errorf("create step attempt for workflow run %s: %w: empty step name or kind", p.WorkflowRunID, backend.ErrInvalidArgument)
	}
	if err := checkJSON("config", p.Config); err != nil {
		return nil, fmt.Errorf("create step attempt %q: %w", p.StepName, err)
	}
	if err := checkJSON("context", p.Context); err != nil {
		return nil, fmt.Errorf("create step attempt %q: %w", p.StepName, err)
	}
	step, err := queryStep(ctx, b.pool, b.q.createStep, b.namespace, p.WorkflowRunID, p.WorkerID,
		id.New(id.PrefixStep), p.StepName, string(p.Kind), jsonOr(p.Config, "{}"), jsonArg(p.Context))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, b.fenceError(ctx, fmt.Sprintf("create step attempt %q", p.StepName), p.WorkflowRunID, p.WorkerID)
	}
	if err != nil {
		return nil, fmt.Errorf("create step attempt %q for workflow run %s: %w", p.StepName, p.WorkflowRunID, err)
	}
	return step, nil
}

// GetStepAttempt implements [backend.Backend].
func (b *Backend) GetStepAttempt(ctx context.Context, stepAttemptID string) (*backend.StepAttempt, error) {
	step, err := queryStep(ctx, b.pool, b.q.getStep, b.namespace, stepAttemptID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("get step attempt %s: %w", stepAttemptID, backend.ErrStepNotFound)
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
	q := newPageQuery(b.q.listSteps, b.namespace, p.WorkflowRunID)
	sql := q.finish("sa", false, after, before, limit)
	rows, err := b.pool.Query(ctx, sql, q.args...)
	if err != nil {
		return nil, fmt.Errorf("list step attempts of workflow run %s: %w", p.WorkflowRunID, err)
	}
	steps, err := pgx.CollectRows(rows, scanStep)
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
	rows, err := b.pool.Query(ctx, b.q.listStepHistories, b.namespace, workflowRunIDs)
	if err != nil {
		return nil, fmt.Errorf("list step histories of %d workflow runs: %w", len(workflowRunIDs), err)
	}
	steps, err := pgx.CollectRows(rows, scanStep)
	if err != nil {
		return nil, fmt.Errorf("list step histories of %d workflow runs: %w", len(workflowRunIDs), err)
	}
	for _, s := range steps {
		out[s.WorkflowRunID] = append(out[s.WorkflowRunID], *s)
	}
	return out, nil
}

// CompleteStepAttempt implements [backend.Backend]; nil output is stored as
// JSON null.
func (b *Backend) CompleteStepAttempt(ctx context.Context, p backend.CompleteStepAttemptParams) (*backend.StepAttempt, error) {
	if err := checkJSON("output", p.Output); err != nil {
		return nil, fmt.Errorf("complete step attempt %s: %w", p.StepAttemptID, err)
	}
	return b.stepWrite(ctx, "complete step attempt", b.q.completeStep, p.WorkflowRunID, p.StepAttemptID, p.WorkerID,
		jsonOr(p.Output, "null"))
}

// FailStepAttempt implements [backend.Backend]; failing an already failed
// attempt keeps its first error.
func (b *Backend) FailStepAttempt(ctx context.Context, p backend.FailStepAttemptParams) (*backend.StepAttempt, error) {
	if err := checkJSON("error", p.Error); err != nil {
		return nil, fmt.Errorf("fail step attempt %s: %w", p.StepAttemptID, err)
	}
	return b.stepWrite(ctx, "fail step attempt", b.q.failStep, p.WorkflowRunID, p.StepAttemptID, p.WorkerID,
		jsonArg(p.Error))
}

// SetStepAttemptChildWorkflowRun implements [backend.Backend].
func (b *Backend) SetStepAttemptChildWorkflowRun(ctx context.Context, p backend.SetStepAttemptChildWorkflowRunParams) (*backend.StepAttempt, error) {
	return b.stepWrite(ctx, "link child workflow run", b.q.setStepChild, p.WorkflowRunID, p.StepAttemptID, p.WorkerID,
		p.ChildWorkflowRunNamespaceID, p.ChildWorkflowRunID)
}

// stepWrite runs a fenced step update whose parameters are ($1 namespace,
// $2 run, $3 worker, $4 attempt, extra...) and explains a refusal.
func (b *Backend) stepWrite(ctx context.Context, op, sql, runID, stepID, workerID string, extra ...any) (*backend.StepAttempt, error) {
	args := append([]any{b.namespace, runID, workerID, stepID}, extra...)
	step, err := queryStep(ctx, b.pool, sql, args...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, b.stepFenceError(ctx, op, runID, stepID, workerID)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, stepID, err)
	}
	return step, nil
}

// queryStep runs a query returning at most one attempt; pgx.ErrNoRows when
// none.
func queryStep(ctx context.Context, q querier, sql string, args ...any) (*backend.StepAttempt, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectExactlyOneRow(rows, scanStep)
}
