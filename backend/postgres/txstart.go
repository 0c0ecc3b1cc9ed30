package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

var _ backend.TxStarter = (*Backend)(nil)

// CreateWorkflowRunTx implements [backend.TxStarter]: CreateWorkflowRun's
// statements (the idempotency key's advisory lock, the lookup, insert_run
// and the record of escaped values) on the caller's pgx.Tx. insert_run's
// NOTIFY is queued in that transaction: PostgreSQL delivers it to the
// listening workers when the transaction commits, and drops it when it
// rolls back. tx must be a pgx.Tx; anything else fails with
// [backend.ErrInvalidArgument].
func (b *Backend) CreateWorkflowRunTx(ctx context.Context, tx any, p backend.CreateWorkflowRunParams) (*backend.WorkflowRun, error) {
	ptx, ok := tx.(pgx.Tx)
	if !ok || ptx == nil {
		return nil, fmt.Errorf("create workflow run in a transaction: %w: the PostgreSQL backend needs a pgx.Tx (from pool.Begin or conn.Begin), got %T", backend.ErrInvalidArgument, tx)
	}
	if err := validateCreate(p); err != nil {
		return nil, fmt.Errorf("create workflow run: %w", err)
	}
	if err := b.checkSameDatabase(ctx, ptx); err != nil {
		return nil, fmt.Errorf("create workflow run %q in a transaction: %w", p.WorkflowName, err)
	}
	runID := id.New(id.PrefixRun)
	var esc escapes
	args := b.insertRunArgs(runID, p, &esc)
	run, existed, err := b.createInTx(ctx, ptx, p, &esc, args)
	if err != nil {
		return nil, fmt.Errorf("create workflow run %q in a transaction: %w", p.WorkflowName, missingParent([]backend.CreateWorkflowRunParams{p}, err))
	}
	if existed {
		// Committed by another transaction: its escaped values are recorded.
		if err := b.decodeRuns(ctx, run); err != nil {
			return nil, fmt.Errorf("create workflow run %q in a transaction: %w", p.WorkflowName, err)
		}
		return run, nil
	}
	if !esc.empty() {
		// The record of the escaped values is not committed yet, so the
		// run cannot be decoded through it: give back the values as given.
		run.Context, run.Input = p.Context, p.Input
		if len(p.Config) > 0 {
			run.Config = p.Config
		}
	}
	return run, nil
}

// ErrOtherDatabase is wrapped by the error of [Backend.CreateWorkflowRunTx]
// (and so Client.StartTx) for a transaction on another database than the
// backend's: the run would be created there, where the backend never
// looks for it.
var ErrOtherDatabase = errors.New("the transaction is on another database than the backend's")

// databaseIdentityQuery names the database of the connection that runs
// it: its cluster's system identifier (unique per initdb, shared only by
// physical replicas) and its name, as "7712969379572902032/app".
const databaseIdentityQuery = `SELECT (SELECT system_identifier FROM pg_control_system())::text || '/' || current_database()`

// databaseIdentityKey is the key of a connection's identity in its
// pgconn.PgConn CustomData, where checkSameDatabase keeps it: a
// connection never changes database.
const databaseIdentityKey = "openworkflow.database"

// checkSameDatabase returns an error wrapping ErrOtherDatabase unless tx
// is on the backend's database.
func (b *Backend) checkSameDatabase(ctx context.Context, tx pgx.Tx) error {
	mine, err := b.databaseIdentity(ctx)
	if err != nil {
		return err
	}
	var theirs string
	conn := tx.Conn()
	if conn != nil && conn.PgConn() != nil {
		theirs, _ = conn.PgConn().CustomData()[databaseIdentityKey].(string)
	}
	if theirs == "" {
		if err := tx.QueryRow(ctx, databaseIdentityQuery).Scan(&theirs); err != nil {
			return fmt.Errorf("check the transaction's database: %w", err)
		}
		if conn != nil && conn.PgConn() != nil {
			conn.PgConn().CustomData()[databaseIdentityKey] = theirs
		}
	}
	if theirs != mine {
		return fmt.Errorf("%w (%w): the transaction is on database %s, the backend on %s (cluster system identifier/database name): begin the transaction on the backend's pool (Backend.Pool) or on a connection to the backend's database",
			ErrOtherDatabase, backend.ErrInvalidArgument, theirs, mine)
	}
	return nil
}

// databaseIdentity returns the identity (databaseIdentityQuery) of the
// backend's database, asked once.
func (b *Backend) databaseIdentity(ctx context.Context) (string, error) {
	b.mu.Lock()
	id := b.dbIdentity
	b.mu.Unlock()
	if id != "" {
		return id, nil
	}
	if err := b.pool.QueryRow(ctx, databaseIdentityQuery).Scan(&id); err != nil {
		return "", fmt.Errorf("read the backend's database identity: %w", err)
	}
	b.mu.Lock()
	b.dbIdentity = id
	b.mu.Unlock()
	return id, nil
}

// createInTx runs a create's statements on tx; existed is true when an
// idempotency key found an earlier run, or a singleton in mode skip an
// active run of its key (admitSingleton).
func (b *Backend) createInTx(ctx context.Context, tx pgx.Tx, p backend.CreateWorkflowRunParams, esc *escapes, args []any) (run *backend.WorkflowRun, existed bool, err error) {
	if p.IdempotencyKey != nil {
		if _, err := tx.Exec(ctx, b.q.LockIdempotencyKey, idempotencyLockKey(b.namespace, p.WorkflowName, *p.IdempotencyKey)); err != nil {
			return nil, false, err
		}
		existing, err := queryRun(ctx, tx, b.q.GetRunByIdempotencyKey,
			b.namespace, p.WorkflowName, *p.IdempotencyKey, durationMs(backend.IdempotencyPeriod), b.at())
		if err == nil {
			existing.Reused = true
			return existing, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, false, err
		}
	}
	var hold bool
	if p.Singleton != nil {
		var existing *backend.WorkflowRun
		if existing, hold, err = b.admitSingleton(ctx, tx, p); err != nil || existing != nil {
			return existing, existing != nil, err
		}
	}
	if run, err = queryRun(ctx, tx, b.q.InsertRun, args...); err != nil {
		return nil, false, err
	}
	if p.Singleton != nil {
		if run, err = b.markSingleton(ctx, tx, run, p.Singleton, hold); err != nil {
			return nil, false, err
		}
	}
	if run, err = b.markFair(ctx, tx, run, p); err != nil {
		return nil, false, err
	}
	if len(p.SearchAttributes) > 0 {
		if err := b.writeSearchAttributes(ctx, tx, run.ID, run.CreatedAt, p.SearchAttributes, false); err != nil {
			return nil, false, err
		}
	}
	return run, false, b.recordEscapes(ctx, tx, esc)
}
