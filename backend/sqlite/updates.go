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

var _ backend.UpdateStore = (*Backend)(nil)

// AdmitRunUpdate implements [backend.UpdateStore] in one BEGIN IMMEDIATE
// transaction (sql/updates.sql): refuse a missing run, return an earlier
// update of the same id (waking the run again while it is admitted),
// refuse a finished run and the limits, store the update and wake the run
// if it is parked, publishing EventWorkAvailable.
func (b *Backend) AdmitRunUpdate(ctx context.Context, p backend.AdmitRunUpdateParams) (*backend.RunUpdate, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("update %q of workflow run %s: %w", p.Name, p.WorkflowRunID, err)
	}
	var out *backend.RunUpdate
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		out = nil
		run, err := b.getRun(ctx, tx, p.WorkflowRunID)
		if err != nil {
			return err
		}
		wake := func() error {
			woken, err := queryStrings(ctx, tx, b.q.WakeRun,
				sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID), sql.Named("now", timeArg(now)))
			if err != nil {
				return fmt.Errorf("wake workflow run %s: %w", p.WorkflowRunID, err)
			}
			if len(woken) > 0 {
				ev.workAvailable(b.ns)
			}
			return nil
		}
		prev, err := scanRunUpdate(tx.QueryRowContext(ctx, b.q.GetRunUpdate, sql.Named("ns", b.ns),
			sql.Named("run_id", p.WorkflowRunID), sql.Named("id", p.UpdateID)))
		switch {
		case err == nil:
			prev.Duplicate = true
			out = prev
			if prev.State == backend.UpdateAdmitted {
				return wake()
			}
			return nil
		case !errors.Is(err, backend.ErrUpdateNotFound):
			return err
		}
		if s := run.Status.Normalize(); s.Terminal() {
			return fmt.Errorf("the run is %s: %w", s, backend.ErrRunTerminal)
		}
		if run.Paused() {
			return fmt.Errorf("the run is paused; resume it first: %w", backend.ErrRunPaused)
		}
		var open, all int
		if err := tx.QueryRowContext(ctx, b.q.CountRunUpdates, sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID)).
			Scan(&open, &all); err != nil {
			return err
		}
		if open >= backend.MaxInFlightUpdates {
			return fmt.Errorf("%w: %d updates wait to be handled (at most %d)", backend.ErrTooManyUpdates, open, backend.MaxInFlightUpdates)
		}
		if all >= backend.MaxUpdatesPerRun {
			return fmt.Errorf("%w: the run has had %d updates (at most %d)", backend.ErrTooManyUpdates, all, backend.MaxUpdatesPerRun)
		}
		input := p.Input
		if len(input) == 0 {
			input = json.RawMessage("null")
		}
		u := &backend.RunUpdate{NamespaceID: b.ns, WorkflowRunID: p.WorkflowRunID, ID: p.UpdateID, Name: p.Name,
			Input: input, State: backend.UpdateAdmitted, CreatedAt: now.UTC()}
		if err := tx.QueryRowContext(ctx, b.q.InsertRunUpdate, sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID),
			sql.Named("id", p.UpdateID), sql.Named("name", p.Name), sql.Named("input", string(input)),
			sql.Named("now", timeArg(now))).Scan(&u.Seq); err != nil {
			return err
		}
		out = u
		return wake()
	})
	if err != nil {
		return nil, fmt.Errorf("update %q of workflow run %s: %w", p.Name, p.WorkflowRunID, err)
	}
	return out, nil
}

// GetRunUpdate implements [backend.UpdateStore].
func (b *Backend) GetRunUpdate(ctx context.Context, runID, updateID string) (*backend.RunUpdate, error) {
	var u *backend.RunUpdate
	err := b.read(ctx, func() error {
		var err error
		u, err = scanRunUpdate(b.reader().QueryRowContext(ctx, b.q.GetRunUpdate, sql.Named("ns", b.ns),
			sql.Named("run_id", runID), sql.Named("id", updateID)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get update %s of workflow run %s: %w", updateID, runID, err)
	}
	return u, nil
}

// ListRunUpdates implements [backend.UpdateStore].
func (b *Backend) ListRunUpdates(ctx context.Context, runID string, onlyAdmitted bool) ([]backend.RunUpdate, error) {
	var out []backend.RunUpdate
	err := b.read(ctx, func() error {
		out = nil
		rows, err := b.reader().QueryContext(ctx, b.q.ListRunUpdates, sql.Named("ns", b.ns),
			sql.Named("run_id", runID), sql.Named("only_admitted", onlyAdmitted))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			u, err := scanRunUpdate(rows)
			if err != nil {
				return err
			}
			out = append(out, *u)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list updates of workflow run %s: %w", runID, err)
	}
	return out, nil
}

// SettleRunUpdate implements [backend.UpdateStore] in one write
// transaction fenced on the run's lease (owned_run_claim); the hub
// announces the settlement after the commit.
func (b *Backend) SettleRunUpdate(ctx context.Context, p backend.SettleRunUpdateParams) error {
	if !p.State.Settled() {
		return fmt.Errorf("settle update %s of workflow run %s: %w: state %q is not final", p.UpdateID, p.WorkflowRunID, backend.ErrInvalidArgument, p.State)
	}
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		var attempts int64
		err := tx.QueryRowContext(ctx, b.q.OwnedRunClaim, sql.Named("ns", b.ns),
			sql.Named("run_id", p.WorkflowRunID), sql.Named("worker_id", p.WorkerID)).Scan(&attempts)
		if errors.Is(err, sql.ErrNoRows) {
			return missingRunNotOwned(b.fenceError(ctx, tx, p.WorkflowRunID))
		}
		if err != nil {
			return err
		}
		settled, err := queryStrings(ctx, tx, b.q.SettleRunUpdate, sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID),
			sql.Named("id", p.UpdateID), sql.Named("state", string(p.State)), sql.Named("result", textOrNil(p.Result)),
			sql.Named("error", textOrNil(p.Error)), sql.Named("now", timeArg(now)))
		if err != nil {
			return err
		}
		if len(settled) > 0 {
			ev.updateSettled(b.ns, p.WorkflowRunID, p.UpdateID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("settle update %s of workflow run %s: %w", p.UpdateID, p.WorkflowRunID, err)
	}
	return nil
}

func textOrNil(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// scanRunUpdate reads one row of update_columns; no row is
// backend.ErrUpdateNotFound.
func scanRunUpdate(row interface{ Scan(...any) error }) (*backend.RunUpdate, error) {
	var u backend.RunUpdate
	var input, result, errText, settled sql.NullString
	var state, created string
	err := row.Scan(&u.NamespaceID, &u.WorkflowRunID, &u.ID, &u.Name, &u.Seq, &input, &state, &result, &errText, &created, &settled)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, backend.ErrUpdateNotFound
	}
	if err != nil {
		return nil, err
	}
	u.State = backend.RunUpdateState(state)
	if u.CreatedAt, err = backend.ParseTime(created); err != nil {
		return nil, fmt.Errorf("update %s: created_at: %w", u.ID, err)
	}
	if u.SettledAt, err = parseNullTime(settled); err != nil {
		return nil, fmt.Errorf("update %s: settled_at: %w", u.ID, err)
	}
	u.Input = json.RawMessage("null")
	if input.Valid {
		u.Input = json.RawMessage(input.String)
	}
	if result.Valid {
		u.Result = json.RawMessage(result.String)
	}
	if errText.Valid {
		u.Error = json.RawMessage(errText.String)
	}
	return &u, nil
}
