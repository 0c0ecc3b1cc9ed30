package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Pool modes of [Options.PoolMode]: how a connection pooler between the
// engine and PostgreSQL shares server connections (PgBouncer's pool_mode).
const (
	// PoolModeSession is a direct connection or a pooler in session mode
	// (one server connection per client connection for its whole life):
	// everything works as without a pooler.
	PoolModeSession = "session"
	// PoolModeTransaction is a pooler in transaction mode (a server
	// connection per transaction): the engine keeps no session state on
	// the pooled connections. Its statements go with pgx's "exec" mode
	// (no named prepared statements) unless the URL chooses
	// "simple_protocol", and LISTEN and the migration lock, which need a
	// session, use [Options.DirectURL].
	PoolModeTransaction = "transaction"
)

// ErrTransactionPooling is returned by [Open] when the URL reaches
// PostgreSQL through a pooler in transaction mode and [Options.PoolMode]
// does not say so: prepared statements, LISTEN and session advisory locks
// would then break at random, so the engine refuses to start.
var ErrTransactionPooling = errors.New("the PostgreSQL URL goes through a pooler in transaction mode")

// validatePoolMode checks the pool mode options.
func (o Options) validatePoolMode() error {
	switch o.PoolMode {
	case "", PoolModeSession:
	case PoolModeTransaction:
		if o.DirectURL == "" {
			return fmt.Errorf("%w: pool mode %q needs a direct URL (postgres_direct_url): a connection to PostgreSQL itself or through a pooler in session mode, for LISTEN (wake-ups) and the migration lock, which need a session of their own",
				backend.ErrInvalidArgument, o.PoolMode)
		}
	default:
		return fmt.Errorf("%w: pool mode %q: want %q (a direct connection or a session-mode pooler, the default) or %q (a transaction-mode pooler such as PgBouncer's pool_mode=transaction)",
			backend.ErrInvalidArgument, o.PoolMode, PoolModeSession, PoolModeTransaction)
	}
	return nil
}

// applyPoolMode sets the pgx exec mode the pool mode needs: in
// transaction mode "exec" (an unnamed statement prepared and run in one
// round trip: nothing outlives the transaction), unless url chose
// "simple_protocol"; a URL choosing a mode that keeps named or separately
// described statements is refused.
func applyPoolMode(cfg *pgxpool.Config, mode, url string) error {
	if mode != PoolModeTransaction {
		return nil
	}
	if !strings.Contains(url, "default_query_exec_mode") {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
		return nil
	}
	switch cfg.ConnConfig.DefaultQueryExecMode {
	case pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol:
		return nil
	}
	return fmt.Errorf("%w: default_query_exec_mode=%s does not work through a transaction-mode pooler (its prepared statements or descriptions stay on a server connection other clients are given): remove it (the engine then uses exec) or set exec or simple_protocol",
		backend.ErrInvalidArgument, strings.ReplaceAll(cfg.ConnConfig.DefaultQueryExecMode.String(), " ", "_"))
}

// backendPIDQuery asks which server process runs the session.
const backendPIDQuery = `SELECT pg_backend_pid()`

// DetectTransactionPooling tells whether the pool reaches PostgreSQL
// through a pooler that shares server connections between client
// connections within their lifetime (PgBouncer's transaction or statement
// mode). It holds one client connection A, which ran a statement and sits
// idle outside any transaction, and opens a transaction on a second one,
// B: without a pooler, or through a session-mode pooler, A keeps its
// server process for its whole life, so B's process (pg_backend_pid) is
// another; a transaction-mode pooler hands A's idle server connection to
// B (PgBouncer reuses the most recently released one first), so both
// report one pid. The statements use pgx's exec mode (an unnamed
// statement, described and run in one round trip), which works through any
// pooler and, unlike the simple protocol, on a server whose client
// encoding is not UTF8 (pg_auto_failover's nodes, say). It needs a pool of at least two connections and
// answers false for a smaller one.
func DetectTransactionPooling(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	if pool.Config().MaxConns < 2 {
		return false, nil
	}
	a, err := pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer a.Release()
	var pidA, pidB int32
	if err := a.QueryRow(ctx, backendPIDQuery, pgx.QueryExecModeExec).Scan(&pidA); err != nil {
		return false, err
	}
	b, err := pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer b.Release()
	err = pgx.BeginFunc(ctx, b, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, backendPIDQuery, pgx.QueryExecModeExec).Scan(&pidB)
	})
	if err != nil {
		return false, err
	}
	return pidA == pidB, nil
}

// transactionPoolingError explains [ErrTransactionPooling] with what to set.
func transactionPoolingError() error {
	return fmt.Errorf("%w: two client connections shared one server process (pg_backend_pid), so prepared statements, LISTEN and session advisory locks would break; "+
		"either set the pool mode to %q (postgres_pool_mode, $OPENWORKFLOW_POSTGRES_POOL_MODE) with a direct URL for LISTEN and migrations (postgres_direct_url, $OPENWORKFLOW_POSTGRES_DIRECT_URL), "+
		"or connect directly or through a session-mode pool (PgBouncer pool_mode=session)", ErrTransactionPooling, PoolModeTransaction)
}

// openDirectPool opens a small pool on Options.DirectURL, for the
// migration lock.
func openDirectPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse direct URL: %w", err)
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open direct pool: %w", err)
	}
	return pool, nil
}

// listenConfig is the configuration of the listener's dedicated
// connection: Options.DirectURL's when set, else the pool's.
func (b *Backend) listenConfig() (*pgx.ConnConfig, error) {
	if b.directURL == "" {
		return b.pool.Config().ConnConfig.Copy(), nil
	}
	cfg, err := pgx.ParseConfig(b.directURL)
	if err != nil {
		return nil, fmt.Errorf("%w: direct URL: %v", backend.ErrInvalidArgument, err)
	}
	return cfg, nil
}

// Migrate runs [Migrate] for the backend's schema on its primary: on a
// connection of Options.DirectURL when it is set (the migration lock is a
// session lock, which a transaction-mode pooler would not keep), else on
// the pool.
func (b *Backend) Migrate(ctx context.Context) (MigrationReport, error) {
	if b.directURL == "" {
		return MigrateWithReport(ctx, b.pool, b.schema)
	}
	pool, err := openDirectPool(ctx, b.directURL)
	if err != nil {
		return MigrationReport{}, err
	}
	defer pool.Close()
	return MigrateWithReport(ctx, pool, b.schema)
}
