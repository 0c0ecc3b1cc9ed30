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

var _ backend.HookStore = (*Backend)(nil)

// CreateHook implements [backend.HookStore] in one BEGIN IMMEDIATE
// transaction (sql/hooks.sql): the fence, the hook this run already
// created at p.StepName (returned as it is), the live holder of the token
// (ErrHookConflict), then the insert. The file's write lock serializes
// concurrent creates of one token.
func (b *Backend) CreateHook(ctx context.Context, p backend.CreateHookParams) (*backend.Hook, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("create hook: %w", err)
	}
	var meta any
	if len(p.Metadata) > 0 {
		meta = string(p.Metadata)
	}
	var h *backend.Hook
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		h = nil
		var attempts int64
		err := tx.QueryRowContext(ctx, b.q.OwnedRunClaim, sql.Named("ns", b.ns),
			sql.Named("run_id", p.WorkflowRunID), sql.Named("worker_id", p.WorkerID)).Scan(&attempts)
		if errors.Is(err, sql.ErrNoRows) {
			return missingRunNotOwned(b.fenceError(ctx, tx, p.WorkflowRunID))
		}
		if err != nil {
			return err
		}
		if h, err = queryHook(tx.QueryRowContext(ctx, b.q.GetHookByStep, sql.Named("ns", b.ns),
			sql.Named("run_id", p.WorkflowRunID), sql.Named("step_name", p.StepName))); h != nil || err != nil {
			return err
		}
		holder, err := queryHook(tx.QueryRowContext(ctx, b.q.GetHookByToken, sql.Named("ns", b.ns), sql.Named("token", p.Token)))
		if err != nil {
			return err
		}
		if holder != nil {
			return fmt.Errorf("token held by hook %s of workflow run %s: %w", holder.ID, holder.WorkflowRunID, backend.ErrHookConflict)
		}
		if _, err := tx.ExecContext(ctx, b.q.InsertHook, sql.Named("ns", b.ns), sql.Named("id", p.ID),
			sql.Named("token", p.Token), sql.Named("run_id", p.WorkflowRunID), sql.Named("step_name", p.StepName),
			sql.Named("step_id", p.StepAttemptID), sql.Named("metadata", meta), sql.Named("now", timeArg(now))); err != nil {
			return err
		}
		h = &backend.Hook{NamespaceID: b.ns, ID: p.ID, Token: p.Token, WorkflowRunID: p.WorkflowRunID,
			StepName: p.StepName, StepAttemptID: p.StepAttemptID, Metadata: p.Metadata, Live: true, CreatedAt: now}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("create hook %s of workflow run %s at step %q: %w", p.ID, p.WorkflowRunID, p.StepName, err)
	}
	return h, nil
}

// ResumeHook implements [backend.HookStore] in one BEGIN IMMEDIATE
// transaction: the live hook holding token, its next number, the payload,
// and the wake-up of its run if parked on it (publishing
// EventWorkAvailable). A run still executing finds the payload when it
// parks (park_run), the write lock ordering the two.
func (b *Backend) ResumeHook(ctx context.Context, token string, data json.RawMessage) (*backend.Hook, *backend.HookPayload, error) {
	if err := backend.CheckToken(token); err != nil {
		return nil, nil, fmt.Errorf("resume hook: %w", err)
	}
	if err := backend.CheckHookPayload(data); err != nil {
		return nil, nil, fmt.Errorf("resume hook: %w", err)
	}
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	var h *backend.Hook
	var hp *backend.HookPayload
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		var err error
		if h, err = queryHook(tx.QueryRowContext(ctx, b.q.GetHookByToken, sql.Named("ns", b.ns), sql.Named("token", token))); err != nil {
			return err
		}
		if h == nil {
			return backend.ErrHookNotFound
		}
		hp = &backend.HookPayload{HookID: h.ID, Data: data, CreatedAt: now}
		if err := tx.QueryRowContext(ctx, b.q.BumpHookPayloads, sql.Named("ns", b.ns), sql.Named("hook_id", h.ID),
			sql.Named("now", timeArg(now))).Scan(&hp.Seq); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, b.q.InsertHookPayload, sql.Named("ns", b.ns), sql.Named("hook_id", h.ID),
			sql.Named("seq", hp.Seq), sql.Named("data", string(data)), sql.Named("now", timeArg(now))); err != nil {
			return err
		}
		h.Payloads = hp.Seq
		woken, err := queryStrings(ctx, tx, b.q.WakeHookWaiter, sql.Named("ns", b.ns), sql.Named("run_id", h.WorkflowRunID),
			sql.Named("hook_id", h.ID), sql.Named("now", timeArg(now)))
		if err != nil {
			return fmt.Errorf("wake workflow run %s: %w", h.WorkflowRunID, err)
		}
		if len(woken) > 0 {
			ev.workAvailable(b.ns)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("resume hook: %w", err)
	}
	return h, hp, nil
}

// GetHookByToken implements [backend.HookStore].
func (b *Backend) GetHookByToken(ctx context.Context, token string) (*backend.Hook, error) {
	if err := backend.CheckToken(token); err != nil {
		return nil, fmt.Errorf("get hook: %w", err)
	}
	var h *backend.Hook
	err := b.read(ctx, func() (err error) {
		h, err = queryHook(b.reader().QueryRowContext(ctx, b.q.GetHookByToken, sql.Named("ns", b.ns), sql.Named("token", token)))
		return err
	})
	if err == nil && h == nil {
		err = backend.ErrHookNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get hook: %w", err)
	}
	return h, nil
}

// NextHookPayload implements [backend.HookStore].
func (b *Backend) NextHookPayload(ctx context.Context, hookID string, afterSeq int64) (*backend.HookPayload, bool, error) {
	var p *backend.HookPayload
	err := b.read(ctx, func() error {
		p = nil
		var hp backend.HookPayload
		var data, created string
		err := b.reader().QueryRowContext(ctx, b.q.NextHookPayload, sql.Named("ns", b.ns), sql.Named("hook_id", hookID),
			sql.Named("after_seq", afterSeq)).Scan(&hp.HookID, &hp.Seq, &data, &created)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		hp.Data = json.RawMessage(data)
		if hp.CreatedAt, err = backend.ParseTime(created); err != nil {
			return fmt.Errorf("payload %d: created_at: %w", hp.Seq, err)
		}
		p = &hp
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("next payload of hook %s: %w", hookID, err)
	}
	return p, p != nil, nil
}

// ListHooks implements [backend.HookStore].
func (b *Backend) ListHooks(ctx context.Context, runID string) ([]backend.Hook, error) {
	var hs []backend.Hook
	err := b.read(ctx, func() error {
		hs = []backend.Hook{}
		rows, err := b.reader().QueryContext(ctx, b.q.ListHooks, sql.Named("ns", b.ns), sql.Named("run_id", runID))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			h, err := scanHook(rows)
			if err != nil {
				return err
			}
			hs = append(hs, *h)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list hooks of workflow run %s: %w", runID, err)
	}
	return hs, nil
}

// queryHook reads the row of a hook_columns query: nil when there is none.
func queryHook(row *sql.Row) (*backend.Hook, error) {
	h, err := scanHook(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return h, err
}

// scanHook reads one row of the hook_columns fragment (sql/hooks.sql).
func scanHook(s scanner) (*backend.Hook, error) {
	var h backend.Hook
	var meta sql.NullString
	var created string
	if err := s.Scan(&h.NamespaceID, &h.ID, &h.Token, &h.WorkflowRunID, &h.StepName,
		&h.StepAttemptID, &meta, &h.Payloads, &created, &h.Live); err != nil {
		return nil, err
	}
	h.Metadata = rawJSON(meta)
	var err error
	if h.CreatedAt, err = backend.ParseTime(created); err != nil {
		return nil, fmt.Errorf("hook %s: created_at: %w", h.ID, err)
	}
	return &h, nil
}

// missingRunNotOwned makes the fence's refusal of a write to a missing run
// wrap [backend.ErrNotOwner] besides [backend.ErrRunNotFound], as
// backend.Worker promises of every fenced write.
func missingRunNotOwned(err error) error {
	if errors.Is(err, backend.ErrRunNotFound) && !errors.Is(err, backend.ErrNotOwner) {
		return fmt.Errorf("%w (%w)", err, backend.ErrNotOwner)
	}
	return err
}
