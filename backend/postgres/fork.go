package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

var _ backend.RunForker = (*Backend)(nil)

// ForkWorkflowRun implements [backend.RunForker] in one transaction: the
// forked run's attempts are read, [backend.PlanFork] chooses those to
// reuse, and fork_run, fork_steps and fork_escapes (sql/fork.sql) copy
// the run and them as stored. fork_run's NOTIFY is delivered at the
// commit.
func (b *Backend) ForkWorkflowRun(ctx context.Context, p backend.ForkWorkflowRunParams) (*backend.WorkflowRun, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("fork workflow run: %w", err)
	}
	forkID := id.New(id.PrefixRun)
	var esc escapes
	contextArg := esc.json(b.namespace, tableRuns, forkID, "context", backend.ForkContext(p.Context, backend.ForkOf{RunID: p.WorkflowRunID, FromStep: p.FromStep}))
	var run *backend.WorkflowRun
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, b.q.ListStepHistories, b.namespace, []string{p.WorkflowRunID})
		if err != nil {
			return err
		}
		steps, err := pgx.CollectRows(rows, scanStep)
		if err != nil {
			return err
		}
		attempts := make([]backend.StepAttempt, len(steps))
		for i, s := range steps {
			attempts[i] = *s
		}
		reused, err := backend.PlanFork(p.WorkflowRunID, attempts, p.FromStep)
		if err != nil {
			if _, gerr := queryRun(ctx, tx, b.q.GetRun, b.namespace, p.WorkflowRunID); errors.Is(gerr, pgx.ErrNoRows) {
				return fmt.Errorf("workflow run %s: %w", p.WorkflowRunID, backend.ErrRunNotFound)
			}
			return err
		}
		run, err = queryRun(ctx, tx, b.q.ForkRun, b.namespace, p.WorkflowRunID, forkID, contextArg, b.at(), id.New(id.PrefixStep))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("workflow run %s: %w", p.WorkflowRunID, backend.ErrRunNotFound)
		}
		if err != nil {
			return err
		}
		oldIDs, newIDs := make([]string, len(reused)), make([]string, len(reused))
		for i, a := range reused {
			oldIDs[i], newIDs[i] = a.ID, id.New(id.PrefixStep)
		}
		batch := &pgx.Batch{}
		batch.Queue(b.q.ForkSteps, b.namespace, forkID, oldIDs, newIDs, b.at())
		batch.Queue(b.q.ForkEscapes, b.namespace, tableRuns, []string{p.WorkflowRunID}, []string{forkID})
		batch.Queue(b.q.ForkEscapes, b.namespace, tableSteps, oldIDs, newIDs)
		batch.Queue(b.q.ForkList, b.namespace, p.WorkflowRunID, forkID, backend.MaxListedForks)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		return b.recordEscapes(ctx, tx, &esc)
	})
	if err == nil {
		err = b.decodeRuns(ctx, run)
	}
	if err != nil {
		return nil, fmt.Errorf("fork workflow run %s from step %q: %w", p.WorkflowRunID, p.FromStep, err)
	}
	return run, nil
}
