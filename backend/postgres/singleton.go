package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
)

// singletonLockKey is the text whose hash is the advisory lock of the
// singleton creates of (namespace, workflowName, key) in this schema
// (lock_singleton). Each part is quoted, so no two keys share a text.
func (b *Backend) singletonLockKey(workflowName, key string) string {
	return "openworkflow-go:singleton:" + strconv.Quote(b.schema) + ":" + strconv.Quote(b.namespace) + ":" +
		strconv.Quote(workflowName) + ":" + strconv.Quote(key)
}

// admitSingleton is the singleton part of a create in tx, before its
// insert (p.Singleton set): it takes the key's lock and reads its active
// runs. For mode skip with an active run it returns that run (the oldest,
// SingletonSkipped set) and nothing is to be inserted; for mode cancel it
// cancels the active runs (waking the parents of children among them, in
// tx); for mode queue it returns hold, whether the run to insert waits
// for the key's active runs to end.
func (b *Backend) admitSingleton(ctx context.Context, tx pgx.Tx, p backend.CreateWorkflowRunParams) (existing *backend.WorkflowRun, hold bool, err error) {
	s := p.Singleton
	if _, err := tx.Exec(ctx, b.q.LockSingleton, b.singletonLockKey(p.WorkflowName, s.Key)); err != nil {
		return nil, false, fmt.Errorf("lock singleton key %q: %w", s.Key, err)
	}
	rows, err := tx.Query(ctx, b.q.SingletonActive, b.namespace, p.WorkflowName, s.Key)
	if err != nil {
		return nil, false, err
	}
	active, err := pgx.CollectRows(rows, scanRun)
	if err != nil {
		return nil, false, fmt.Errorf("read the active runs of singleton key %q: %w", s.Key, err)
	}
	if len(active) == 0 {
		return nil, false, nil
	}
	switch s.Mode {
	case backend.SingletonSkip:
		run := active[0]
		run.SingletonSkipped = true
		return run, false, nil
	case backend.SingletonQueue:
		return nil, true, nil
	}
	for _, r := range active { // cancel-in-progress
		rows, err := tx.Query(ctx, b.q.CancelRun, b.namespace, r.ID, b.at())
		if err != nil {
			return nil, false, err
		}
		canceled, err := pgx.CollectRows(rows, scanRun)
		if err != nil {
			return nil, false, fmt.Errorf("cancel run %s of singleton key %q: %w", r.ID, s.Key, err)
		}
		for _, c := range canceled {
			if c.ParentStepAttemptNamespaceID != nil && c.ParentStepAttemptID != nil {
				if _, err := tx.Exec(ctx, b.q.WakeParent, *c.ParentStepAttemptNamespaceID, *c.ParentStepAttemptID, c.NamespaceID, c.ID, b.at()); err != nil {
					return nil, false, fmt.Errorf("wake the parent of canceled run %s: %w", c.ID, err)
				}
			}
		}
	}
	return nil, false, nil
}

// markSingleton stores the singleton key of run, just inserted in tx,
// and holds it when hold is set; it returns the run as stored.
func (b *Backend) markSingleton(ctx context.Context, tx pgx.Tx, run *backend.WorkflowRun, s *backend.Singleton, hold bool) (*backend.WorkflowRun, error) {
	rows, err := tx.Query(ctx, b.q.SingletonMark, b.namespace, run.ID, s.Key, hold)
	if err != nil {
		return nil, err
	}
	marked, err := pgx.CollectExactlyOneRow(rows, scanRun)
	if err != nil {
		return nil, fmt.Errorf("store the singleton key of run %s: %w", run.ID, err)
	}
	return marked, nil
}
