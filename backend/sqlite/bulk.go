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

var _ backend.BulkActionStore = (*Backend)(nil)

// scanBulkAction reads the columns of the bulk_columns fragment.
func scanBulkAction(s scanner) (*backend.BulkAction, error) {
	var (
		a                               backend.BulkAction
		op, state, created, updated     string
		owner, expires, started, finish sql.NullString
	)
	err := s.Scan(&a.NamespaceID, &a.ID, &op, &a.Query, &a.Reason, &a.RequestedBy,
		&state, &a.MaxPerSecond, &a.Matched, &a.Acted, &a.Skipped, &a.Failed,
		&a.Pages, &a.Cursor, &a.LastError, &owner, &expires,
		&created, &updated, &started, &finish)
	if err != nil {
		return nil, err
	}
	a.Operation, a.State, a.LeaseOwner = backend.BulkOperation(op), backend.BulkActionState(state), owner.String
	if a.CreatedAt, err = backend.ParseTime(created); err != nil {
		return nil, fmt.Errorf("bulk action %s: created_at: %w", a.ID, err)
	}
	if a.UpdatedAt, err = backend.ParseTime(updated); err != nil {
		return nil, fmt.Errorf("bulk action %s: updated_at: %w", a.ID, err)
	}
	for _, t := range []struct {
		dst **time.Time
		src sql.NullString
	}{{&a.LeaseExpiresAt, expires}, {&a.StartedAt, started}, {&a.FinishedAt, finish}} {
		if *t.dst, err = parseNullTime(t.src); err != nil {
			return nil, fmt.Errorf("bulk action %s: %w", a.ID, err)
		}
	}
	return &a, nil
}

// CreateBulkAction implements [backend.BulkActionStore].
func (b *Backend) CreateBulkAction(ctx context.Context, p backend.CreateBulkActionParams) (*backend.BulkAction, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("create bulk action: %w", err)
	}
	var a *backend.BulkAction
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		created := now
		if !p.CreatedAt.IsZero() {
			created = p.CreatedAt.UTC().Truncate(time.Millisecond)
		}
		var err error
		a, err = scanBulkAction(tx.QueryRowContext(ctx, b.q.InsertBulkAction,
			sql.Named("ns", b.ns), sql.Named("id", p.ID), sql.Named("operation", string(p.Operation)),
			sql.Named("query", p.Query), sql.Named("reason", p.Reason), sql.Named("requested_by", p.RequestedBy),
			sql.Named("max_per_second", p.MaxPerSecond), sql.Named("matched", p.Matched),
			sql.Named("created_at", timeArg(created)), sql.Named("now", timeArg(now))))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create bulk action %s: %w", p.ID, err)
	}
	return a, nil
}

// GetBulkAction implements [backend.BulkActionStore].
func (b *Backend) GetBulkAction(ctx context.Context, actionID string) (*backend.BulkAction, error) {
	var a *backend.BulkAction
	err := b.read(ctx, func() (err error) {
		a, err = b.getBulkAction(ctx, b.db, actionID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get bulk action %s: %w", actionID, err)
	}
	return a, nil
}

// getBulkAction reads one action; a missing one is an error wrapping
// [backend.ErrBulkActionNotFound].
func (b *Backend) getBulkAction(ctx context.Context, q querier, actionID string) (*backend.BulkAction, error) {
	a, err := scanBulkAction(q.QueryRowContext(ctx, b.q.GetBulkAction, sql.Named("ns", b.ns), sql.Named("id", actionID)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, backend.ErrBulkActionNotFound
	}
	return a, err
}

// ListBulkActions implements [backend.BulkActionStore].
func (b *Backend) ListBulkActions(ctx context.Context, p backend.ListBulkActionsParams) (*backend.Page[backend.BulkAction], error) {
	page, err := listPage(ctx, b, listQuery{
		base: b.q.ListBulkActions, descending: true,
		args:  []any{sql.Named("ns", b.ns)},
		limit: p.Limit, after: p.After, before: p.Before,
	}, scanBulkAction, func(*backend.BulkAction) int { return 0 },
		func(a *backend.BulkAction) backend.Cursor { return backend.Cursor{CreatedAt: a.CreatedAt, ID: a.ID} })
	if err != nil {
		return nil, fmt.Errorf("list bulk actions: %w", err)
	}
	return page, nil
}

// CancelBulkAction implements [backend.BulkActionStore].
func (b *Backend) CancelBulkAction(ctx context.Context, actionID string) (*backend.BulkAction, error) {
	var a *backend.BulkAction
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		var err error
		a, err = scanBulkAction(tx.QueryRowContext(ctx, b.q.CancelBulkAction,
			sql.Named("ns", b.ns), sql.Named("id", actionID), sql.Named("now", timeArg(now))))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if a, err = b.getBulkAction(ctx, tx, actionID); err != nil {
			return err
		}
		if a.State == backend.BulkCanceling || a.State == backend.BulkCanceled {
			return nil
		}
		return fmt.Errorf("cannot cancel it, it is %s: %w", a.State, backend.ErrBulkActionFinished)
	})
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
	var a *backend.BulkAction
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		var err error
		a, err = scanBulkAction(tx.QueryRowContext(ctx, b.q.ClaimBulkAction,
			sql.Named("ns", b.ns), sql.Named("owner", p.Owner),
			sql.Named("expires_at", timeArg(now.Add(p.Lease))), sql.Named("now", timeArg(now))))
		if errors.Is(err, sql.ErrNoRows) {
			a, err = nil, nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim bulk action: %w", err)
	}
	return a, nil
}

// ApplyBulkActionPage implements [backend.BulkActionStore] in one BEGIN
// IMMEDIATE transaction: the action is read and checked under the write
// lock, each run of the page goes through the single-run statement of the
// operation (cancel_run, wake_parent and the finish event as
// CancelWorkflowRun; retry_run and insert_retry_mark as RetryWorkflowRun)
// or retention's deletes, and the action advances.
func (b *Backend) ApplyBulkActionPage(ctx context.Context, p backend.ApplyBulkActionPageParams) (*backend.BulkAction, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("apply bulk action page: %w", err)
	}
	var out *backend.BulkAction
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		a, err := b.getBulkAction(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		if err := backend.CheckBulkDriver(a, p.Owner, p.From); err != nil {
			return err
		}
		var state any
		acted, to, pages := 0, p.To, 1
		if a.State == backend.BulkCanceling {
			state, to, pages = string(backend.BulkCanceled), p.From, 0
		} else {
			if acted, err = b.applyBulkOperation(ctx, tx, now, ev, a, p.RunIDs); err != nil {
				return err
			}
			if p.Last {
				state = string(backend.BulkCompleted)
			}
		}
		skipped := 0
		if pages == 1 {
			skipped = len(p.RunIDs) - acted
		}
		out, err = b.advanceBulkAction(ctx, tx, now, p.ID, to, acted, skipped, pages, state, p.Owner, p.Lease, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("apply a page of bulk action %s: %w", p.ID, err)
	}
	return out, nil
}

// advanceBulkAction runs advance_bulk_action.
func (b *Backend) advanceBulkAction(ctx context.Context, tx *txn, now time.Time, actionID, cursor string, acted, skipped, pages int, state any, owner string, lease time.Duration, lastError any) (*backend.BulkAction, error) {
	return scanBulkAction(tx.QueryRowContext(ctx, b.q.AdvanceBulkAction,
		sql.Named("ns", b.ns), sql.Named("id", actionID), sql.Named("cursor", cursor),
		sql.Named("acted", acted), sql.Named("skipped", skipped), sql.Named("failed", 0),
		sql.Named("pages", pages), sql.Named("state", state), sql.Named("owner", owner),
		sql.Named("expires_at", timeArg(now.Add(lease))), sql.Named("last_error", lastError),
		sql.Named("now", timeArg(now))))
}

// applyBulkOperation acts on runIDs for op in tx and returns how many it
// acted on.
func (b *Backend) applyBulkOperation(ctx context.Context, tx *txn, now time.Time, ev *events, a *backend.BulkAction, runIDs []string) (int, error) {
	op := a.Operation
	switch op {
	case backend.BulkDelete:
		idsJSON, _ := json.Marshal(runIDs)
		rows, err := tx.QueryContext(ctx, b.q.BulkDeletable, sql.Named("ns", b.ns), sql.Named("ids", string(idsJSON)))
		if err != nil {
			return 0, err
		}
		var ids []string
		for rows.Next() {
			var runID string
			if err := rows.Scan(&runID); err != nil {
				rows.Close()
				return 0, err
			}
			ids = append(ids, runID)
		}
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return 0, err
		}
		var counts backend.RunCounts
		if err := b.deleteRuns(ctx, tx, ids, &counts); err != nil {
			return 0, err
		}
		return counts.Total(), nil
	case backend.BulkCancel:
		acted := 0
		for _, runID := range runIDs {
			run, err := scanRun(tx.QueryRowContext(ctx, b.q.CancelRun,
				sql.Named("ns", b.ns), sql.Named("run_id", runID), sql.Named("now", timeArg(now))))
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return 0, err
			}
			acted++
			ev.runFinished(b.ns, run.ID, nil)
			if err := b.wakeParent(ctx, tx, run, now, ev); err != nil {
				return 0, err
			}
		}
		return acted, nil
	case backend.BulkRetry:
		acted := 0
		for _, runID := range runIDs {
			run, err := scanRun(tx.QueryRowContext(ctx, b.q.RetryRun,
				sql.Named("ns", b.ns), sql.Named("run_id", runID),
				sql.Named("deadline_at", nil), sql.Named("now", timeArg(now))))
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return 0, err
			}
			if _, err := tx.ExecContext(ctx, b.q.InsertRetryMark,
				sql.Named("ns", b.ns), sql.Named("step_id", id.New(id.PrefixStep)),
				sql.Named("run_id", run.ID), sql.Named("attempts", run.Attempts),
				sql.Named("now", timeArg(now))); err != nil {
				return 0, err
			}
			acted++
		}
		if acted > 0 {
			ev.workAvailable(b.ns)
		}
		return acted, nil
	case backend.BulkPause:
		var reason any
		if a.Reason != "" {
			reason = a.Reason
		}
		acted := 0
		for _, runID := range runIDs {
			_, err := scanRun(tx.QueryRowContext(ctx, b.q.PauseRun,
				sql.Named("ns", b.ns), sql.Named("run_id", runID), sql.Named("reason", reason), sql.Named("now", timeArg(now))))
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return 0, err
			}
			acted++
		}
		return acted, nil
	case backend.BulkResume:
		acted := 0
		for _, runID := range runIDs {
			args := []any{sql.Named("ns", b.ns), sql.Named("run_id", runID), sql.Named("now", timeArg(now))}
			_, err := scanRun(tx.QueryRowContext(ctx, b.q.ResumePausedRun, args...))
			if err == nil {
				acted++
				continue
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return 0, err
			}
			run, err := scanRun(tx.QueryRowContext(ctx, b.q.ResumeCanceledRun, args...))
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return 0, err
			}
			if _, err := tx.ExecContext(ctx, b.q.InsertResumeMark,
				sql.Named("ns", b.ns), sql.Named("step_id", id.New(id.PrefixStep)),
				sql.Named("run_id", run.ID), sql.Named("attempts", run.Attempts),
				sql.Named("now", timeArg(now))); err != nil {
				return 0, err
			}
			acted++
		}
		if acted > 0 {
			ev.workAvailable(b.ns)
		}
		return acted, nil
	}
	return 0, fmt.Errorf("%w: bulk operation %q", backend.ErrInvalidArgument, op)
}

// FailBulkAction implements [backend.BulkActionStore].
func (b *Backend) FailBulkAction(ctx context.Context, actionID, owner, message string) (*backend.BulkAction, error) {
	var out *backend.BulkAction
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		a, err := b.getBulkAction(ctx, tx, actionID)
		if err != nil {
			return err
		}
		if err := backend.CheckBulkDriver(a, owner, a.Cursor); err != nil {
			return err
		}
		out, err = b.advanceBulkAction(ctx, tx, now, actionID, a.Cursor, 0, 0, 0, string(backend.BulkFailed), owner, time.Millisecond,
			backend.TruncateText(message, backend.MaxBulkReasonBytes))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fail bulk action %s: %w", actionID, err)
	}
	return out, nil
}
