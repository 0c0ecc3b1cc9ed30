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

var _ backend.HookStore = (*Backend)(nil)

// CreateHook implements [backend.HookStore] in one READ COMMITTED
// transaction (sql/hooks.sql):
//  1. lock the run's row if it is running under p.WorkerID (the fence);
//  2. return the hook this run already created at p.StepName, if any;
//  3. take the token's advisory lock and look for a live holder
//     (ErrHookConflict);
//  4. insert the hook.
func (b *Backend) CreateHook(ctx context.Context, p backend.CreateHookParams) (*backend.Hook, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("create hook: %w", err)
	}
	var meta *string
	if len(p.Metadata) > 0 {
		m := string(p.Metadata)
		meta = &m
	}
	var h *backend.Hook
	fenced := false
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		h, fenced = nil, false
		var attempts int
		err := tx.QueryRow(ctx, b.q.LockOwnedRun, b.namespace, p.WorkflowRunID, p.WorkerID).Scan(&attempts)
		if errors.Is(err, pgx.ErrNoRows) {
			fenced = true
			return nil
		}
		if err != nil {
			return err
		}
		if h, err = queryHook(tx.Query(ctx, b.q.GetHookByStep, b.namespace, p.WorkflowRunID, p.StepName)); h != nil || err != nil {
			return err
		}
		key := `{"hookNamespaceId":` + jsString(b.namespace) + `,"token":` + jsString(p.Token) + `}`
		if _, err := tx.Exec(ctx, b.q.LockHookToken, key); err != nil {
			return err
		}
		holder, err := queryHook(tx.Query(ctx, b.q.GetHookByToken, b.namespace, p.Token))
		if err != nil {
			return err
		}
		if holder != nil {
			return fmt.Errorf("token held by hook %s of workflow run %s: %w", holder.ID, holder.WorkflowRunID, backend.ErrHookConflict)
		}
		h, err = queryHook(tx.Query(ctx, b.q.InsertHook, b.namespace, p.ID, p.Token, p.WorkflowRunID,
			p.StepName, p.StepAttemptID, meta, b.at()))
		return err
	})
	if err == nil && fenced {
		return nil, b.fenceError(ctx, "create hook", p.WorkflowRunID, p.WorkerID)
	}
	if err != nil {
		return nil, fmt.Errorf("create hook %s of workflow run %s at step %q: %w", p.ID, p.WorkflowRunID, p.StepName, err)
	}
	return h, nil
}

// ResumeHook implements [backend.HookStore] in one READ COMMITTED
// transaction of two statements: lock_live_hook finds the live hook
// holding token and locks its run's row; deliver_hook_payload numbers and
// stores the payload and wakes the run if it is parked on the hook.
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
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if h, err = queryHook(tx.Query(ctx, b.q.LockLiveHook, b.namespace, token)); err != nil {
			return err
		}
		if h == nil {
			return backend.ErrHookNotFound
		}
		hp = &backend.HookPayload{HookID: h.ID, Data: data}
		if err := tx.QueryRow(ctx, b.q.DeliverHookPayload, b.namespace, h.ID, h.WorkflowRunID,
			string(data), b.at()).Scan(&hp.Seq, &hp.CreatedAt); err != nil {
			return err
		}
		hp.CreatedAt = hp.CreatedAt.UTC()
		h.Payloads = hp.Seq
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
	h, err := queryHook(b.pool.Query(ctx, b.q.GetHookByToken, b.namespace, token))
	if err == nil && h == nil {
		err = backend.ErrHookNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get hook: %w", err)
	}
	return h, nil
}

// NextHookPayload implements [backend.HookStore]: one range of the
// payloads' primary key. An id that is not valid text names no hook.
func (b *Backend) NextHookPayload(ctx context.Context, hookID string, afterSeq int64) (*backend.HookPayload, bool, error) {
	if !backend.ValidText(hookID) {
		return nil, false, nil
	}
	var p backend.HookPayload
	var data string
	err := b.pool.QueryRow(ctx, b.q.NextHookPayload, b.namespace, hookID, afterSeq).Scan(&p.HookID, &p.Seq, &data, &p.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("next payload of hook %s: %w", hookID, err)
	}
	p.Data = json.RawMessage(data)
	p.CreatedAt = p.CreatedAt.UTC()
	return &p, true, nil
}

// ListHooks implements [backend.HookStore].
func (b *Backend) ListHooks(ctx context.Context, runID string) ([]backend.Hook, error) {
	if !backend.ValidText(runID) {
		return []backend.Hook{}, nil
	}
	rows, err := b.pool.Query(ctx, b.q.ListHooks, b.namespace, runID)
	if err != nil {
		return nil, fmt.Errorf("list hooks of workflow run %s: %w", runID, err)
	}
	hs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (backend.Hook, error) {
		h, err := scanHook(row)
		if err != nil {
			return backend.Hook{}, err
		}
		return *h, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list hooks of workflow run %s: %w", runID, err)
	}
	if hs == nil {
		hs = []backend.Hook{}
	}
	return hs, nil
}

// queryHook reads at most one row of {{hook_columns}}: nil when there is
// none.
func queryHook(rows pgx.Rows, err error) (*backend.Hook, error) {
	if err != nil {
		return nil, err
	}
	h, err := pgx.CollectExactlyOneRow(rows, scanHook)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return h, err
}

// scanHook reads one row of {{hook_columns}} (sql/hooks.sql).
func scanHook(row pgx.CollectableRow) (*backend.Hook, error) {
	var h backend.Hook
	var meta *string
	var created time.Time
	if err := row.Scan(&h.NamespaceID, &h.ID, &h.Token, &h.WorkflowRunID, &h.StepName,
		&h.StepAttemptID, &meta, &h.Payloads, &created, &h.Live); err != nil {
		return nil, err
	}
	if meta != nil {
		h.Metadata = json.RawMessage(*meta)
	}
	h.CreatedAt = created.UTC()
	return &h, nil
}
