package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.RunPruner = (*Backend)(nil)

// PruneWorkflowRuns implements [backend.RunPruner]: one READ COMMITTED
// transaction that locks the batch's runs (prune_candidates, FOR UPDATE
// SKIP LOCKED) and deletes what they own, then the runs, in one round
// trip (sql/retention.sql). A dry run reads and locks the same batch and
// rolls back.
func (b *Backend) PruneWorkflowRuns(ctx context.Context, p backend.PruneWorkflowRunsParams) (backend.PruneResult, error) {
	limit, after, err := p.Validate()
	if err != nil {
		return backend.PruneResult{}, fmt.Errorf("prune workflow runs: %w", err)
	}
	except := p.ExceptWorkflowNames
	if except == nil {
		except = []string{} // NULL would make <> ALL unknown for every run
	}
	afterAt, afterID := beforeEveryRun, ""
	if after != nil {
		afterAt, afterID = ms(after.CreatedAt), after.ID
	}
	// QueryExecModeExec plans the statement with this batch's values every
	// time. A prepared statement may switch to a generic plan after a few
	// executions, and with a million finished runs the generic plan read
	// the namespace's every row per batch (0.5–1 s, and more as the prune
	// went on); the plan for the values reads the batch's index range
	// (0.5 ms). Planning costs about a millisecond per batch.
	query, args := b.q.PruneCandidates, []any{pgx.QueryExecModeExec, b.namespace, ms(p.FinishedBefore), afterAt, afterID, limit, except}
	if p.WorkflowName != "" {
		query, args = b.q.PruneCandidatesOfWorkflow, append(args, p.WorkflowName)
	}
	var res backend.PruneResult
	err = b.inTx(ctx, func(tx pgx.Tx) error {
		res = backend.PruneResult{}
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		var (
			ids, statuses []string
			last          backend.Cursor
			seen          int
		)
		var id string
		var createdAt time.Time
		var status *string
		_, err = pgx.ForEachRow(rows, []any{&id, &createdAt, &status}, func() error {
			seen++
			last = backend.Cursor{CreatedAt: createdAt, ID: id}
			if status != nil {
				ids, statuses = append(ids, id), append(statuses, *status)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if seen == limit {
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

// beforeEveryRun is the cursor of a walk's first batch: a time before
// every run's created_at.
var beforeEveryRun = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("dry run")

// deleteRuns deletes runs ids (locked by the caller's transaction) and
// what they own, in one batch, and adds the deleted runs to counts by
// their stored status.
func (b *Backend) deleteRuns(ctx context.Context, tx pgx.Tx, ids []string, counts *backend.RunCounts) error {
	owned := []string{ // in this order: each reads rows the next ones delete
		b.q.PruneEscapes, b.q.PruneSignals, b.q.PruneRunSignals, b.q.PruneRunUpdates, b.q.PruneEventWaits, b.q.PruneChunks, b.q.PruneStreams,
		b.q.PruneHookPayloads, b.q.PruneHooks, b.q.PruneSteps,
	}
	batch := &pgx.Batch{}
	for _, q := range owned {
		batch.Queue(q, b.namespace, ids)
	}
	batch.Queue(b.q.PruneRuns, b.namespace, ids)
	br := tx.SendBatch(ctx, batch)
	for range owned {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return err
	}
	var status string
	_, err = pgx.ForEachRow(rows, []any{&status}, func() error {
		counts.Add(backend.RunStatus(status), 1)
		return nil
	})
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}
