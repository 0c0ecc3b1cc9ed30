package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

var _ backend.BulkActionStore = (*Backend)(nil)

// scanBulkAction reads one row of {{bulk_columns}}.
func scanBulkAction(row pgx.CollectableRow) (*backend.BulkAction, error) {
	var a backend.BulkAction
	var op, state string
	err := row.Scan(&a.NamespaceID, &a.ID, &op, &a.Query, &a.Reason, &a.RequestedBy,
		&state, &a.MaxPerSecond, &a.Matched, &a.Acted, &a.Skipped, &a.Failed,
		&a.Pages, &a.Cursor, &a.LastError, (*nullString)(&a.LeaseOwner), &a.LeaseExpiresAt,
		&a.CreatedAt, &a.UpdatedAt, &a.StartedAt, &a.FinishedAt)
	if err != nil {
		return nil, err
	}
	a.Operation, a.State = backend.BulkOperation(op), backend.BulkActionState(state)
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	utc(a.LeaseExpiresAt, a.StartedAt, a.FinishedAt)
	return &a, nil
}

// nullString scans a nullable text column into a string ("" for NULL).
type nullString string

// Scan implements sql.Scanner.
func (s *nullString) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*s = ""
	case string:
		*s = nullString(v)
	default:
		return fmt.Errorf("scan %T into a string", src)
	}
	return nil
}

// queryBulkAction runs a statement returning at most one action
// (pgx.ErrNoRows when none).
func queryBulkAction(ctx context.Context, q querier, sql string, args ...any) (*backend.BulkAction, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectExactlyOneRow(rows, scanBulkAction)
}

// CreateBulkAction implements [backend.BulkActionStore].
func (b *Backend) CreateBulkAction(ctx context.Context, p backend.CreateBulkActionParams) (*backend.BulkAction, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("create bulk action: %w", err)
	}
	var createdAt any
	if !p.CreatedAt.IsZero() {
		createdAt = ms(p.CreatedAt)
	}
	a, err := queryBulkAction(ctx, b.pool, b.q.InsertBulkAction, b.namespace, p.ID, string(p.Operation), p.Query,
		p.Reason, p.RequestedBy, p.MaxPerSecond, p.Matched, createdAt, b.at())
	if err != nil {
		return nil, fmt.Errorf("create bulk action %s: %w", p.ID, err)
	}
	return a, nil
}

// GetBulkAction implements [backend.BulkActionStore].
func (b *Backend) GetBulkAction(ctx context.Context, actionID string) (*backend.BulkAction, error) {
	if !backend.ValidText(actionID) {
		return nil, fmt.Errorf("get bulk action %q: %w", actionID, backend.ErrBulkActionNotFound)
	}
	a, err := queryBulkAction(ctx, b.pool, b.q.GetBulkAction, b.namespace, actionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("get bulk action %s: %w", actionID, backend.ErrBulkActionNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get bulk action %s: %w", actionID, err)
	}
	return a, nil
}

// ListBulkActions implements [backend.BulkActionStore].
func (b *Backend) ListBulkActions(ctx context.Context, p backend.ListBulkActionsParams) (*backend.Page[backend.BulkAction], error) {
	limit, after, before, err := pageParams(p.Limit, p.After, p.Before)
	if err != nil {
		return nil, fmt.Errorf("list bulk actions: %w", err)
	}
	q := newPageQuery(b.q.ListBulkActions, b.namespace)
	sql := q.finish("ba", true, after, before, limit)
	rows, err := b.pool.Query(ctx, sql, q.args...)
	if err != nil {
		return nil, fmt.Errorf("list bulk actions: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanBulkAction)
	if err != nil {
		return nil, fmt.Errorf("list bulk actions: %w", err)
	}
	return buildPage(list, limit, after != nil, before != nil, func(a *backend.BulkAction) backend.Cursor {
		return backend.Cursor{CreatedAt: a.CreatedAt, ID: a.ID}
	}), nil
}

// CancelBulkAction implements [backend.BulkActionStore].
func (b *Backend) CancelBulkAction(ctx context.Context, actionID string) (*backend.BulkAction, error) {
	if !backend.ValidText(actionID) {
		return nil, fmt.Errorf("cancel bulk action %q: %w", actionID, backend.ErrBulkActionNotFound)
	}
	a, err := queryBulkAction(ctx, b.pool, b.q.CancelBulkAction, b.namespace, actionID, b.at())
	if errors.Is(err, pgx.ErrNoRows) {
		existing, err := b.GetBulkAction(ctx, actionID)
		if err != nil {
			return nil, fmt.Errorf("cancel: %w", err)
		}
		if existing.State == backend.BulkCanceling || existing.State == backend.BulkCanceled {
			return existing, nil
		}
		return nil, fmt.Errorf("cannot cancel bulk action %s, which is %s: %w", actionID, existing.State, backend.ErrBulkActionFinished)
	}
	if err != nil {
		return nil, fmt.Errorf("cancel bulk action %s: %w", actionID, err)
	}
	return a, nil
}

// ClaimBulkAction implements [backend.BulkActionStore].
func (b *Backend) ClaimBulkAction(ctx context.Context, p backend.ClaimBulkActionParams) (*backend.BulkAction, error) {
	if p.Owner == "" || p.Lease <= 0 {
		return nil, fmt.Errorf("claim bulk action: %w: an owner and a positive lease are required", backend.ErrInvalidArgument)
	}
	a, err := queryBulkAction(ctx, b.pool, b.q.ClaimBulkAction, b.namespace, p.Owner, durationMs(p.Lease), b.at())
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim bulk action: %w", err)
	}
	return a, nil
}

// ApplyBulkActionPage implements [backend.BulkActionStore]: one READ
// COMMITTED transaction that locks the action's row (lock_bulk_action),
// checks the lease and the cursor, runs the single-run statement of the
// operation for each run of the page in one pipelined batch (cancel_run,
// retry_run: the same guards as Client.CancelWorkflowRun and
// RetryWorkflowRun, so a run no longer eligible matches nothing and is
// counted as skipped), or retention's deletes for the page's deletable
// runs, and advances the action (advance_bulk_action). The parents of
// canceled children are woken after the commit, as a single cancel does.
func (b *Backend) ApplyBulkActionPage(ctx context.Context, p backend.ApplyBulkActionPageParams) (*backend.BulkAction, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("apply bulk action page: %w", err)
	}
	var (
		out      *backend.BulkAction
		finished []*backend.WorkflowRun
	)
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		out, finished = nil, nil
		a, err := b.lockBulkAction(ctx, tx, p.ID, p.Owner, p.From)
		if err != nil {
			return err
		}
		state := any(nil)
		var acted, skipped int
		to, pages := p.To, 1
		switch {
		case a.State == backend.BulkCanceling:
			state, to, pages = string(backend.BulkCanceled), p.From, 0
		default:
			acted, finished, err = b.applyBulkOperation(ctx, tx, a, p.RunIDs)
			if err != nil {
				return err
			}
			skipped = len(p.RunIDs) - acted
			if p.Last {
				state = string(backend.BulkCompleted)
			}
		}
		out, err = queryBulkAction(ctx, tx, b.q.AdvanceBulkAction, b.namespace, p.ID, to,
			acted, skipped, 0, pages, state, p.Owner, durationMs(p.Lease), nil, b.at())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("apply a page of bulk action %s: %w", p.ID, err)
	}
	for _, run := range finished {
		if err := b.wakeParent(ctx, run); err != nil {
			return out, err
		}
	}
	return out, nil
}

// lockBulkAction locks action id in tx and checks that owner holds it and
// that its cursor is from.
func (b *Backend) lockBulkAction(ctx context.Context, tx pgx.Tx, actionID, owner, from string) (*backend.BulkAction, error) {
	a, err := queryBulkAction(ctx, tx, b.q.LockBulkAction, b.namespace, actionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("bulk action %s: %w", actionID, backend.ErrBulkActionNotFound)
	}
	if err != nil {
		return nil, err
	}
	return a, backend.CheckBulkDriver(a, owner, from)
}

// applyBulkOperation acts on runs for op in tx and returns how many it
// acted on, and the runs a cancel finished (their parents are woken after
// the commit).
func (b *Backend) applyBulkOperation(ctx context.Context, tx pgx.Tx, a *backend.BulkAction, runIDs []string) (int, []*backend.WorkflowRun, error) {
	if len(runIDs) == 0 {
		return 0, nil, nil
	}
	op := a.Operation
	switch op {
	case backend.BulkDelete:
		rows, err := tx.Query(ctx, b.q.BulkLockDeletable, b.namespace, runIDs)
		if err != nil {
			return 0, nil, err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(ids) == 0 {
			return 0, nil, err
		}
		var counts backend.RunCounts
		if err := b.deleteRuns(ctx, tx, ids, &counts); err != nil {
			return 0, nil, err
		}
		return counts.Total(), nil, nil
	case backend.BulkCancel:
		rows, err := tx.Query(ctx, b.q.BulkCancelRuns, b.namespace, runIDs, b.at())
		if err != nil {
			return 0, nil, err
		}
		var (
			acted    int
			finished []*backend.WorkflowRun
			r        backend.WorkflowRun
			notified any
		)
		_, err = pgx.ForEachRow(rows, []any{&r.NamespaceID, &r.ID, &r.ParentStepAttemptNamespaceID, &r.ParentStepAttemptID, &notified}, func() error {
			acted++
			if r.ParentStepAttemptID != nil {
				run := r
				finished = append(finished, &run)
			}
			return nil
		})
		return acted, finished, err
	case backend.BulkRetry, backend.BulkPause, backend.BulkResume:
	default:
		return 0, nil, fmt.Errorf("%w: bulk operation %q", backend.ErrInvalidArgument, op)
	}
	var reason *string
	if a.Reason != "" {
		reason = &a.Reason
	}
	batch := &pgx.Batch{}
	for _, runID := range runIDs {
		switch op {
		case backend.BulkCancel:
			batch.Queue(b.q.CancelRun, b.namespace, runID, b.at())
		case backend.BulkRetry:
			batch.Queue(b.q.RetryRun, b.namespace, runID, id.New(id.PrefixStep), nil, b.at())
		case backend.BulkPause:
			batch.Queue(b.q.PauseRun, b.namespace, runID, reason, b.at())
		case backend.BulkResume: // a paused run, else a canceled one: never both
			batch.Queue(b.q.ResumePausedRun, b.namespace, runID, b.at())
			batch.Queue(b.q.ResumeCanceledRun, b.namespace, runID, id.New(id.PrefixStep), b.at())
		}
	}
	br := tx.SendBatch(ctx, batch)
	var (
		acted    int
		finished []*backend.WorkflowRun
	)
	for range batch.Len() {
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return 0, nil, err
		}
		runs, err := pgx.CollectRows(rows, scanRun)
		if err != nil {
			br.Close()
			return 0, nil, err
		}
		acted += len(runs)
		for _, r := range runs {
			if op == backend.BulkCancel && r.ParentStepAttemptID != nil {
				finished = append(finished, r)
			}
		}
	}
	return acted, finished, br.Close()
}

// FailBulkAction implements [backend.BulkActionStore].
func (b *Backend) FailBulkAction(ctx context.Context, actionID, owner, message string) (*backend.BulkAction, error) {
	var out *backend.BulkAction
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		a, err := queryBulkAction(ctx, tx, b.q.LockBulkAction, b.namespace, actionID)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("bulk action %s: %w", actionID, backend.ErrBulkActionNotFound)
		}
		if err != nil {
			return err
		}
		if err := backend.CheckBulkDriver(a, owner, a.Cursor); err != nil {
			return err
		}
		out, err = queryBulkAction(ctx, tx, b.q.AdvanceBulkAction, b.namespace, actionID, a.Cursor,
			0, 0, 0, 0, string(backend.BulkFailed), owner, 1, backend.TruncateText(message, backend.MaxBulkReasonBytes), b.at())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fail bulk action %s: %w", actionID, err)
	}
	return out, nil
}
