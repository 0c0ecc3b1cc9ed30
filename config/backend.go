package config

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
// it. Errors say what failed and what to do next, telling an unreachable
// server ("cannot reach PostgreSQL at …: start it, or unset
// OPENWORKFLOW_POSTGRES_URL to use SQLite") apart from a refused password,
// a missing role or database and a missing right to create the schema.
func (c *Config) OpenBackend(ctx context.Context) (backend.Backend, error) {
	if c.Kind() == BackendPostgres {
		return c.openPostgres(ctx, false)
	}
	return c.openSQLite(ctx, false)
}

// OpenBackendToRead is [Config.OpenBackend] for a program that only
// reads: a SQLite file that does not exist is not created (a mistyped
// path would otherwise give a new, empty database, and "no such run");
// the error names the file, where its path was set and what to do, and
// wraps [sqlite.ErrNoDatabase]. On PostgreSQL a schema that does not
// exist is not created either (a mistyped --schema would otherwise get a
// new, empty one): the error names the schema and the database and wraps
// [ErrNoSchema]; an existing schema is migrated as by OpenBackend.
func (c *Config) OpenBackendToRead(ctx context.Context) (backend.Backend, error) {
	if c.Kind() != BackendPostgres {
		return c.openSQLite(ctx, true)
	}
	b, err := c.openPostgres(ctx, true)
	if err != nil {
		return nil, err
	}
	schema := c.Schema
	if schema == "" {
		schema = postgres.DefaultSchema
	}
	var exists bool
	var database string
	err = b.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1), current_database()`, schema).Scan(&exists, &database)
	if err == nil && !exists {
		b.Close()
		return nil, fmt.Errorf("%w: no schema %q in database %q of %s: check the schema (--schema, %s or schema in %s); this command only reads, so it does not create it: a command that writes creates it ('ow migrate', 'ow runs start', 'ow worker')",
			ErrNoSchema, schema, database, RedactURL(c.PostgresURL), EnvSchema, FileName)
	}
	if err == nil {
		_, err = b.Migrate(ctx)
	}
	if err != nil {
		b.Close()
		return nil, c.postgresOpenError(err)
	}
	return b, nil
}

// ErrNoSchema: [Config.OpenBackendToRead] found no PostgreSQL schema of
// the configured name, and does not create one.
var ErrNoSchema = errors.New("no such PostgreSQL schema")

func (c *Config) openPostgres(ctx context.Context, skipMigrations bool) (*postgres.Backend, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, OpenTimeout)
		defer cancel()
	}
	b, err := postgres.Open(ctx, c.PostgresURL, postgres.Options{
		NamespaceID: c.Namespace, Schema: c.Schema, SkipMigrations: skipMigrations,
		ReadReplicaURL: c.ReadReplicaURL, ReplicaMaxLag: c.ReplicaMaxLag,
		PoolMode: c.PostgresPoolMode, DirectURL: c.PostgresDirectURL,
	})
	if err != nil {
		switch {
		case errors.Is(err, postgres.ErrTransactionPooling):
			return nil, fmt.Errorf("PostgreSQL at %s (%s): %w", RedactURL(c.PostgresURL), c.postgresURLOrigin(), err)
		case errors.Is(err, backend.ErrInvalidArgument) && postgres.ValidateSchema(c.Schema) != nil:
			return nil, fmt.Errorf("%w: set a valid schema (schema in %s, %s or --schema)", err, FileName, EnvSchema)
		case errors.Is(err, backend.ErrInvalidArgument):
			return nil, fmt.Errorf("PostgreSQL at %s (%s): %w", RedactURL(c.PostgresURL), c.postgresURLOrigin(), err)
		}
		return nil, c.postgresOpenError(err)
	}
	return b, nil
}

// postgresOpenError says what went wrong opening PostgreSQL and what to do
// next, telling apart by SQLSTATE the failures a new user meets: a server
// that does not answer, a password refused (28P01), a role that does not
// exist or may not connect (28000), a database that does not exist
// (3D000), a role that may not create the schema (42501) and a server
// older than postgres.MinServerMajorVersion. The cause
// follows on its own line; the URL is shown without its password.
func (c *Config) postgresOpenError(err error) error {
	where, fix := RedactURL(c.PostgresURL), c.postgresURLOrigin()
	var user, db string
	if pc, perr := pgconn.ParseConfig(c.PostgresURL); perr == nil {
		user, db = pc.User, pc.Database
	}
	var pgErr *pgconn.PgError
	var parseErr *pgconn.ParseConfigError
	switch {
	case errors.Is(err, postgres.ErrUnsupportedServerVersion):
		return fmt.Errorf("PostgreSQL at %s is too old: upgrade it, or point %s at a server of PostgreSQL %d or later\ncause: %w", where, fix, postgres.MinServerMajorVersion, err)
	case errors.As(err, &parseErr):
		return fmt.Errorf("invalid PostgreSQL URL (%s): fix it, e.g. postgres://user:password@host:5432/dbname?sslmode=disable\ncause: %w", fix, err)
	case !errors.As(err, &pgErr):
		return fmt.Errorf("cannot reach PostgreSQL at %s: start it or %s\ncause: %w", where, c.postgresHint(), err)
	case pgErr.Code == "28P01":
		return fmt.Errorf("PostgreSQL at %s refused the password of role %q: fix the password in %s\ncause: %w", where, user, fix, err)
	case pgErr.Code == "28000":
		return fmt.Errorf("PostgreSQL at %s refused role %q: the role does not exist, or pg_hba.conf does not let it connect from here; create it (CREATE ROLE %s LOGIN PASSWORD '…'), allow it in pg_hba.conf, or name another role in %s\ncause: %w",
			where, user, pgx.Identifier{user}.Sanitize(), fix, err)
	case pgErr.Code == "3D000":
		return fmt.Errorf("PostgreSQL at %s has no database %q: create it (createdb %s, or CREATE DATABASE %s), or name an existing database in %s\ncause: %w",
			where, db, shellWord(db), pgx.Identifier{db}.Sanitize(), fix, err)
	case pgErr.Code == "42501":
		return fmt.Errorf("role %q may not create schema %q in database %q at %s: GRANT CREATE ON DATABASE %s TO %s, or have the database's owner run 'ow migrate' once\ncause: %w",
			user, c.Schema, db, where, pgx.Identifier{db}.Sanitize(), pgx.Identifier{user}.Sanitize(), err)
	}
	return fmt.Errorf("cannot open PostgreSQL at %s: the server answered with SQLSTATE %s (%s)\ncause: %w", where, pgErr.Code, pgErr.Message, err)
}

// shellWord quotes s for a shell command in a message when it needs it.
func shellWord(s string) string {
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '.' || r == '/' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// postgresURLOrigin names where the PostgreSQL URL was set, for messages
// asking to fix it: "--postgres-url", "$OPENWORKFLOW_POSTGRES_URL" or
// "postgres_url in <file>".
func (c *Config) postgresURLOrigin() string {
	switch from := c.sources[keyPostgresURL]; {
	case from == "env "+EnvPostgresURL:
		return "$" + EnvPostgresURL
	case from == "flag --postgres-url":
		return "--postgres-url"
	case c.File != "":
		return "postgres_url in " + c.File
	default:
		return "the PostgreSQL URL"
	}
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

// openSQLite opens the SQLite file; mustExist refuses to create it.
func (c *Config) openSQLite(ctx context.Context, mustExist bool) (*sqlite.Backend, error) {
	b, err := sqlite.Open(ctx, c.SQLitePath, sqlite.Options{NamespaceID: c.Namespace, MustExist: mustExist})
	if errors.Is(err, sqlite.ErrNoDatabase) {
		return nil, fmt.Errorf("no SQLite database at %s (sqlite_path from %s): check the path (--sqlite-path, %s or sqlite_path in %s); this command only reads, so it does not create the file: a command that writes creates it ('ow migrate', 'ow runs start', 'ow worker')\ncause: %w",
			c.SQLitePath, c.sources[keySQLitePath], EnvSQLitePath, FileName, err)
	}
	if err != nil && sqlite.IsDamaged(err) {
		problems, _, _ := c.CheckIntegrity(ctx)
		return nil, c.damagedError(problems, err)
	}
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
	// Lines reports each migration line: on PostgreSQL, OpenWorkflow's
	// (openworkflow_migrations, the one Before, After and Applied
	// describe) and then the Go SDK's own (openworkflow_go_migrations),
	// which a schema migrated by the TypeScript SDK lacks until a Go
	// process migrates it; on SQLite, OpenWorkflow's only.
	Lines []MigrationLine `json:"lines"`
}

// MigrationLine is what [Config.Migrate] did to one migration line.
type MigrationLine struct {
	// Name says whose migrations these are: "openworkflow" or "go".
	Name string `json:"name"`
	// Table is the line's version table.
	Table string `json:"table"`
	// Before and After are MAX(version) of Table before and after; -1
	// means the table did not exist.
	Before int `json:"before"`
	After  int `json:"after"`
	// Applied lists the versions applied, oldest first; empty when the
	// line was up to date.
	Applied []int `json:"applied"`
}

// Migrate creates or upgrades the configured database's schema and reports
// the versions applied. It is idempotent.
func (c *Config) Migrate(ctx context.Context) (*Migration, error) {
	m := &Migration{Backend: c.Kind(), Location: c.Location(), Applied: []int{}}
	if c.Kind() == BackendPostgres {
		noReplica := *c
		noReplica.ReadReplicaURL = "" // migrations write the primary only
		b, err := noReplica.openPostgres(ctx, true)
		if err != nil {
			return nil, err
		}
		defer b.Close()
		r, err := b.Migrate(ctx)
		if err != nil {
			return nil, fmt.Errorf("migrate PostgreSQL schema %s: %w", c.Schema, err)
		}
		m.Lines = []MigrationLine{migrationLine("openworkflow", r.OpenWorkflow), migrationLine("go", r.Go)}
		m.Before, m.After, m.Applied = m.Lines[0].Before, m.Lines[0].After, m.Lines[0].Applied
		return m, nil
	}
	var err error
	if m.Before, err = sqliteVersion(ctx, c.SQLitePath); err != nil {
		return nil, err
	}
	b, err := c.openSQLite(ctx, false) // Open applies the migrations
	if err != nil {
		return nil, err
	}
	_ = b.Close()
	if m.After, err = sqliteVersion(ctx, c.SQLitePath); err != nil {
		return nil, err
	}
	for v := m.Before + 1; v <= m.After; v++ {
		m.Applied = append(m.Applied, v)
	}
	m.Lines = []MigrationLine{{Name: "openworkflow", Table: "openworkflow_migrations", Before: m.Before, After: m.After, Applied: m.Applied}}
	return m, nil
}

// migrationLine converts the PostgreSQL backend's report of one line.
func migrationLine(name string, r postgres.LineReport) MigrationLine {
	l := MigrationLine{Name: name, Table: r.Table, Before: int(r.Before), After: int(r.After), Applied: make([]int, 0, len(r.Applied))}
	for _, v := range r.Applied {
		l.Applied = append(l.Applied, int(v))
	}
	return l
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

// validatePostgresTopology checks the read replica and pooler settings:
// PostgreSQL-only settings need a PostgreSQL URL, the pool mode is one
// postgres.Options.PoolMode accepts, transaction mode has a direct URL,
// and the lag bound is not negative.
func (c *Config) validatePostgresTopology() error {
	if c.Kind() != BackendPostgres {
		for _, k := range []struct{ key, v string }{{keyReadReplicaURL, c.ReadReplicaURL}, {keyDirectURL, c.PostgresDirectURL}, {keyPoolMode, c.PostgresPoolMode}} {
			if k.v != "" {
				return fmt.Errorf("config: %s (from %s) is set but the backend is SQLite: set postgres_url too, or remove %s", k.key, c.sources[k.key], k.key)
			}
		}
	}
	switch c.PostgresPoolMode {
	case "", postgres.PoolModeSession:
	case postgres.PoolModeTransaction:
		if c.PostgresDirectURL == "" {
			return fmt.Errorf("config: %s is %q (from %s) but %s is not set: LISTEN and the migration lock need a session; set %s (or $%s) to a URL reaching PostgreSQL directly or through a session-mode pool",
				keyPoolMode, c.PostgresPoolMode, c.sources[keyPoolMode], keyDirectURL, keyDirectURL, EnvPostgresDirectURL)
		}
	default:
		return fmt.Errorf("config: %s (from %s) is %q: want %q or %q", keyPoolMode, c.sources[keyPoolMode], c.PostgresPoolMode, postgres.PoolModeSession, postgres.PoolModeTransaction)
	}
	if c.ReplicaMaxLag < 0 {
		return fmt.Errorf("config: %s (from %s) must not be negative, got %s", keyReplicaMaxLag, c.sources[keyReplicaMaxLag], c.ReplicaMaxLag)
	}
	return nil
}
