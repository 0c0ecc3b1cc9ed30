package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// SignalRun implements [backend.Client] in one READ COMMITTED transaction
// (sql/signals.sql): lock the run, return an earlier send with the same
// key (even once the run ended), refuse a terminal run, store the signal,
// and deliver the run's oldest stored signal to its open wait for that
// name, if any, waking the run.
func (b *Backend) SignalRun(ctx context.Context, p backend.SignalRunParams) (*backend.RunSignal, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("signal %q to workflow run %s: %w", p.Signal, p.WorkflowRunID, err)
	}
	var out *backend.RunSignal
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
		if p.IdempotencyKey != nil {
			var prev string
			var received bool
			err := tx.QueryRow(ctx, b.q.RunSignalByKey, b.namespace, p.WorkflowRunID, p.Signal, *p.IdempotencyKey).Scan(&prev, &received)
			if err == nil {
				out = &backend.RunSignal{ID: prev, Delivered: received, Duplicate: true}
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		// After the key: a repeat of a send that was taken answers it even
		// once the run has ended (a client's retry must stay safe).
		if s := backend.RunStatus(status).Normalize(); s.Terminal() {
			return fmt.Errorf("the run is %s: %w", s, backend.ErrRunTerminal)
		}
		sigID := id.New(id.PrefixSignal)
		var data *string
		if len(p.Data) > 0 {
			d := string(p.Data)
			data = &d
		}
		if _, err := tx.Exec(ctx, b.q.InsertRunSignal, b.namespace, sigID, p.WorkflowRunID, p.Signal, data, p.IdempotencyKey, b.at()); err != nil {
			return err
		}
		out = &backend.RunSignal{ID: sigID}
		var stepID string
		err = tx.QueryRow(ctx, b.q.OpenSignalWait, b.namespace, p.WorkflowRunID, p.Signal).Scan(&stepID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // stored until the run waits
		}
		if err != nil {
			return err
		}
		got, _, err := b.deliverOldestRunSignal(ctx, tx, p.WorkflowRunID, p.Signal, stepID)
		if err != nil {
			return err
		}
		out.Delivered = got == sigID
		_, err = tx.Exec(ctx, b.q.WakeSignaledRun, b.namespace, p.WorkflowRunID, b.at())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("signal %q to workflow run %s: %w", p.Signal, p.WorkflowRunID, err)
	}
	return out, nil
}

// deliverOldestRunSignal delivers run's oldest stored signal no wait has
// received to the signal-wait attempt stepID, and returns its id and data
// ("" when none is stored).
func (b *Backend) deliverOldestRunSignal(ctx context.Context, tx pgx.Tx, runID, signal, stepID string) (string, json.RawMessage, error) {
	var sigID string
	var data *string
	err := tx.QueryRow(ctx, b.q.OldestRunSignal, b.namespace, runID, signal).Scan(&sigID, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	var raw json.RawMessage
	if data != nil {
		raw = json.RawMessage(*data)
	}
	var esc escapes
	stored := esc.json(b.namespace, tableSignals, sigID, "data", raw)
	tag, err := tx.Exec(ctx, b.q.ReceiveRunSignal, b.namespace, sigID, stepID, runID, signal, stored, b.at())
	if err != nil {
		return "", nil, err
	}
	if tag.RowsAffected() != 1 {
		return "", nil, fmt.Errorf("deliver signal %s to step attempt %s: it was received already", sigID, stepID)
	}
	if err := b.recordEscapes(ctx, tx, &esc); err != nil {
		return "", nil, err
	}
	if raw == nil {
		raw = json.RawMessage("null")
	}
	return sigID, raw, nil
}

// ReceiveRunSignal implements [backend.Worker]: the delivery of the wait
// p.StepAttemptID if it has one; else, when the run has a stored signal
// for the name (read first, outside any transaction: a signal sent after
// the wait was created is delivered to it by the send), one transaction
// fenced on the run's lease delivers the oldest to the wait.
func (b *Backend) ReceiveRunSignal(ctx context.Context, p backend.ReceiveRunSignalParams) (json.RawMessage, bool, error) {
	data, delivered, err := b.GetSignalDelivery(ctx, p.StepAttemptID)
	if err != nil || delivered {
		return data, delivered, err
	}
	var pending bool
	if err := b.pool.QueryRow(ctx, b.q.PendingRunSignal, b.namespace, p.WorkflowRunID, p.Signal).Scan(&pending); err != nil {
		return nil, false, fmt.Errorf("receive signal %q of workflow run %s: %w", p.Signal, p.WorkflowRunID, err)
	}
	if !pending {
		return nil, false, nil
	}
	fenced := false
	err = b.inTx(ctx, func(tx pgx.Tx) error {
		data, delivered, fenced = nil, false, false
		var attempts int
		err := tx.QueryRow(ctx, b.q.LockOwnedRun, b.namespace, p.WorkflowRunID, p.WorkerID).Scan(&attempts)
		if errors.Is(err, pgx.ErrNoRows) {
			fenced = true
			return nil
		}
		if err != nil {
			return err
		}
		var had string
		var hadData []byte
		err = tx.QueryRow(ctx, b.q.GetSignalDelivery, b.namespace, p.StepAttemptID).Scan(&had, &hadData)
		if err == nil {
			return nil // a send delivered to the wait meanwhile: read below
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var sigID string
		sigID, data, err = b.deliverOldestRunSignal(ctx, tx, p.WorkflowRunID, p.Signal, p.StepAttemptID)
		delivered = sigID != ""
		return err
	})
	if err == nil && fenced {
		err = b.fenceError(ctx, "receive signal", p.WorkflowRunID, p.WorkerID)
		return nil, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("receive signal %q of workflow run %s: %w", p.Signal, p.WorkflowRunID, err)
	}
	if !delivered {
		// Delivered meanwhile (by a send that found the wait open).
		return b.GetSignalDelivery(ctx, p.StepAttemptID)
	}
	return data, true, nil
}
