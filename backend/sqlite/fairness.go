package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/openworkflow-go/openworkflow/backend"
)

// markFair puts the just inserted run of p under its fairness
// (set_fairness, whose trigger enqueues it) and returns it as it now is;
// run itself when p has none.
func (b *Backend) markFair(ctx context.Context, tx *txn, run *backend.WorkflowRun, p *backend.CreateWorkflowRunParams) (*backend.WorkflowRun, error) {
	if p.Fairness == nil {
		return run, nil
	}
	f := p.Fairness.Normalized()
	if _, err := tx.ExecContext(ctx, b.q.SetFairness, sql.Named("ns", b.ns), sql.Named("run_id", run.ID),
		sql.Named("key", f.Key), sql.Named("weight", f.Weight)); err != nil {
		return nil, fmt.Errorf("put run %s under fair shares (key %q): %w", run.ID, f.Key, err)
	}
	marked, err := scanRun(tx.QueryRowContext(ctx, b.q.GetRun, sql.Named("ns", b.ns), sql.Named("run_id", run.ID)))
	if err != nil {
		return nil, fmt.Errorf("read run %s under fair shares: %w", run.ID, err)
	}
	return marked, nil
}

// ListFairQueues implements [backend.FairQueueLister]: a page of the
// namespace's fairness keys (list_fair_queues), with its virtual time.
func (b *Backend) ListFairQueues(ctx context.Context, p backend.ListFairQueuesParams) (*backend.FairQueues, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = backend.DefaultPageSize
	}
	var out *backend.FairQueues
	err := b.read(ctx, func() error {
		out = &backend.FairQueues{Queues: []backend.FairQueue{}}
		if err := b.db.QueryRowContext(ctx, b.q.ReadFairVTime, sql.Named("ns", b.ns)).Scan(&out.VTime); err != nil {
			return err
		}
		rows, err := b.db.QueryContext(ctx, b.q.ListFairQueues, sql.Named("ns", b.ns), sql.Named("after", p.After), sql.Named("limit", limit+1))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var q backend.FairQueue
			var updated string
			var next sql.NullInt64
			var oldest sql.NullString
			if err := rows.Scan(&q.Key, &q.Weight, &q.LastPass, &updated, &q.Queued, &next, &oldest, &q.Running); err != nil {
				return err
			}
			if q.UpdatedAt, err = backend.ParseTime(updated); err != nil {
				return fmt.Errorf("fair queue %q: updated_at: %w", q.Key, err)
			}
			if next.Valid {
				q.NextPass = &next.Int64
			}
			if oldest.Valid {
				t, err := backend.ParseTime(oldest.String)
				if err != nil {
					return fmt.Errorf("fair queue %q: oldest due time: %w", q.Key, err)
				}
				q.OldestQueuedAt = &t
			}
			out.Queues = append(out.Queues, q)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list fair queues: %w", err)
	}
	if len(out.Queues) > limit {
		out.Queues = out.Queues[:limit]
		next := out.Queues[limit-1].Key
		out.Next = &next
	}
	return out, nil
}
