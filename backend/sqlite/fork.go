package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

var _ backend.RunForker = (*Backend)(nil)

// ForkWorkflowRun implements [backend.RunForker] in one BEGIN IMMEDIATE
// transaction: the forked run's attempts are read, [backend.PlanFork]
// chooses those to reuse, and fork_run and fork_steps (sql/fork.sql) copy
// the run and them as stored. It publishes EventWorkAvailable after the
// commit.
func (b *Backend) ForkWorkflowRun(ctx context.Context, p backend.ForkWorkflowRunParams) (*backend.WorkflowRun, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("fork workflow run: %w", err)
	}
	contextArg, err := jsonArg("context", backend.ForkContext(p.Context, backend.ForkOf{RunID: p.WorkflowRunID, FromStep: p.FromStep}))
	if err != nil {
		return nil, fmt.Errorf("fork workflow run: %w", err)
	}
	var run *backend.WorkflowRun
	err = b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		if _, err := b.getRun(ctx, tx, p.WorkflowRunID); err != nil {
			return err
		}
		ids, _ := json.Marshal([]string{p.WorkflowRunID})
		rows, err := tx.QueryContext(ctx, b.q.ListStepHistories, sql.Named("ns", b.ns), sql.Named("ids", string(ids)))
		if err != nil {
			return err
		}
		var attempts []backend.StepAttempt
		for rows.Next() {
			a, err := scanStep(rows)
			if err != nil {
				rows.Close()
				return err
			}
			attempts = append(attempts, *a)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		reused, err := backend.PlanFork(p.WorkflowRunID, attempts, p.FromStep)
		if err != nil {
			return err
		}
		forkID := id.New(id.PrefixRun)
		run, err = scanRun(tx.QueryRowContext(ctx, b.q.ForkRun, sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID),
			sql.Named("fork_id", forkID), sql.Named("context", contextArg), sql.Named("now", timeArg(now))))
		if err != nil {
			return err
		}
		pairs := make([][2]string, len(reused))
		for i, a := range reused {
			pairs[i] = [2]string{a.ID, id.New(id.PrefixStep)}
		}
		mapping, _ := json.Marshal(pairs)
		if _, err := tx.ExecContext(ctx, b.q.ForkSteps, sql.Named("ns", b.ns), sql.Named("fork_id", forkID),
			sql.Named("ids", string(mapping)), sql.Named("now", timeArg(now))); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, b.q.ForkMark, sql.Named("ns", b.ns), sql.Named("fork_id", forkID),
			sql.Named("mark_id", id.New(id.PrefixStep)), sql.Named("now", timeArg(now))); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, b.q.ForkList, sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID),
			sql.Named("fork_id", forkID), sql.Named("max_forks", backend.MaxListedForks)); err != nil {
			return err
		}
		ev.workAvailable(b.ns)
		return nil
	})
	if errors.Is(err, backend.ErrRunNotFound) {
		return nil, fmt.Errorf("fork workflow run %s: %w", p.WorkflowRunID, err)
	}
	if err != nil {
		return nil, fmt.Errorf("fork workflow run %s from step %q: %w", p.WorkflowRunID, p.FromStep, err)
	}
	return run, nil
}
