package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.Debouncer = (*Backend)(nil)

// DebounceWorkflowRun implements [backend.Debouncer] in one BEGIN
// IMMEDIATE transaction (which serializes it with every other write of
// the file, so no concurrent start can take the key between the look and
// the create): debounce_extend joins the pending burst of the key, or the
// run is created, due a period from now, and marked with the key and the
// burst's deadline (the unique index guards the mark all the same).
func (b *Backend) DebounceWorkflowRun(ctx context.Context, p backend.CreateWorkflowRunParams, d backend.Debounce) (*backend.DebouncedRun, error) {
	d, err := d.Validate()
	if err == nil {
		err = backend.ValidateDebounceStart(p)
	}
	if err != nil {
		return nil, fmt.Errorf("debounce workflow run: %w", err)
	}
	args, err := newCreateArgs(&p)
	if err != nil {
		return nil, fmt.Errorf("debounce workflow run: %w", err)
	}
	var out *backend.DebouncedRun
	err = b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		out = nil
		due := now.Add(d.Period)
		var runID string
		err := tx.QueryRowContext(ctx, b.q.DebounceExtend,
			sql.Named("ns", b.ns), sql.Named("workflow_name", p.WorkflowName), sql.Named("key", d.Key),
			sql.Named("leading", d.Leading), sql.Named("input", args.input),
			sql.Named("due", timeArg(due)), sql.Named("now", timeArg(now))).Scan(&runID)
		debounced := err == nil
		if errors.Is(err, sql.ErrNoRows) {
			cp := p
			cp.AvailableAt = &due
			run, cerr := b.createRun(ctx, tx, now, ev, &cp, &args)
			if cerr != nil {
				return cerr
			}
			runID = run.ID
			_, err = tx.ExecContext(ctx, b.q.DebounceMark,
				sql.Named("ns", b.ns), sql.Named("id", runID), sql.Named("key", d.Key),
				sql.Named("due", timeArg(due)), sql.Named("deadline", timeArg(now.Add(d.MaxDelay))))
		}
		if err != nil {
			return err
		}
		out, err = scanDebounced(tx.QueryRowContext(ctx, b.q.GetDebouncedRun, sql.Named("ns", b.ns), sql.Named("id", runID)))
		if err != nil {
			return err
		}
		out.Debounced = debounced
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("debounce workflow run %q with key %q: %w", p.WorkflowName, d.Key, err)
	}
	return out, nil
}

// debounceRow makes scanRun read the run's columns and the debounce's
// three that follow them.
type debounceRow struct {
	scanner
	extra []any
}

func (r debounceRow) Scan(dest ...any) error { return r.scanner.Scan(append(dest, r.extra...)...) }

func scanDebounced(s scanner) (*backend.DebouncedRun, error) {
	var d backend.DebouncedRun
	var due sql.NullString
	var deadline string
	var err error
	if d.Run, err = scanRun(debounceRow{s, []any{&d.Key, &due, &deadline}}); err != nil {
		return nil, err
	}
	if due.Valid {
		if d.DueAt, err = backend.ParseTime(due.String); err != nil {
			return nil, err
		}
	}
	if d.Deadline, err = backend.ParseTime(deadline); err != nil {
		return nil, err
	}
	return &d, nil
}

// ListDebouncedRuns implements [backend.Debouncer].
func (b *Backend) ListDebouncedRuns(ctx context.Context, limit int) ([]backend.DebouncedRun, error) {
	if limit <= 0 {
		limit = backend.DefaultPageSize
	}
	var out []backend.DebouncedRun
	err := b.read(ctx, func() error {
		out = nil
		rows, err := b.db.QueryContext(ctx, b.q.ListDebouncedRuns, sql.Named("ns", b.ns), sql.Named("limit", limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDebounced(rows)
			if err != nil {
				return err
			}
			out = append(out, *d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list debounced runs: %w", err)
	}
	return out, nil
}
