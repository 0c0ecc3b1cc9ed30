package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.UpdateStore = (*Backend)(nil)

// AdmitRunUpdate implements [backend.UpdateStore] in one READ COMMITTED
// transaction (sql/updates.sql): lock the run, return an earlier update
// of the same id (waking the run again while it is admitted), refuse a
// finished run and the limits, store the update and wake the run if it is
// parked.
func (b *Backend) AdmitRunUpdate(ctx context.Context, p backend.AdmitRunUpdateParams) (*backend.RunUpdate, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("update %q of workflow run %s: %w", p.Name, p.WorkflowRunID, err)
	}
	var out *backend.RunUpdate
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		out = nil
		var status string
		err := tx.QueryRow(ctx, b.q.LockSignaledRun, b.namespace, p.WorkflowRunID).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return backend.ErrRunNotFound
		}
		if err != nil {
			return err
		}
		prev, err := scanRunUpdate(tx.QueryRow(ctx, b.q.GetRunUpdate, b.namespace, p.WorkflowRunID, p.UpdateID))
		switch {
		case err == nil:
			prev.Duplicate = true
			out = prev
			if prev.State == backend.UpdateAdmitted {
				_, err = tx.Exec(ctx, b.q.WakeSignaledRun, b.namespace, p.WorkflowRunID, b.at())
			}
			return err
		case !errors.Is(err, backend.ErrUpdateNotFound):
			return err
		}
		if s := backend.RunStatus(status).Normalize(); s.Terminal() {
			return fmt.Errorf("the run is %s: %w", s, backend.ErrRunTerminal)
		}
		var open, all int
		if err := tx.QueryRow(ctx, b.q.CountRunUpdates, b.namespace, p.WorkflowRunID).Scan(&open, &all); err != nil {
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
		u := &backend.RunUpdate{NamespaceID: b.namespace, WorkflowRunID: p.WorkflowRunID, ID: p.UpdateID, Name: p.Name,
			Input: input, State: backend.UpdateAdmitted}
		if err := tx.QueryRow(ctx, b.q.InsertRunUpdate, b.namespace, p.WorkflowRunID, p.UpdateID, p.Name, string(input), b.at()).
			Scan(&u.Seq, &u.CreatedAt); err != nil {
			return err
		}
		u.CreatedAt = u.CreatedAt.UTC()
		out = u
		_, err = tx.Exec(ctx, b.q.WakeSignaledRun, b.namespace, p.WorkflowRunID, b.at())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update %q of workflow run %s: %w", p.Name, p.WorkflowRunID, err)
	}
	return out, nil
}

// GetRunUpdate implements [backend.UpdateStore].
func (b *Backend) GetRunUpdate(ctx context.Context, runID, updateID string) (*backend.RunUpdate, error) {
	u, err := scanRunUpdate(b.pool.QueryRow(ctx, b.q.GetRunUpdate, b.namespace, runID, updateID))
	if err != nil {
		return nil, fmt.Errorf("get update %s of workflow run %s: %w", updateID, runID, err)
	}
	return u, nil
}

// ListRunUpdates implements [backend.UpdateStore].
func (b *Backend) ListRunUpdates(ctx context.Context, runID string, onlyAdmitted bool) ([]backend.RunUpdate, error) {
	rows, err := b.pool.Query(ctx, b.q.ListRunUpdates, b.namespace, runID, onlyAdmitted)
	if err != nil {
		return nil, fmt.Errorf("list updates of workflow run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []backend.RunUpdate
	for rows.Next() {
		u, err := scanRunUpdate(rows)
		if err != nil {
			return nil, fmt.Errorf("list updates of workflow run %s: %w", runID, err)
		}
		out = append(out, *u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list updates of workflow run %s: %w", runID, err)
	}
	return out, nil
}

// SettleRunUpdate implements [backend.UpdateStore] in one transaction
// fenced on the run's lease (lock_owned_run).
func (b *Backend) SettleRunUpdate(ctx context.Context, p backend.SettleRunUpdateParams) error {
	if !p.State.Settled() {
		return fmt.Errorf("settle update %s of workflow run %s: %w: state %q is not final", p.UpdateID, p.WorkflowRunID, backend.ErrInvalidArgument, p.State)
	}
	fenced := false
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		fenced = false
		var attempts int
		err := tx.QueryRow(ctx, b.q.LockOwnedRun, b.namespace, p.WorkflowRunID, p.WorkerID).Scan(&attempts)
		if errors.Is(err, pgx.ErrNoRows) {
			fenced = true
			return nil
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, b.q.SettleRunUpdate, b.namespace, p.WorkflowRunID, p.UpdateID, string(p.State),
			nullText(p.Result), nullText(p.Error), b.at())
		return err
	})
	if err == nil && fenced {
		return b.fenceError(ctx, "settle update", p.WorkflowRunID, p.WorkerID)
	}
	if err != nil {
		return fmt.Errorf("settle update %s of workflow run %s: %w", p.UpdateID, p.WorkflowRunID, err)
	}
	return nil
}

// nullText is raw as text, or NULL when empty.
func nullText(raw json.RawMessage) *string {
	if len(raw) == 0 {
		return nil
	}
	s := string(raw)
	return &s
}

// scanRunUpdate reads one row of update_columns; no row is
// backend.ErrUpdateNotFound.
func scanRunUpdate(row pgx.Row) (*backend.RunUpdate, error) {
	var u backend.RunUpdate
	var input, result, errText *string
	var state string
	var settled *time.Time
	err := row.Scan(&u.NamespaceID, &u.WorkflowRunID, &u.ID, &u.Name, &u.Seq, &input, &state, &result, &errText, &u.CreatedAt, &settled)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, backend.ErrUpdateNotFound
	}
	if err != nil {
		return nil, err
	}
	u.State = backend.RunUpdateState(state)
	u.CreatedAt = u.CreatedAt.UTC()
	if settled != nil {
		t := settled.UTC()
		u.SettledAt = &t
	}
	u.Input = rawOrNull(input)
	if result != nil {
		u.Result = json.RawMessage(*result)
	}
	if errText != nil {
		u.Error = json.RawMessage(*errText)
	}
	return &u, nil
}

func rawOrNull(s *string) json.RawMessage {
	if s == nil {
		return json.RawMessage("null")
	}
	return json.RawMessage(*s)
}
