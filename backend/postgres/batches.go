package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

var _ backend.BatchStore = (*Backend)(nil)

// AppendBatchItem implements [backend.BatchStore] in one READ COMMITTED
// transaction: batch_open (which locks the open batch, creating it if
// there is none), an early flush when the item would take the batch over
// its max bytes, batch_add_item, and the flush when the batch is full.
func (b *Backend) AppendBatchItem(ctx context.Context, p backend.AppendBatchItemParams) (*backend.BatchAppend, error) {
	p, err := p.Validate()
	if err != nil {
		return nil, fmt.Errorf("append batch item: %w", err)
	}
	var out *backend.BatchAppend
	err = b.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = b.appendInTx(ctx, tx, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("append batch item to %q key %q: %w", p.WorkflowName, p.Key, err)
	}
	return out, nil
}

// AppendBatchItemTx implements [backend.BatchStore] on the caller's
// pgx.Tx; anything else fails with [backend.ErrInvalidArgument]. The
// batch's row stays locked until that transaction ends, and a flush's
// NOTIFY is delivered when it commits.
func (b *Backend) AppendBatchItemTx(ctx context.Context, tx any, p backend.AppendBatchItemParams) (*backend.BatchAppend, error) {
	ptx, ok := tx.(pgx.Tx)
	if !ok || ptx == nil {
		return nil, fmt.Errorf("append batch item in a transaction: %w: the PostgreSQL backend needs a pgx.Tx, got %T", backend.ErrInvalidArgument, tx)
	}
	p, err := p.Validate()
	if err != nil {
		return nil, fmt.Errorf("append batch item: %w", err)
	}
	if err := b.checkSameDatabase(ctx, ptx); err != nil {
		return nil, fmt.Errorf("append batch item in a transaction: %w", err)
	}
	out, err := b.appendInTx(ctx, ptx, p)
	if err != nil {
		return nil, fmt.Errorf("append batch item to %q key %q in a transaction: %w", p.WorkflowName, p.Key, err)
	}
	return out, nil
}

type openBatch struct {
	id                string
	version           *string
	count             int
	bytes             int64
	maxSize, maxBytes int64
}

func (b *Backend) lockOpenBatch(ctx context.Context, tx pgx.Tx, p backend.AppendBatchItemParams) (openBatch, error) {
	var o openBatch
	err := tx.QueryRow(ctx, b.q.BatchOpen, b.namespace, p.WorkflowName, p.Key, id.New("batch"), p.Version,
		p.Options.MaxSize, p.Options.MaxBytes, durationMs(p.Options.Timeout), b.at()).
		Scan(&o.id, &o.version, &o.count, &o.bytes, &o.maxSize, &o.maxBytes)
	return o, err
}

func (b *Backend) appendInTx(ctx context.Context, tx pgx.Tx, p backend.AppendBatchItemParams) (*backend.BatchAppend, error) {
	out := &backend.BatchAppend{}
	o, err := b.lockOpenBatch(ctx, tx, p)
	if err != nil {
		return nil, err
	}
	if o.count > 0 && o.bytes+int64(len(p.Item)) > o.maxBytes {
		run, err := b.flushBatch(ctx, tx, p.WorkflowName, o.id, o.version)
		if err != nil {
			return nil, err
		}
		out.Flushed = append(out.Flushed, run)
		if o, err = b.lockOpenBatch(ctx, tx, p); err != nil {
			return nil, err
		}
	}
	if err := tx.QueryRow(ctx, b.q.BatchAddItem, b.namespace, o.id, string(p.Item), b.at()).
		Scan(&out.Seq, &out.Count, &out.Bytes); err != nil {
		return nil, err
	}
	if int64(out.Count) >= o.maxSize || out.Bytes >= o.maxBytes {
		run, err := b.flushBatch(ctx, tx, p.WorkflowName, o.id, o.version)
		if err != nil {
			return nil, err
		}
		out.Flushed = append(out.Flushed, run)
		out.Count, out.Bytes = 0, 0
	}
	return out, nil
}

// flushBatch creates the run of batch batchID (locked by tx) with its
// items as input, and deletes the batch and its items, all in tx.
func (b *Backend) flushBatch(ctx context.Context, tx pgx.Tx, workflow, batchID string, version *string) (*backend.WorkflowRun, error) {
	rows, err := tx.Query(ctx, b.q.BatchItems, b.namespace, batchID)
	if err != nil {
		return nil, err
	}
	items, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (json.RawMessage, error) {
		var s string
		err := row.Scan(&s)
		return json.RawMessage(s), err
	})
	if err != nil {
		return nil, err
	}
	p := backend.CreateWorkflowRunParams{WorkflowName: workflow, Version: version, Input: backend.BatchInput(items)}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("flush batch %s: %w", batchID, err)
	}
	runID := id.New(id.PrefixRun)
	var esc escapes
	run, _, err := b.createInTx(ctx, tx, p, &esc, b.insertRunArgs(runID, p, &esc))
	if err != nil {
		return nil, fmt.Errorf("flush batch %s: %w", batchID, err)
	}
	if _, err := tx.Exec(ctx, b.q.BatchClose, b.namespace, batchID); err != nil {
		return nil, fmt.Errorf("flush batch %s: %w", batchID, err)
	}
	run.Input = p.Input
	return run, nil
}

// FlushDueBatches implements [backend.BatchStore]: each due batch is
// locked with FOR UPDATE SKIP LOCKED and flushed in a transaction of its
// own, so workers flushing at once share the due batches and never flush
// one twice.
func (b *Backend) FlushDueBatches(ctx context.Context, limit int) (int, time.Time, bool, error) {
	if limit <= 0 {
		limit = 100
	}
	flushed := 0
	for flushed < limit {
		done := false
		err := b.inTx(ctx, func(tx pgx.Tx) error {
			var workflow, key, batchID string
			var version *string
			err := tx.QueryRow(ctx, b.q.BatchLockDue, b.namespace, b.at()).Scan(&workflow, &key, &batchID, &version)
			if errors.Is(err, pgx.ErrNoRows) {
				done = true
				return nil
			}
			if err != nil {
				return err
			}
			_, err = b.flushBatch(ctx, tx, workflow, batchID, version)
			return err
		})
		if err != nil {
			return flushed, time.Time{}, false, fmt.Errorf("flush due batches: %w", err)
		}
		if done {
			break
		}
		flushed++
	}
	var next *time.Time
	var dbNow time.Time
	if err := b.pool.QueryRow(ctx, b.q.BatchNextDue, b.namespace, b.at()).Scan(&next, &dbNow); err != nil {
		return flushed, time.Time{}, false, fmt.Errorf("next due batch: %w", err)
	}
	if next == nil {
		return flushed, time.Time{}, false, nil
	}
	return flushed, b.now().Add(next.Sub(dbNow)).UTC(), true, nil
}

// ListOpenBatches implements [backend.BatchStore].
func (b *Backend) ListOpenBatches(ctx context.Context, limit int) ([]backend.OpenBatch, error) {
	if limit <= 0 {
		limit = backend.DefaultPageSize
	}
	rows, err := b.pool.Query(ctx, b.q.ListBatches, b.namespace, limit)
	if err != nil {
		return nil, fmt.Errorf("list open batches: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (backend.OpenBatch, error) {
		var o backend.OpenBatch
		err := row.Scan(&o.WorkflowName, &o.Version, &o.Key, &o.Count, &o.Bytes, &o.MaxSize, &o.MaxBytes, &o.FirstAt, &o.FlushAt)
		o.FirstAt, o.FlushAt = o.FirstAt.UTC(), o.FlushAt.UTC()
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("list open batches: %w", err)
	}
	return out, nil
}
