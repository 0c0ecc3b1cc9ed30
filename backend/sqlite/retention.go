package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.RunPruner = (*Backend)(nil)

// PruneWorkflowRuns implements [backend.RunPruner]: one BEGIN IMMEDIATE
// transaction that reads the batch (prune_candidates) and deletes what
// its runs own, then the runs (sql/retention.sql). The transaction holds
// the file's write lock from its first read, so no run of the batch
// changes meanwhile; keep batches small (the default 500 runs), since
// every writer of the file waits for it. A dry run reads the batch and
// rolls back.
func (b *Backend) PruneWorkflowRuns(ctx context.Context, p backend.PruneWorkflowRunsParams) (backend.PruneResult, error) {
	limit, after, err := p.Validate()
	if err != nil {
		return backend.PruneResult{}, fmt.Errorf("prune workflow runs: %w", err)
	}
	except := p.ExceptWorkflowNames
	if except == nil {
		except = []string{}
	}
	exceptJSON, _ := json.Marshal(except)
	afterAt, afterID := "", ""
	if after != nil {
		afterAt, afterID = timeArg(after.CreatedAt), after.ID
	}
	query := b.q.PruneCandidates
	args := []any{
		sql.Named("ns", b.ns), sql.Named("cutoff", timeArg(p.FinishedBefore)), sql.Named("except", string(exceptJSON)),
		sql.Named("after_at", afterAt), sql.Named("after_id", afterID), sql.Named("limit", limit),
	}
	if p.WorkflowName != "" {
		query = b.q.PruneCandidatesOfWorkflow
		args = append(args, sql.Named("workflow_name", p.WorkflowName))
	}
	var res backend.PruneResult
	err = b.write(ctx, func(tx *txn, _ time.Time, _ *events) error {
		res = backend.PruneResult{}
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		var (
			ids      []string
			statuses []string
			last     backend.Cursor
		)
		for rows.Next() {
			var id, createdAt, status string
			if err := rows.Scan(&id, &createdAt, &status); err != nil {
				rows.Close()
				return err
			}
			t, err := backend.ParseTime(createdAt)
			if err != nil {
				rows.Close()
				return fmt.Errorf("run %s: created_at %q: %w", id, createdAt, err)
			}
			ids, statuses, last = append(ids, id), append(statuses, status), backend.Cursor{CreatedAt: t, ID: id}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == limit {
			res.Next = last.Encode()
		}
		if p.DryRun || len(ids) == 0 {
			for _, s := range statuses {
				res.Deleted.Add(backend.RunStatus(s), 1)
			}
			if p.DryRun {
				return errDryRun
			}
			return nil
		}
		return b.deleteRuns(ctx, tx, ids, &res.Deleted)
	})
	if errors.Is(err, errDryRun) {
		err = nil
	}
	if err != nil {
		return backend.PruneResult{}, fmt.Errorf("prune workflow runs finished before %s: %w", backend.FormatTime(p.FinishedBefore), err)
	}
	return res, nil
}

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("dry run")

// deleteRuns deletes the runs ids and what they own, in the caller's
// transaction, and adds the deleted runs to counts by stored status.
func (b *Backend) deleteRuns(ctx context.Context, tx *txn, ids []string, counts *backend.RunCounts) error {
	idsJSON, _ := json.Marshal(ids)
	args := []any{sql.Named("ns", b.ns), sql.Named("ids", string(idsJSON))}
	for _, q := range []string{ // in this order: each reads rows the next ones delete
		b.q.PruneSignals, b.q.PruneRunSignals, b.q.PruneRunUpdates, b.q.PruneEventWaits, b.q.PruneChunks, b.q.PruneStreams, b.q.PruneHookPayloads, b.q.PruneHooks, b.q.PruneSteps,
	} {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	rows, err := tx.QueryContext(ctx, b.q.PruneRuns, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		if err := rows.Scan(&status); err != nil {
			return err
		}
		counts.Add(backend.RunStatus(status), 1)
	}
	return rows.Err()
}
