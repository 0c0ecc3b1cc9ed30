package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// SendSignal implements [backend.Backend] in one READ COMMITTED
// transaction:
//  1. with a key, take an advisory lock on (namespace, signal, key) and
//     return the runs of an earlier send with that key, if any;
//  2. lock the running signal-wait attempts on the signal and their runs;
//  3. insert one delivery per wait (ON CONFLICT DO NOTHING: one per wait at
//     most) and wake, announcing, the runs that are parked.
//
// With no waiters nothing is written. The result lists each run delivered
// to once, in id order.
func (b *Backend) SendSignal(ctx context.Context, p backend.SendSignalParams) ([]string, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("send signal %q: %w", p.Signal, err)
	}
	var runIDs []string
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		runIDs = nil
		if p.IdempotencyKey != nil {
			key := `{"signalNamespaceId":` + jsString(b.namespace) + `,"signal":` + jsString(p.Signal) +
				`,"idempotencyKey":` + jsString(*p.IdempotencyKey) + `}`
			if _, err := tx.Exec(ctx, b.q.LockSignalKey, key); err != nil {
				return err
			}
			ids, err := collectStrings(tx.Query(ctx, b.q.SignalDeliveriesByKey, b.namespace, p.Signal, *p.IdempotencyKey))
			if err != nil || len(ids) > 0 {
				runIDs = ids
				return err
			}
		}
		rows, err := tx.Query(ctx, b.q.LockSignalWaiters, b.namespace, p.Signal)
		if err != nil {
			return err
		}
		var sigIDs, waitRuns, waitSteps []string
		var stepID, runID string
		if _, err := pgx.ForEachRow(rows, []any{&stepID, &runID}, func() error {
			sigIDs = append(sigIDs, id.New(id.PrefixSignal))
			waitRuns = append(waitRuns, runID)
			waitSteps = append(waitSteps, stepID)
			return nil
		}); err != nil {
			return err
		}
		if len(waitSteps) == 0 {
			return nil // signals are not buffered
		}
		var esc escapes
		data := esc.json(b.namespace, tableSignals, sigIDs[0], "data", p.Data)
		for _, id := range sigIDs[1:] {
			esc.json(b.namespace, tableSignals, id, "data", p.Data)
		}
		runIDs, err = collectStrings(tx.Query(ctx, b.q.DeliverSignal, b.namespace, p.Signal, data,
			sigIDs, waitRuns, waitSteps, p.IdempotencyKey, b.at()))
		if err != nil {
			return err
		}
		return b.recordEscapes(ctx, tx, &esc)
	})
	if err != nil {
		return nil, fmt.Errorf("send signal %q: %w", p.Signal, err)
	}
	if runIDs == nil {
		runIDs = []string{}
	}
	return runIDs, nil
}

// GetSignalDelivery implements [backend.Backend]: delivered is false when no
// delivery row exists; NULL data reads as JSON null.
func (b *Backend) GetSignalDelivery(ctx context.Context, stepAttemptID string) (json.RawMessage, bool, error) {
	if !backend.ValidText(stepAttemptID) {
		return nil, false, nil
	}
	var sigID string
	var data json.RawMessage
	err := b.pool.QueryRow(ctx, b.q.GetSignalDelivery, b.namespace, stepAttemptID).Scan(&sigID, (*[]byte)(&data))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err == nil {
		var cs candidates
		cs.add(b.namespace, tableSignals, sigID, "data", &data)
		err = b.decode(ctx, cs)
	}
	if err != nil {
		return nil, false, fmt.Errorf("get signal delivery of step attempt %s: %w", stepAttemptID, err)
	}
	if data == nil {
		return json.RawMessage("null"), true, nil
	}
	return data, true, nil
}

// collectStrings reads a one-column text result.
func collectStrings(rows pgx.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// jsString is writeJSString into a new string.
func jsString(s string) string {
	var sb strings.Builder
	writeJSString(&sb, s)
	return sb.String()
}
