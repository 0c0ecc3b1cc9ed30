package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.WorkerRegistry = (*Backend)(nil)

// PutWorker implements [backend.WorkerRegistry] with one statement: the
// upsert, and the deletion of the namespace's forgotten workers.
func (b *Backend) PutWorker(ctx context.Context, w backend.WorkerRecord) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("put worker: %w", err)
	}
	var started *time.Time
	if !w.StartedAt.IsZero() {
		t := ms(w.StartedAt)
		started = &t
	}
	_, err := b.pool.Exec(ctx, b.q.PutWorker, b.namespace, w.ID, w.Host, w.PID, w.SDK, w.SDKVersion,
		string(w.State), w.Concurrency, w.InUse, w.HeartbeatInterval.Milliseconds(),
		backend.EncodeRegisteredWorkflows(w.Workflows), started, backend.WorkerForgetAfter.Milliseconds(), b.at())
	if err != nil {
		return fmt.Errorf("put worker %q: %w", w.ID, err)
	}
	return nil
}

// ListWorkers implements [backend.WorkerRegistry], deriving gone by the
// database's clock (or the injected one).
func (b *Backend) ListWorkers(ctx context.Context) ([]backend.WorkerRecord, error) {
	rows, err := b.pool.Query(ctx, b.q.ListWorkers, b.namespace, backend.WorkerForgetAfter.Milliseconds(), b.at())
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	ws, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (backend.WorkerRecord, error) {
		var w backend.WorkerRecord
		var state, workflows string
		var intervalMS int64
		var now time.Time
		if err := row.Scan(&w.NamespaceID, &w.ID, &w.Host, &w.PID, &w.SDK, &w.SDKVersion, &state,
			&w.Concurrency, &w.InUse, &intervalMS, &workflows, &w.StartedAt, &w.LastHeartbeatAt, &now); err != nil {
			return w, err
		}
		w.State, w.HeartbeatInterval = backend.WorkerState(state), time.Duration(intervalMS)*time.Millisecond
		w.StartedAt, w.LastHeartbeatAt = w.StartedAt.UTC(), w.LastHeartbeatAt.UTC()
		w.State = w.StateAt(now)
		var err error
		w.Workflows, err = backend.DecodeRegisteredWorkflows(w.ID, workflows)
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	if ws == nil {
		ws = []backend.WorkerRecord{}
	}
	return ws, nil
}

// CountActiveRunsByWorkflow implements [backend.WorkerRegistry].
func (b *Backend) CountActiveRunsByWorkflow(ctx context.Context) ([]backend.WorkflowRunCount, error) {
	rows, err := b.pool.Query(ctx, b.q.CountActiveRunsByWorkflow, b.namespace)
	if err != nil {
		return nil, fmt.Errorf("count active runs by workflow: %w", err)
	}
	var out []backend.WorkflowRunCount
	for rows.Next() {
		var name, version, status string
		var n int
		if err := rows.Scan(&name, &version, &status, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("count active runs by workflow: %w", err)
		}
		out = backend.AddWorkflowRunCount(out, name, version, backend.RunStatus(status), n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count active runs by workflow: %w", err)
	}
	return out, nil
}
