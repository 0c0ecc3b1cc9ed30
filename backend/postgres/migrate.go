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

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered script of migrations/; its index is its version.
type migration struct {
	version int64
	name    string
	sql     string // with {{schema}} placeholders
}

// migrations returns the embedded scripts ordered by version. The file name
// starts with the version ("0004_indexes.sql").
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
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
		b, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != int64(i) {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i)
		}
	}
	return ms, nil
}

// LatestMigrationVersion is the version of the newest embedded migration,
// the value MAX(version) of openworkflow_migrations has after [Migrate].
const LatestMigrationVersion = 5

// Migrate creates or upgrades the OpenWorkflow tables in schema (empty means
// [DefaultSchema]), applying every embedded migration whose version is
// above the current one (MAX(version) of openworkflow_migrations, or -1
// when that table does not exist). Each migration runs in its own
// transaction and records its version, as OpenWorkflow's do, so a database
// migrated by either SDK is recognised by the other.
//
// All of it happens on one connection holding a session-level
// pg_advisory_lock whose key is derived from the schema name, so processes
// migrating the same database at once wait for each other instead of
// colliding. Migrate is idempotent.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if schema == "" {
		schema = DefaultSchema
	}
	if err := ValidateSchema(schema); err != nil {
		return err
	}
	ms, err := migrations()
	if err != nil {
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

	current, err := currentMigrationVersion(ctx, conn.Conn(), schema)
	if err != nil {
		return fmt.Errorf("migrate schema %s: read current version: %w", schema, err)
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
			return fmt.Errorf("migrate schema %s: migration %s: %w", schema, m.name, err)
		}
	}
	return nil
}

// currentMigrationVersion is MAX(version) of openworkflow_migrations, or -1
// when the table does not exist yet.
func currentMigrationVersion(ctx context.Context, conn *pgx.Conn, schema string) (int64, error) {
	var exists bool
	if err := conn.QueryRow(ctx, sqlMigrationsTableExists, schema).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return -1, nil
	}
	var v *int64
	q := strings.ReplaceAll(sqlCurrentMigrationVersion, "{{schema}}", quoteIdent(schema))
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
