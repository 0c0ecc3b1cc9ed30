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

// SignalRun implements [backend.Client] in one BEGIN IMMEDIATE
// transaction (sql/signals.sql): refuse a missing run, return an earlier
// send with the same key (even once the run ended), refuse a terminal
// run, store the signal, and deliver the run's oldest stored signal to its
// open wait for that name, if any, waking the run and publishing
// EventWorkAvailable.
func (b *Backend) SignalRun(ctx context.Context, p backend.SignalRunParams) (*backend.RunSignal, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("signal %q to workflow run %s: %w", p.Signal, p.WorkflowRunID, err)
	}
	data, err := jsonArg("data", p.Data)
	if err != nil {
		return nil, fmt.Errorf("signal %q to workflow run %s: %w", p.Signal, p.WorkflowRunID, err)
	}
	var out *backend.RunSignal
	err = b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		out = nil
		run, err := b.getRun(ctx, tx, p.WorkflowRunID)
		if err != nil {
			return err
		}
		if p.IdempotencyKey != nil {
			var prev string
			var received bool
			err := tx.QueryRowContext(ctx, b.q.RunSignalByKey, sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID),
				sql.Named("signal", p.Signal), sql.Named("idempotency_key", *p.IdempotencyKey)).Scan(&prev, &received)
			if err == nil {
				out = &backend.RunSignal{ID: prev, Delivered: received, Duplicate: true}
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		// After the key: a repeat of a send that was taken answers it even
		// once the run has ended (a client's retry must stay safe).
		if s := run.Status.Normalize(); s.Terminal() {
			return fmt.Errorf("the run is %s: %w", s, backend.ErrRunTerminal)
		}
		sigID := id.New(id.PrefixSignal)
		if _, err := tx.ExecContext(ctx, b.q.InsertRunSignal, sql.Named("ns", b.ns), sql.Named("id", sigID),
			sql.Named("run_id", p.WorkflowRunID), sql.Named("signal", p.Signal), sql.Named("data", data),
			sql.Named("idempotency_key", nullStringArg(p.IdempotencyKey)), sql.Named("now", timeArg(now))); err != nil {
			return err
		}
		out = &backend.RunSignal{ID: sigID}
		var stepID string
		err = tx.QueryRowContext(ctx, b.q.OpenSignalWait, sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID),
			sql.Named("signal", p.Signal)).Scan(&stepID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // stored until the run waits
		}
		if err != nil {
			return err
		}
		got, _, err := b.deliverOldestRunSignal(ctx, tx, now, p.WorkflowRunID, p.Signal, stepID)
		if err != nil {
			return err
		}
		out.Delivered = got == sigID
		woken, err := queryStrings(ctx, tx, b.q.WakeRun,
			sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID), sql.Named("now", timeArg(now)))
		if err != nil {
			return fmt.Errorf("wake workflow run %s: %w", p.WorkflowRunID, err)
		}
		if len(woken) > 0 {
			ev.workAvailable(b.ns)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("signal %q to workflow run %s: %w", p.Signal, p.WorkflowRunID, err)
	}
	return out, nil
}

// deliverOldestRunSignal delivers run's oldest stored signal no wait has
// received to the signal-wait attempt stepID, and returns its id and data
// ("" when none is stored).
func (b *Backend) deliverOldestRunSignal(ctx context.Context, tx *txn, now time.Time, runID, signal, stepID string) (string, json.RawMessage, error) {
	var sigID string
	var data sql.NullString
	err := tx.QueryRowContext(ctx, b.q.OldestRunSignal, sql.Named("ns", b.ns), sql.Named("run_id", runID),
		sql.Named("signal", signal)).Scan(&sigID, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	res, err := tx.ExecContext(ctx, b.q.ReceiveRunSignal, sql.Named("ns", b.ns), sql.Named("id", sigID),
		sql.Named("step_id", stepID), sql.Named("now", timeArg(now)))
	if err != nil {
		return "", nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return "", nil, fmt.Errorf("deliver signal %s to step attempt %s: received already (%v)", sigID, stepID, err)
	}
	var stored any
	if data.Valid {
		stored = data.String
	}
	if _, err := tx.ExecContext(ctx, b.q.InsertRunSignalDelivery, sql.Named("ns", b.ns), sql.Named("id", sigID),
		sql.Named("signal", signal), sql.Named("data", stored), sql.Named("run_id", runID),
		sql.Named("step_id", stepID), sql.Named("now", timeArg(now))); err != nil {
		return "", nil, err
	}
	raw := json.RawMessage("null")
	if data.Valid {
		raw = json.RawMessage(data.String)
	}
	return sigID, raw, nil
}

// ReceiveRunSignal implements [backend.Worker]: the delivery of the wait
// p.StepAttemptID if it has one; else, when the run has a stored signal
// for the name (read first: a signal sent after the wait was created is
// delivered to it by the send), one write transaction fenced on the run's
// lease delivers the oldest to the wait.
func (b *Backend) ReceiveRunSignal(ctx context.Context, p backend.ReceiveRunSignalParams) (json.RawMessage, bool, error) {
	data, delivered, err := b.GetSignalDelivery(ctx, p.StepAttemptID)
	if err != nil || delivered {
		return data, delivered, err
	}
	var pending bool
	err = b.read(ctx, func() error {
		return b.reader().QueryRowContext(ctx, b.q.PendingRunSignal, sql.Named("ns", b.ns),
			sql.Named("run_id", p.WorkflowRunID), sql.Named("signal", p.Signal)).Scan(&pending)
	})
	if err != nil {
		return nil, false, fmt.Errorf("receive signal %q of workflow run %s: %w", p.Signal, p.WorkflowRunID, err)
	}
	if !pending {
		return nil, false, nil
	}
	err = b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		data, delivered = nil, false
		var attempts int64
		err := tx.QueryRowContext(ctx, b.q.OwnedRunClaim, sql.Named("ns", b.ns),
			sql.Named("run_id", p.WorkflowRunID), sql.Named("worker_id", p.WorkerID)).Scan(&attempts)
		if errors.Is(err, sql.ErrNoRows) {
			return missingRunNotOwned(b.fenceError(ctx, tx, p.WorkflowRunID))
		}
		if err != nil {
			return err
		}
		var had sql.NullString
		err = tx.QueryRowContext(ctx, b.q.GetSignalDelivery, sql.Named("ns", b.ns), sql.Named("step_id", p.StepAttemptID)).Scan(&had)
		if err == nil {
			return nil // a send delivered to the wait meanwhile: read below
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var sigID string
		sigID, data, err = b.deliverOldestRunSignal(ctx, tx, now, p.WorkflowRunID, p.Signal, p.StepAttemptID)
		delivered = sigID != ""
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("receive signal %q of workflow run %s: %w", p.Signal, p.WorkflowRunID, err)
	}
	if !delivered {
		return b.GetSignalDelivery(ctx, p.StepAttemptID)
	}
	return data, true, nil
}
