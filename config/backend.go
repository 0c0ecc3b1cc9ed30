package config

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, to read a file's schema version

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
)

// OpenTimeout bounds connecting to PostgreSQL in [Config.OpenBackend] and
// [Config.Migrate] when ctx has no deadline: 10 s.
const OpenTimeout = 10 * time.Second

// OpenBackend opens the configured backend, migrating its schema: a
// PostgreSQL backend when PostgresURL is set, else the SQLite file
// SQLitePath (created with its directory if missing). The caller closes
// it. Errors say what to do next, e.g. "cannot reach PostgreSQL at …:
// start it, or unset OPENWORKFLOW_POSTGRES_URL to use SQLite".
func (c *Config) OpenBackend(ctx context.Context) (backend.Backend, error) {
	if c.Kind() == BackendPostgres {
		return c.openPostgres(ctx, false)
	}
	return c.openSQLite(ctx)
}

func (c *Config) openPostgres(ctx context.Context, skipMigrations bool) (*postgres.Backend, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, OpenTimeout)
		defer cancel()
	}
	b, err := postgres.Open(ctx, c.PostgresURL, postgres.Options{
		NamespaceID: c.Namespace, Schema: c.Schema, SkipMigrations: skipMigrations,
	})
	if err != nil {
		if errors.Is(err, backend.ErrInvalidArgument) {
			return nil, fmt.Errorf("%w: set a valid schema (schema in %s, %s or --schema)", err, FileName, EnvSchema)
		}
		return nil, fmt.Errorf("cannot reach PostgreSQL at %s: start it or %s\ncause: %w", RedactURL(c.PostgresURL), c.postgresHint(), err)
	}
	return b, nil
}

// postgresHint says how to stop using the configured PostgreSQL URL,
// according to where it came from.
func (c *Config) postgresHint() string {
	switch from := c.sources[keyPostgresURL]; {
	case from == "env "+EnvPostgresURL:
		return "unset " + EnvPostgresURL + " to use SQLite"
	case from == "flag --postgres-url":
		return "fix --postgres-url"
	case c.File != "":
		return "remove postgres_url from " + c.File + " to use SQLite"
	default:
		return "fix the PostgreSQL URL"
	}
}

func (c *Config) openSQLite(ctx context.Context) (*sqlite.Backend, error) {
	b, err := sqlite.Open(ctx, c.SQLitePath, sqlite.Options{NamespaceID: c.Namespace})
	if err != nil {
		return nil, fmt.Errorf("cannot open SQLite database %s (sqlite_path from %s): check that its directory is writable, or set %s\ncause: %w",
			c.SQLitePath, c.sources[keySQLitePath], EnvSQLitePath, err)
	}
	return b, nil
}

// Migration reports what [Config.Migrate] did.
type Migration struct {
	// Backend is the kind of backend migrated.
	Backend BackendKind `json:"backend"`
	// Location is the database, as [Config.Location].
	Location string `json:"location"`
	// Before and After are the schema versions (MAX(version) of
	// openworkflow_migrations) before and after; -1 means no schema.
	Before int `json:"before"`
	After  int `json:"after"`
	// Applied lists the versions applied, oldest first; empty when the
	// schema was up to date.
	Applied []int `json:"applied"`
}

// Migrate creates or upgrades the configured database's schema and reports
// the versions applied. It is idempotent.
func (c *Config) Migrate(ctx context.Context) (*Migration, error) {
	m := &Migration{Backend: c.Kind(), Location: c.Location(), Applied: []int{}}
	if c.Kind() == BackendPostgres {
		b, err := c.openPostgres(ctx, true)
		if err != nil {
			return nil, err
		}
		defer b.Close()
		if m.Before, err = postgresVersion(ctx, b); err != nil {
			return nil, err
		}
		if err := postgres.Migrate(ctx, b.Pool(), c.Schema); err != nil {
			return nil, fmt.Errorf("migrate PostgreSQL schema %s: %w", c.Schema, err)
		}
		if m.After, err = postgresVersion(ctx, b); err != nil {
			return nil, err
		}
	} else {
		var err error
		if m.Before, err = sqliteVersion(ctx, c.SQLitePath); err != nil {
			return nil, err
		}
		b, err := c.openSQLite(ctx) // Open applies the migrations
		if err != nil {
			return nil, err
		}
		_ = b.Close()
		if m.After, err = sqliteVersion(ctx, c.SQLitePath); err != nil {
			return nil, err
		}
	}
	for v := m.Before + 1; v <= m.After; v++ {
		m.Applied = append(m.Applied, v)
	}
	return m, nil
}

// SchemaVersion returns the schema version (MAX(version) of
// openworkflow_migrations) of the database b, a backend opened from this
// configuration; -1 when there is no schema.
func (c *Config) SchemaVersion(ctx context.Context, b backend.Backend) (int, error) {
	if pb, ok := b.(*postgres.Backend); ok {
		return postgresVersion(ctx, pb)
	}
	return sqliteVersion(ctx, c.SQLitePath)
}

// postgresVersion reads MAX(version) of the schema's migrations table.
func postgresVersion(ctx context.Context, b *postgres.Backend) (int, error) {
	var exists bool
	q := `SELECT to_regclass(format('%I.openworkflow_migrations', $1::text)) IS NOT NULL`
	if err := b.Pool().QueryRow(ctx, q, b.Schema()).Scan(&exists); err != nil {
		return 0, fmt.Errorf("read schema version of %s: %w", b.Schema(), err)
	}
	if !exists {
		return -1, nil
	}
	var v *int
	q = `SELECT MAX(version) FROM ` + pgx.Identifier{b.Schema(), "openworkflow_migrations"}.Sanitize()
	if err := b.Pool().QueryRow(ctx, q).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version of %s: %w", b.Schema(), err)
	}
	if v == nil {
		return -1, nil
	}
	return *v, nil
}

// sqliteVersion reads MAX(version) of the file's migrations table, read
// only; a missing file has version -1.
func sqliteVersion(ctx context.Context, path string) (int, error) {
	if path == ":memory:" {
		return -1, nil
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return -1, nil
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return 0, fmt.Errorf("read schema version of %s: %w", path, err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'openworkflow_migrations'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read schema version of %s: %w", path, err)
	}
	if n == 0 {
		return -1, nil
	}
	var v int
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), -1) FROM openworkflow_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version of %s: %w", path, err)
	}
	return v, nil
}
