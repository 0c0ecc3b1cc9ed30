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

// SendSignal delivers p.Data to every running signal-wait attempt on
// p.Signal (at most one delivery per wait; with no waiter nothing is
// stored), wakes those of the runs that are parked, publishing
// EventWorkAvailable, and returns the ids of the runs delivered to (never
// nil). With p.IdempotencyKey, a send repeating an earlier delivered one
// returns that send's run ids and delivers nothing. All of it is one
// BEGIN IMMEDIATE transaction. An empty signal name or invalid JSON fails
// with [backend.ErrInvalidArgument].
func (b *Backend) SendSignal(ctx context.Context, p backend.SendSignalParams) ([]string, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("send signal %q: %w", p.Signal, err)
	}
	data, err := jsonArg("data", p.Data)
	if err != nil {
		return nil, fmt.Errorf("send signal %q: %w", p.Signal, err)
	}
	var runIDs []string
	err = b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		runIDs = []string{}
		if p.IdempotencyKey != nil {
			prev, err := queryStrings(ctx, tx, b.q.SignalDeliveriesByKey,
				sql.Named("ns", b.ns),
				sql.Named("signal", p.Signal),
				sql.Named("idempotency_key", *p.IdempotencyKey))
			if err != nil {
				return err
			}
			if len(prev) > 0 {
				runIDs = prev
				return nil
			}
		}
		waiters, err := b.signalWaiters(ctx, tx, p.Signal)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, w := range waiters {
			res, err := tx.ExecContext(ctx, b.q.InsertSignalDelivery,
				sql.Named("ns", b.ns),
				sql.Named("id", id.New(id.PrefixSignal)),
				sql.Named("signal", p.Signal),
				sql.Named("data", data),
				sql.Named("idempotency_key", nullStringArg(p.IdempotencyKey)),
				sql.Named("run_id", w.runID),
				sql.Named("step_id", w.stepID),
				sql.Named("now", timeArg(now)))
			if err != nil {
				return fmt.Errorf("deliver to step attempt %s: %w", w.stepID, err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n > 0 && !seen[w.runID] {
				seen[w.runID] = true
				runIDs = append(runIDs, w.runID)
			}
		}
		for _, runID := range runIDs {
			woken, err := queryStrings(ctx, tx, b.q.WakeRun,
				sql.Named("ns", b.ns), sql.Named("run_id", runID), sql.Named("now", timeArg(now)))
			if err != nil {
				return fmt.Errorf("wake workflow run %s: %w", runID, err)
			}
			if len(woken) > 0 {
				ev.workAvailable(b.ns)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("send signal %q: %w", p.Signal, err)
	}
	return runIDs, nil
}

// signalWaiter is a running signal-wait attempt.
type signalWaiter struct{ stepID, runID string }

// signalWaiters lists the running signal-wait attempts on signal.
func (b *Backend) signalWaiters(ctx context.Context, tx *txn, signal string) ([]signalWaiter, error) {
	rows, err := tx.QueryContext(ctx, b.q.SignalWaiters, sql.Named("ns", b.ns), sql.Named("signal", signal))
	if err != nil {
		return nil, fmt.Errorf("find waiters: %w", err)
	}
	defer rows.Close()
	var ws []signalWaiter
	for rows.Next() {
		var w signalWaiter
		if err := rows.Scan(&w.stepID, &w.runID); err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, rows.Err()
}

// queryStrings returns the first column of every row of a query.
func queryStrings(ctx context.Context, tx *txn, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// GetSignalDelivery returns the data delivered to the signal-wait attempt
// stepAttemptID: delivered is false (and data nil) when nothing was
// delivered, and data is JSON null when null or nothing was sent.
func (b *Backend) GetSignalDelivery(ctx context.Context, stepAttemptID string) (json.RawMessage, bool, error) {
	var data sql.NullString
	delivered := false
	err := b.read(ctx, func() error {
		err := b.reader().QueryRowContext(ctx, b.q.GetSignalDelivery,
			sql.Named("ns", b.ns), sql.Named("step_id", stepAttemptID)).Scan(&data)
		if errors.Is(err, sql.ErrNoRows) {
			delivered = false
			return nil
		}
		delivered = err == nil
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("get signal delivery of step attempt %s: %w", stepAttemptID, err)
	}
	if !delivered {
		return nil, false, nil
	}
	if !data.Valid {
		return json.RawMessage("null"), true, nil
	}
	return json.RawMessage(data.String), true, nil
}
