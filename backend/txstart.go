package backend

import "context"

// TxStarter is an optional capability of a [Backend]: creating a run
// inside a transaction of the caller's (River's InsertTx), so that the run
// exists if and only if that transaction commits — an order and the run
// that fulfils it, say, written together or not at all. Both built-in
// backends implement it; package openworkflow's Client.StartTx and
// Workflow.StartTx call it.
//
// Each backend takes its own kind of transaction and refuses any other
// with an error wrapping [ErrInvalidArgument] that names the kind it
// wants:
//
//   - PostgreSQL: a pgx.Tx (pgx v5) on the backend's database, from any
//     pool or connection. The run's announcement (NOTIFY) is part of the
//     transaction, so idle workers wake when it commits, and never for a
//     rollback.
//   - SQLite: the *sql.Tx that the backend's InTx gives its function. The
//     backend commits that transaction itself and wakes the workers of
//     its process after the commit; a transaction begun elsewhere cannot
//     say when it commits, so it is refused rather than left to the
//     workers' polling.
//
// A keyed create (idempotency key) holds the key's lock until the
// caller's transaction ends, so a concurrent keyed create of the same key
// waits for it, and then finds the run if it committed.
type TxStarter interface {
	// CreateWorkflowRunTx is [Client.CreateWorkflowRun] executed in tx.
	// Invalid params fail with [ErrInvalidArgument] before tx is used. On
	// PostgreSQL an error of the database leaves tx aborted, as any failed
	// statement does: roll it back.
	CreateWorkflowRunTx(ctx context.Context, tx any, p CreateWorkflowRunParams) (*WorkflowRun, error)
}
