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

var _ backend.BatchStore = (*Backend)(nil)

// AppendBatchItem implements [backend.BatchStore] in one BEGIN IMMEDIATE
// transaction: the open batch (created if there is none), an early flush
// when the item would take it over its max bytes, the item and its count,
// and the flush when the batch is full.
func (b *Backend) AppendBatchItem(ctx context.Context, p backend.AppendBatchItemParams) (*backend.BatchAppend, error) {
	p, err := p.Validate()
	if err != nil {
		return nil, fmt.Errorf("append batch item: %w", err)
	}
	var out *backend.BatchAppend
	err = b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		var err error
		out, err = b.appendBatchItem(ctx, tx, now, ev, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("append batch item to %q key %q: %w", p.WorkflowName, p.Key, err)
	}
	return out, nil
}

// AppendBatchItemTx implements [backend.BatchStore] in the *sql.Tx of an
// [Backend.InTx] function, as CreateWorkflowRunTx: the backend commits
// it, then wakes the workers for a flushed run.
func (b *Backend) AppendBatchItemTx(ctx context.Context, tx any, p backend.AppendBatchItemParams) (*backend.BatchAppend, error) {
	stx, ok := tx.(*sql.Tx)
	var ev *events
	if ok && stx != nil {
		ev = b.file.userTxs.lookup(stx)
	}
	if ev == nil {
		return nil, fmt.Errorf("append batch item in a transaction: %w: the SQLite backend needs the *sql.Tx its InTx gives, got %T",
			backend.ErrInvalidArgument, tx)
	}
	p, err := p.Validate()
	if err != nil {
		return nil, fmt.Errorf("append batch item: %w", err)
	}
	if err := b.file.failed(); err != nil {
		return nil, err
	}
	var created events
	out, err := b.appendBatchItem(ctx, &txn{Tx: stx, stmts: b.stmts}, b.now(), &created, p)
	if err != nil {
		if IsDamaged(err) {
			err = b.file.latch(b.path, err)
		}
		return nil, fmt.Errorf("append batch item to %q key %q in a transaction: %w", p.WorkflowName, p.Key, err)
	}
	b.file.userTxs.record(ev, created)
	return out, nil
}

type openBatch struct {
	id                string
	version           *string
	count             int
	bytes             int64
	maxSize, maxBytes int64
}

func (b *Backend) openBatch(ctx context.Context, tx *txn, now time.Time, p backend.AppendBatchItemParams) (openBatch, error) {
	var o openBatch
	err := tx.QueryRowContext(ctx, b.q.BatchOpen,
		sql.Named("ns", b.ns), sql.Named("workflow_name", p.WorkflowName), sql.Named("key", p.Key),
		sql.Named("id", id.New("batch")), sql.Named("version", nullStringArg(p.Version)),
		sql.Named("max_size", p.Options.MaxSize), sql.Named("max_bytes", p.Options.MaxBytes),
		sql.Named("now", timeArg(now)), sql.Named("flush_at", timeArg(now.Add(p.Options.Timeout)))).
		Scan(&o.id, &o.version, &o.count, &o.bytes, &o.maxSize, &o.maxBytes)
	return o, err
}

func (b *Backend) appendBatchItem(ctx context.Context, tx *txn, now time.Time, ev *events, p backend.AppendBatchItemParams) (*backend.BatchAppend, error) {
	out := &backend.BatchAppend{}
	o, err := b.openBatch(ctx, tx, now, p)
	if err != nil {
		return nil, err
	}
	if o.count > 0 && o.bytes+int64(len(p.Item)) > o.maxBytes {
		run, err := b.flushBatch(ctx, tx, now, ev, p.WorkflowName, o.id, o.version)
		if err != nil {
			return nil, err
		}
		out.Flushed = append(out.Flushed, run)
		if o, err = b.openBatch(ctx, tx, now, p); err != nil {
			return nil, err
		}
	}
	if err := tx.QueryRowContext(ctx, b.q.BatchAddItem, sql.Named("ns", b.ns), sql.Named("id", o.id),
		sql.Named("payload", string(p.Item)), sql.Named("now", timeArg(now))).Scan(&out.Seq); err != nil {
		return nil, err
	}
	if err := tx.QueryRowContext(ctx, b.q.BatchCountItem, sql.Named("ns", b.ns), sql.Named("id", o.id),
		sql.Named("bytes", len(p.Item))).Scan(&out.Count, &out.Bytes); err != nil {
		return nil, err
	}
	if int64(out.Count) >= o.maxSize || out.Bytes >= o.maxBytes {
		run, err := b.flushBatch(ctx, tx, now, ev, p.WorkflowName, o.id, o.version)
		if err != nil {
			return nil, err
		}
		out.Flushed = append(out.Flushed, run)
		out.Count, out.Bytes = 0, 0
	}
	return out, nil
}

// flushBatch creates the run of batch batchID with its items as input and
// deletes the batch and its items, in tx.
func (b *Backend) flushBatch(ctx context.Context, tx *txn, now time.Time, ev *events, workflow, batchID string, version *string) (*backend.WorkflowRun, error) {
	rows, err := tx.QueryContext(ctx, b.q.BatchItems, sql.Named("ns", b.ns), sql.Named("id", batchID))
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return nil, err
		}
		items = append(items, json.RawMessage(s))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	p := backend.CreateWorkflowRunParams{WorkflowName: workflow, Version: version, Input: backend.BatchInput(items)}
	args, err := newCreateArgs(&p)
	if err != nil {
		return nil, fmt.Errorf("flush batch %s: %w", batchID, err)
	}
	run, err := b.createRun(ctx, tx, now, ev, &p, &args)
	if err != nil {
		return nil, fmt.Errorf("flush batch %s: %w", batchID, err)
	}
	for _, q := range []string{b.q.BatchDeleteItems, b.q.BatchClose} {
		if _, err := tx.ExecContext(ctx, q, sql.Named("ns", b.ns), sql.Named("id", batchID)); err != nil {
			return nil, fmt.Errorf("flush batch %s: %w", batchID, err)
		}
	}
	return run, nil
}

// FlushDueBatches implements [backend.BatchStore]: each due batch is
// flushed in a BEGIN IMMEDIATE transaction of its own, which finds it
// due again under the write lock (another process may have flushed it).
func (b *Backend) FlushDueBatches(ctx context.Context, limit int) (int, time.Time, bool, error) {
	if limit <= 0 {
		limit = 100
	}
	flushed := 0
	for flushed < limit {
		done := false
		err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
			done = false
			var workflow, key, batchID string
			var version *string
			err := tx.QueryRowContext(ctx, b.q.BatchDue, sql.Named("ns", b.ns), sql.Named("now", timeArg(now))).
				Scan(&workflow, &key, &batchID, &version)
			if errors.Is(err, sql.ErrNoRows) {
				done = true
				return nil
			}
			if err != nil {
				return err
			}
			_, err = b.flushBatch(ctx, tx, now, ev, workflow, batchID, version)
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
	var next sql.NullString
	err := b.read(ctx, func() error {
		return b.db.QueryRowContext(ctx, b.q.BatchNextDue, sql.Named("ns", b.ns)).Scan(&next)
	})
	if err != nil {
		return flushed, time.Time{}, false, fmt.Errorf("next due batch: %w", err)
	}
	if !next.Valid {
		return flushed, time.Time{}, false, nil
	}
	at, err := backend.ParseTime(next.String)
	if err != nil {
		return flushed, time.Time{}, false, fmt.Errorf("next due batch: %w", err)
	}
	return flushed, at, true, nil
}

// ListOpenBatches implements [backend.BatchStore].
func (b *Backend) ListOpenBatches(ctx context.Context, limit int) ([]backend.OpenBatch, error) {
	if limit <= 0 {
		limit = backend.DefaultPageSize
	}
	var out []backend.OpenBatch
	err := b.read(ctx, func() error {
		out = nil
		rows, err := b.db.QueryContext(ctx, b.q.ListBatches, sql.Named("ns", b.ns), sql.Named("limit", limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var o backend.OpenBatch
			var first, flush string
			if err := rows.Scan(&o.WorkflowName, &o.Version, &o.Key, &o.Count, &o.Bytes, &o.MaxSize, &o.MaxBytes, &first, &flush); err != nil {
				return err
			}
			if o.FirstAt, err = backend.ParseTime(first); err != nil {
				return err
			}
			if o.FlushAt, err = backend.ParseTime(flush); err != nil {
				return err
			}
			out = append(out, o)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list open batches: %w", err)
	}
	return out, nil
}
