package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/config"
)

// dbPrefix starts the name of every database the bench creates.
const dbPrefix = "ow_bench_"

// cleanupTimeout bounds dropping a database after a measurement, also
// after an interrupt.
const cleanupTimeout = 30 * time.Second

// pgAdmin is the admin connection: it creates and drops the bench
// databases and reads their statistics. It is safe for concurrent use.
type pgAdmin struct {
	mu   sync.Mutex
	conn *pgx.Conn
	base *url.URL // the admin URL; bench databases differ in the path only
}

// connectAdmin connects to the admin URL, a postgres:// URL.
func connectAdmin(ctx context.Context, rawURL string) (*pgAdmin, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("PostgreSQL URL %s: want postgres://user@host:port/db (the bench creates its databases on that server)", config.RedactURL(rawURL))
	}
	cctx, cancel := context.WithTimeout(ctx, config.OpenTimeout)
	defer cancel()
	conn, err := pgx.Connect(cctx, rawURL)
	if err != nil {
		return nil, fmt.Errorf("cannot reach PostgreSQL at %s (set OPENWORKFLOW_POSTGRES_URL, or --backend sqlite): %w", config.RedactURL(rawURL), err)
	}
	return &pgAdmin{conn: conn, base: u}, nil
}

func (a *pgAdmin) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return a.conn.Close(ctx)
}

// dbURL is the URL of database name on the admin's server.
func (a *pgAdmin) dbURL(name string) string {
	u := *a.base
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

// serverVersion is the server's version string, e.g. "15.20 (Debian …)".
func (a *pgAdmin) serverVersion(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var v string
	err := a.conn.QueryRow(ctx, "SHOW server_version").Scan(&v)
	return v, err
}

// createDB creates an empty database named prefix+random; with
// OW_BENCH_LOG_STATEMENTS set, one that logs every statement (the trace
// of docs/benchmarks.md).
func (a *pgAdmin) createDB(ctx context.Context, prefix string) (string, error) {
	name := prefix + randomHex(6)
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s (the bench user needs CREATEDB): %w", name, err)
	}
	if os.Getenv("OW_BENCH_LOG_STATEMENTS") != "" {
		if _, err := a.conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" SET log_min_duration_statement = 0"); err != nil {
			return "", fmt.Errorf("log the statements of database %s: %w", name, err)
		}
	}
	return name, nil
}

// dropDB drops a database, closing its remaining sessions.
func (a *pgAdmin) dropDB(ctx context.Context, name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// dropPrefixed drops every database whose name starts with prefix (what a
// killed TypeScript bench may have left behind).
func (a *pgAdmin) dropPrefixed(ctx context.Context, prefix string) error {
	a.mu.Lock()
	rows, err := a.conn.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1)", prefix)
	var names []string
	if err == nil {
		names, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	a.mu.Unlock()
	if err != nil {
		return fmt.Errorf("list databases %s*: %w", prefix, err)
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, a.dropDB(ctx, n))
	}
	return errors.Join(errs...)
}

// xactCommit returns the committed transactions of database name, once
// no session is connected to it any more and the count is stable: a
// session reports its statistics when it ends (or at most once a second
// while it lives), so only then does the count include all of them.
func (a *pgAdmin) xactCommit(ctx context.Context, name string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	last, stable := int64(-1), 0
	for {
		sessions, n, err := a.readStats(ctx, name)
		if err != nil {
			return 0, fmt.Errorf("read statistics of database %s: %w", name, err)
		}
		if sessions == 0 && n == last {
			stable++
		} else {
			stable = 0
		}
		if stable >= 3 { // unchanged over 60 ms with nobody connected
			return n, nil
		}
		last = n
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("read statistics of database %s: %d sessions still connected: %w", name, sessions, ctx.Err())
		case <-tick.C:
		}
	}
}

func (a *pgAdmin) readStats(ctx context.Context, name string) (sessions, commits int64, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		return 0, 0, err
	}
	err = a.conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pg_stat_activity WHERE datname = $1),
		(SELECT coalesce(sum(xact_commit), 0)::bigint FROM pg_stat_database WHERE datname = $1)`, name).Scan(&sessions, &commits)
	return sessions, commits, err
}

// pgTarget is a fresh database on the admin's server, migrated.
type pgTarget struct {
	admin     *pgAdmin
	name, url string
}

func newPostgresTarget(ctx context.Context, admin *pgAdmin) (*pgTarget, error) {
	return newPostgresTargetPrefixed(ctx, admin, dbPrefix)
}

// newPostgresTargetPrefixed is newPostgresTarget with the database named
// prefix+random.
func newPostgresTargetPrefixed(ctx context.Context, admin *pgAdmin, prefix string) (*pgTarget, error) {
	name, err := admin.createDB(ctx, prefix)
	if err != nil {
		return nil, err
	}
	t := &pgTarget{admin: admin, name: name, url: admin.dbURL(name)}
	b, err := openPostgres(ctx, t.url, namespace, false)
	if err == nil {
		err = b.Close()
	}
	if err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		return nil, errors.Join(err, t.destroy(dctx))
	}
	return t, nil
}

func (t *pgTarget) kind() string { return Postgres }
func (t *pgTarget) dsn() string  { return t.url }

func (t *pgTarget) open(ctx context.Context) (backend.Backend, error) {
	return openPostgres(ctx, t.url, namespace, true)
}

func (t *pgTarget) counter(ctx context.Context) (runCounter, error) {
	cfg, err := pgx.ParseConfig(t.url)
	if err != nil {
		return nil, err
	}
	// The simple protocol makes each count exactly one transaction (no
	// separate prepare), so the bench can subtract its own commits.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", t.name, err)
	}
	return &pgCounter{conn: conn, query: fmt.Sprintf("SELECT status, count(*) FROM %s.workflow_runs WHERE namespace_id = $1 GROUP BY status",
		pgx.Identifier{postgres.DefaultSchema}.Sanitize())}, nil
}

func (t *pgTarget) commits(ctx context.Context) (int64, bool, error) {
	n, err := t.admin.xactCommit(ctx, t.name)
	return n, err == nil, err
}

func (t *pgTarget) destroy(ctx context.Context) error { return t.admin.dropDB(ctx, t.name) }

// pgCounter counts runs with one query per count on its own connection.
type pgCounter struct {
	conn  *pgx.Conn
	query string
	n     int64
}

func (c *pgCounter) count(ctx context.Context) (backend.RunCounts, error) {
	c.n++
	var counts backend.RunCounts
	rows, err := c.conn.Query(ctx, c.query, namespace)
	if err != nil {
		return counts, err
	}
	var status string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&status, &n}, func() error {
		counts.Add(backend.RunStatus(status), n)
		return nil
	})
	return counts, err
}

func (c *pgCounter) calls() int64 { return c.n }

func (c *pgCounter) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.conn.Close(ctx)
}

// openPostgres opens namespace ns of the database at url.
func openPostgres(ctx context.Context, url, ns string, skipMigrations bool) (backend.Backend, error) {
	b, err := postgres.Open(ctx, url, postgres.Options{NamespaceID: ns, SkipMigrations: skipMigrations})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", config.RedactURL(url), err)
	}
	return b, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
