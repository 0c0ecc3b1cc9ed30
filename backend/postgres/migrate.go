package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
)

// DefaultSchema is the PostgreSQL schema the tables live in when
// [Options.Schema] is empty, as in OpenWorkflow.
const DefaultSchema = "openworkflow"

// maxIdentifierBytes is PostgreSQL's identifier limit (NAMEDATALEN - 1).
const maxIdentifierBytes = 63

var schemaPattern = regexp.MustCompile(`^[a-zA-Z_]\w*$`)

// ValidateSchema reports whether schema is usable as a schema name: it must
// match ^[a-zA-Z_]\w*$ and be at most 63 bytes, as in OpenWorkflow. The
// error wraps [backend.ErrInvalidArgument].
func ValidateSchema(schema string) error {
	if !schemaPattern.MatchString(schema) {
		return fmt.Errorf("%w: schema name %q is not a PostgreSQL identifier (letters, digits, underscores; not starting with a digit)", backend.ErrInvalidArgument, schema)
	}
	if len(schema) > maxIdentifierBytes {
		return fmt.Errorf("%w: schema name %q is longer than %d bytes", backend.ErrInvalidArgument, schema, maxIdentifierBytes)
	}
	return nil
}

//go:embed migrations/*.sql migrations_go/*.sql
var migrationFiles embed.FS

// migrationLine is a numbered sequence of scripts recording their versions
// in their own table: OpenWorkflow's (versions 0–5 in
// openworkflow_migrations, exactly as the TypeScript SDK writes them) and
// ours (openworkflow_go_migrations), applied after theirs so that neither
// SDK ever sees a version it does not know in its own table.
type migrationLine struct {
	dir   string // embedded directory of the scripts
	table string // the version table, created by the line's script 0
}

var (
	openworkflowLine = migrationLine{dir: "migrations", table: "openworkflow_migrations"}
	goLine           = migrationLine{dir: "migrations_go", table: "openworkflow_go_migrations"}
)

// migration is one numbered script of a line; its index is its version.
type migration struct {
	version int64
	name    string
	sql     string // with {{schema}} placeholders
}

// migrations returns the line's embedded scripts ordered by version. The
// file name starts with the version ("0004_indexes.sql").
func (l migrationLine) migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, l.dir)
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name does not start with a version", e.Name())
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		b, err := migrationFiles.ReadFile(l.dir + "/" + e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != int64(i) {
			return nil, fmt.Errorf("migration %s/%s: expected version %d", l.dir, m.name, i)
		}
	}
	return ms, nil
}

// LatestMigrationVersion is the version of the newest embedded migration
// of OpenWorkflow's line, the value MAX(version) of openworkflow_migrations
// has after [Migrate].
const LatestMigrationVersion = 5

// LatestGoMigrationVersion is the version of the newest migration of this
// SDK's own line, the value MAX(version) of openworkflow_go_migrations has
// after [Migrate].
const LatestGoMigrationVersion = 2

// Migrate creates or upgrades the OpenWorkflow tables in schema (empty means
// [DefaultSchema]): first OpenWorkflow's line, applying every embedded
// migration whose version is above the current one (MAX(version) of
// openworkflow_migrations, or -1 when that table does not exist), then this
// SDK's own line (indexes and tables OpenWorkflow does not have), recorded
// the same way in openworkflow_go_migrations. Each migration runs in its
// own transaction and records its version, as OpenWorkflow's do, so a
// database migrated by either SDK is recognised by the other, and the
// TypeScript SDK never sees a version of ours.
//
// All of it happens on one connection holding a session-level
// pg_advisory_lock whose key is derived from the schema name, so processes
// migrating the same database at once wait for each other instead of
// colliding. Migrate is idempotent.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	return migrate(ctx, pool, schema, openworkflowLine, goLine)
}

// migrate applies the lines in order under the schema's advisory lock.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, lines ...migrationLine) error {
	if schema == "" {
		schema = DefaultSchema
	}
	if err := ValidateSchema(schema); err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate schema %s: acquire connection: %w", schema, err)
	}
	defer conn.Release()

	lockKey := "openworkflow:migrate:" + schema
	if _, err := conn.Exec(ctx, sqlMigrationLock, lockKey); err != nil {
		return fmt.Errorf("migrate schema %s: take advisory lock: %w", schema, err)
	}
	defer func() {
		// A session lock outlives errors; if it cannot be released, the
		// connection must not go back to the pool still holding it.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockReleaseTimeout)
		defer cancel()
		if _, err := conn.Exec(uctx, sqlMigrationUnlock, lockKey); err != nil {
			_ = conn.Hijack().Close(uctx)
		}
	}()
	for _, l := range lines {
		if err := l.apply(ctx, conn.Conn(), schema); err != nil {
			return err
		}
	}
	return nil
}

// apply runs the line's migrations above its current version, each in its
// own transaction.
func (l migrationLine) apply(ctx context.Context, conn *pgx.Conn, schema string) error {
	ms, err := l.migrations()
	if err != nil {
		return err
	}
	current, err := currentMigrationVersion(ctx, conn, schema, l.table)
	if err != nil {
		return fmt.Errorf("migrate schema %s: read current version of %s: %w", schema, l.table, err)
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		script := strings.ReplaceAll(m.sql, "{{schema}}", quoteIdent(schema))
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, script) // no arguments: simple protocol, several statements
			return err
		}); err != nil {
			return fmt.Errorf("migrate schema %s: migration %s/%s: %w", schema, l.dir, m.name, err)
		}
	}
	return nil
}

// currentMigrationVersion is MAX(version) of the version table, or -1
// when that table does not exist yet.
func currentMigrationVersion(ctx context.Context, conn *pgx.Conn, schema, table string) (int64, error) {
	var exists bool
	if err := conn.QueryRow(ctx, sqlMigrationsTableExists, schema, table).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return -1, nil
	}
	var v *int64
	q := strings.ReplaceAll(sqlCurrentMigrationVersion, "{{schema}}", quoteIdent(schema))
	q = strings.ReplaceAll(q, "{{table}}", quoteIdent(table))
	if err := conn.QueryRow(ctx, q).Scan(&v); err != nil {
		return 0, err
	}
	if v == nil {
		return -1, nil
	}
	return *v, nil
}

// quoteIdent quotes an identifier already checked by ValidateSchema.
func quoteIdent(s string) string { return `"` + s + `"` }

// errClosed is returned by calls on a closed backend's listener.
var errClosed = errors.New("postgres backend is closed")
