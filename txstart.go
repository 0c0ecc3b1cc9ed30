package openworkflow

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// StartTx starts a run of wf inside tx, a transaction of the caller's,
// so that the run exists if and only if tx commits (River's InsertTx):
// write your own rows and start the run that processes them in one
// transaction, and neither exists without the other. Idle workers wake
// when tx commits.
//
// tx is the backend's own kind of transaction, and anything else fails
// with an error wrapping backend.ErrInvalidArgument that names the kind
// wanted (backend.TxStarter):
//
//	// PostgreSQL: a pgx.Tx on the backend's database
//	tx, err := pool.Begin(ctx)
//	h, err := sendInvoice.StartTx(ctx, client, tx, invoice)
//	_, err = tx.Exec(ctx, `UPDATE orders SET invoiced = true WHERE id = $1`, invoice.OrderID)
//	err = tx.Commit(ctx)
//
//	// SQLite: the *sql.Tx of the backend's InTx, which commits it and
//	// then wakes the workers
//	err := sqliteBackend.InTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
//		if _, err := tx.ExecContext(ctx, `UPDATE orders SET invoiced = 1 WHERE id = ?`, id); err != nil {
//			return err
//		}
//		_, err := sendInvoice.StartTx(ctx, client, tx, invoice)
//		return err
//	})
//
// The handle is valid once tx commits; before that, and for ever if tx
// rolls back, the run is not found. opts are those of Start. A backend
// without the capability fails with backend.ErrNotSupported.
//
// A Spec.Singleton applies as in [Workflow.Start]: the singleton's lock is
// then held until tx ends.
func (wf *Workflow[I, O]) StartTx(ctx context.Context, c *Client, tx any, input I, opts ...StartOption) (*Handle[O], error) {
	if s := wf.spec.Singleton; s != nil {
		opts = append([]StartOption{WithSingleton(s.Key, s.Mode)}, opts...)
	}
	h, err := c.StartTx(ctx, tx, wf.spec.Name, wf.spec.Version, input, opts...)
	if h == nil {
		return nil, err
	}
	return &Handle[O]{RunHandle: h}, err
}

// StartTx is [Workflow.StartTx] by workflow name and version ("" for
// unversioned), with input JSON-encoded.
func (c *Client) StartTx(ctx context.Context, tx any, name, version string, input any, opts ...StartOption) (*RunHandle, error) {
	ts, ok := c.b.(backend.TxStarter)
	if !ok {
		return nil, fmt.Errorf("start workflow %q in a transaction: %w: the backend cannot start runs in a transaction of yours", name, backend.ErrNotSupported)
	}
	if err := refuseDebounce(newStartOptions(opts), name, "StartTx"); err != nil {
		return nil, err
	}
	ctx, p, span, err := c.createParams(ctx, name, version, input, opts)
	if err != nil {
		return nil, err
	}
	defer span.End()
	run, err := ts.CreateWorkflowRunTx(ctx, tx, p)
	if err != nil {
		recordError(span, err)
		return nil, fmt.Errorf("start workflow %q in a transaction: %w", name, err)
	}
	span.SetAttributes(runAttributes(run)...)
	h := c.startedHandle(name, run, p.Input)
	if run.SingletonSkipped && newStartOptions(opts).singletonSkipError {
		return h, fmt.Errorf("start workflow %q in a transaction: singleton key %q: run %s is active: %w", name, p.Singleton.Key, run.ID, ErrSingletonSkipped)
	}
	return h, nil
}

// createParams checks a start and makes its create params, under a
// workflow_run.create span the caller ends; ctx is returned with the
// span.
func (c *Client) createParams(ctx context.Context, name, version string, input any, opts []StartOption) (context.Context, backend.CreateWorkflowRunParams, trace.Span, error) {
	if name == "" {
		return ctx, backend.CreateWorkflowRunParams{}, nil, fmt.Errorf("start workflow: %w: empty workflow name", backend.ErrInvalidArgument)
	}
	in, err := encodeValue(input)
	if err != nil {
		return ctx, backend.CreateWorkflowRunParams{}, nil, fmt.Errorf("start workflow %q: input: %w", name, err)
	}
	ctx, span := c.tr.start(ctx, telemetry.SpanWorkflowRunCreate, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(telemetry.AttrWorkflowName.String(name)))
	p := backend.CreateWorkflowRunParams{WorkflowName: name, Version: versionPtr(version), Input: in, Context: c.tr.inject(ctx)}
	newStartOptions(opts).apply(&p)
	return ctx, p, span, nil
}
