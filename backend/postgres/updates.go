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
// transaction (sql/updates.sql) of two batches, each one round trip: lock
// the run and read the update's id and the run's counts; then store the
// update and wake the run if it is parked — or return the earlier update
// of the same id (waking the run again while it is admitted), or refuse a
// finished run and the limits.
func (b *Backend) AdmitRunUpdate(ctx context.Context, p backend.AdmitRunUpdateParams) (*backend.RunUpdate, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("update %q of workflow run %s: %w", p.Name, p.WorkflowRunID, err)
	}
	input := p.Input
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	var out *backend.RunUpdate
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		out = nil
		// One round trip: the run's lock first, then what it guards.
		read := &pgx.Batch{}
		var status string
		var paused bool
		var prev *backend.RunUpdate
		var open, all int
		read.Queue(b.q.LockUpdatedRun, b.namespace, p.WorkflowRunID).QueryRow(func(row pgx.Row) error {
			err := row.Scan(&status, &paused)
			if errors.Is(err, pgx.ErrNoRows) {
				return backend.ErrRunNotFound
			}
			return err
		})
		read.Queue(b.q.GetRunUpdate, b.namespace, p.WorkflowRunID, p.UpdateID).QueryRow(func(row pgx.Row) error {
			u, err := scanRunUpdate(row)
			if errors.Is(err, backend.ErrUpdateNotFound) {
				return nil
			}
			prev = u
			return err
		})
		read.Queue(b.q.CountRunUpdates, b.namespace, p.WorkflowRunID).QueryRow(func(row pgx.Row) error {
			return row.Scan(&open, &all)
		})
		if err := tx.SendBatch(ctx, read).Close(); err != nil {
			return err
		}
		if prev != nil {
			prev.Duplicate = true
			out = prev
			if prev.State == backend.UpdateAdmitted {
				_, err := tx.Exec(ctx, b.q.WakeSignaledRun, b.namespace, p.WorkflowRunID, b.at())
				return err
			}
			return nil
		}
		if s := backend.RunStatus(status).Normalize(); s.Terminal() {
			return fmt.Errorf("the run is %s: %w", s, backend.ErrRunTerminal)
		}
		if paused {
			return fmt.Errorf("the run is paused; resume it first: %w", backend.ErrRunPaused)
		}
		if open >= backend.MaxInFlightUpdates {
			return fmt.Errorf("%w: %d updates wait to be handled (at most %d)", backend.ErrTooManyUpdates, open, backend.MaxInFlightUpdates)
		}
		if all >= backend.MaxUpdatesPerRun {
			return fmt.Errorf("%w: the run has had %d updates (at most %d)", backend.ErrTooManyUpdates, all, backend.MaxUpdatesPerRun)
		}
		u := &backend.RunUpdate{NamespaceID: b.namespace, WorkflowRunID: p.WorkflowRunID, ID: p.UpdateID, Name: p.Name,
			Input: input, State: backend.UpdateAdmitted}
		write := &pgx.Batch{}
		write.Queue(b.q.InsertRunUpdate, b.namespace, p.WorkflowRunID, p.UpdateID, p.Name, string(input), b.at()).QueryRow(func(row pgx.Row) error {
			return row.Scan(&u.Seq, &u.CreatedAt)
		})
		write.Queue(b.q.WakeSignaledRun, b.namespace, p.WorkflowRunID, b.at())
		if err := tx.SendBatch(ctx, write).Close(); err != nil {
			return err
		}
		u.CreatedAt = u.CreatedAt.UTC()
		out = u
		return nil
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

// SettleRunUpdate implements [backend.UpdateStore] in one statement
// fenced on the run's lease (settle_run_update); when it changes nothing,
// the run's ownership says whether the fence refused it (ErrNotOwner) or
// the update was settled already (nil).
func (b *Backend) SettleRunUpdate(ctx context.Context, p backend.SettleRunUpdateParams) error {
	if !p.State.Settled() {
		return fmt.Errorf("settle update %s of workflow run %s: %w: state %q is not final", p.UpdateID, p.WorkflowRunID, backend.ErrInvalidArgument, p.State)
	}
	tag, err := b.pool.Exec(ctx, b.q.SettleRunUpdate, b.namespace, p.WorkflowRunID, p.UpdateID, string(p.State),
		nullText(p.Result), nullText(p.Error), p.WorkerID, b.at())
	if err != nil {
		return fmt.Errorf("settle update %s of workflow run %s: %w", p.UpdateID, p.WorkflowRunID, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	status, owner, err := b.runOwnership(ctx, p.WorkflowRunID)
	if err == nil && backend.RunStatus(status) == backend.RunRunning && owner != nil && *owner == p.WorkerID {
		return nil // settled already: the first settlement wins
	}
	return ownershipError("settle update", p.WorkflowRunID, p.WorkerID, status, owner, err)
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
