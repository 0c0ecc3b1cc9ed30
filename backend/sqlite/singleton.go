package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// admitSingleton is the singleton part of a create in tx, before its
// insert (p.Singleton set), as PostgreSQL's: for mode skip with an active
// run it returns that run (the oldest, SingletonSkipped set); for mode
// cancel it cancels the key's active runs (waking the parents of children
// among them); for mode queue it returns hold, whether the run to insert
// waits for them to end. The write transaction is the key's lock.
func (b *Backend) admitSingleton(ctx context.Context, tx *txn, now time.Time, ev *events, p *backend.CreateWorkflowRunParams) (existing *backend.WorkflowRun, hold bool, err error) {
	s := p.Singleton
	rows, err := tx.QueryContext(ctx, b.q.SingletonActive,
		sql.Named("ns", b.ns), sql.Named("workflow_name", p.WorkflowName), sql.Named("key", s.Key))
	if err != nil {
		return nil, false, err
	}
	var active []*backend.WorkflowRun
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			rows.Close()
			return nil, false, err
		}
		active = append(active, r)
	}
	if err := rows.Close(); err != nil {
		return nil, false, err
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("read the active runs of singleton key %q: %w", s.Key, err)
	}
	if len(active) == 0 {
		return nil, false, nil
	}
	switch s.Mode {
	case backend.SingletonSkip:
		active[0].SingletonSkipped = true
		return active[0], false, nil
	case backend.SingletonQueue:
		return nil, true, nil
	}
	for _, r := range active { // cancel-in-progress
		canceled, err := scanRun(tx.QueryRowContext(ctx, b.q.CancelRun,
			sql.Named("ns", b.ns), sql.Named("run_id", r.ID), sql.Named("now", timeArg(now))))
		if err != nil {
			return nil, false, fmt.Errorf("cancel run %s of singleton key %q: %w", r.ID, s.Key, err)
		}
		ev.runFinished(b.ns, canceled.ID, nil)
		if err := b.wakeParent(ctx, tx, canceled, now, ev); err != nil {
			return nil, false, err
		}
	}
	return nil, false, nil
}

// markSingleton stores the singleton key of run, just inserted in tx, and
// holds it when hold is set; it returns the run as stored.
func (b *Backend) markSingleton(ctx context.Context, tx *txn, run *backend.WorkflowRun, s *backend.Singleton, hold bool) (*backend.WorkflowRun, error) {
	marked, err := scanRun(tx.QueryRowContext(ctx, b.q.SingletonMark,
		sql.Named("ns", b.ns), sql.Named("run_id", run.ID), sql.Named("key", s.Key), sql.Named("hold", hold)))
	if err != nil {
		return nil, fmt.Errorf("store the singleton key of run %s: %w", run.ID, err)
	}
	return marked, nil
}
