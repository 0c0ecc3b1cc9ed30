package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.WorkerRegistry = (*Backend)(nil)

// PutWorker implements [backend.WorkerRegistry]: the deletion of the
// namespace's forgotten workers and the upsert, in one write transaction.
func (b *Backend) PutWorker(ctx context.Context, w backend.WorkerRecord) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("put worker: %w", err)
	}
	var started any
	if !w.StartedAt.IsZero() {
		started = timeArg(w.StartedAt.UTC().Truncate(time.Millisecond))
	}
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		if _, err := tx.ExecContext(ctx, b.q.ForgetWorkers, sql.Named("ns", b.ns), sql.Named("id", w.ID),
			sql.Named("cutoff", timeArg(now.Add(-backend.WorkerForgetAfter)))); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, b.q.PutWorker, sql.Named("ns", b.ns), sql.Named("id", w.ID),
			sql.Named("host", w.Host), sql.Named("pid", w.PID), sql.Named("sdk", w.SDK),
			sql.Named("sdk_version", w.SDKVersion), sql.Named("state", string(w.State)),
			sql.Named("concurrency", w.Concurrency), sql.Named("in_use", w.InUse),
			sql.Named("interval_ms", w.HeartbeatInterval.Milliseconds()),
			sql.Named("workflows", backend.EncodeRegisteredWorkflows(w.Workflows)),
			sql.Named("started_at", started), sql.Named("now", timeArg(now)))
		return err
	})
	if err != nil {
		return fmt.Errorf("put worker %q: %w", w.ID, err)
	}
	return nil
}

// ListWorkers implements [backend.WorkerRegistry], deriving gone by the
// backend's clock.
func (b *Backend) ListWorkers(ctx context.Context) ([]backend.WorkerRecord, error) {
	now := b.now()
	var ws []backend.WorkerRecord
	err := b.read(ctx, func() error {
		ws = []backend.WorkerRecord{}
		rows, err := b.db.QueryContext(ctx, b.q.ListWorkers, sql.Named("ns", b.ns),
			sql.Named("cutoff", timeArg(now.Add(-backend.WorkerForgetAfter))))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var w backend.WorkerRecord
			var state, workflows, started, beat string
			var intervalMS int64
			if err := rows.Scan(&w.NamespaceID, &w.ID, &w.Host, &w.PID, &w.SDK, &w.SDKVersion, &state,
				&w.Concurrency, &w.InUse, &intervalMS, &workflows, &started, &beat); err != nil {
				return err
			}
			w.State, w.HeartbeatInterval = backend.WorkerState(state), time.Duration(intervalMS)*time.Millisecond
			if w.StartedAt, err = backend.ParseTime(started); err != nil {
				return fmt.Errorf("worker %q: started_at %q: %w", w.ID, started, err)
			}
			if w.LastHeartbeatAt, err = backend.ParseTime(beat); err != nil {
				return fmt.Errorf("worker %q: last_heartbeat_at %q: %w", w.ID, beat, err)
			}
			if w.Workflows, err = backend.DecodeRegisteredWorkflows(w.ID, workflows); err != nil {
				return err
			}
			w.State = w.StateAt(now)
			ws = append(ws, w)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	return ws, nil
}

// CountActiveRunsByWorkflow implements [backend.WorkerRegistry].
func (b *Backend) CountActiveRunsByWorkflow(ctx context.Context) ([]backend.WorkflowRunCount, error) {
	var out []backend.WorkflowRunCount
	err := b.read(ctx, func() error {
		out = nil
		rows, err := b.db.QueryContext(ctx, b.q.CountActiveRunsByWorkflow, sql.Named("ns", b.ns))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name, version, status string
			var n int
			if err := rows.Scan(&name, &version, &status, &n); err != nil {
				return err
			}
			out = backend.AddWorkflowRunCount(out, name, version, backend.RunStatus(status), n)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("count active runs by workflow: %w", err)
	}
	return out, nil
}
