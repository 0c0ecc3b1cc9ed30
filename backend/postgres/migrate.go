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
//
// OpenWorkflow's line is contiguous and applies the versions above
// MAX(version), as the TypeScript SDK does. Ours may have gaps (changes
// developed side by side take their numbers ahead of landing) and applies
// every version it has not recorded, in order, so a version that lands
// after a higher one is still applied.
type migrationLine struct {
	dir   string // embedded directory of the scripts
	table string // the version table, created by the line's script 0
	gaps  bool   // versions may skip numbers; apply each one not recorded
}

var (
	openworkflowLine = migrationLine{dir: "migrations", table: "openworkflow_migrations"}
	goLine           = migrationLine{dir: "migrations_go", table: goMigrationsTable, gaps: true}
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
		switch {
		case !l.gaps && m.version != int64(i):
			return nil, fmt.Errorf("migration %s/%s: expected version %d", l.dir, m.name, i)
		case l.gaps && (i == 0 && m.version != 0 || i > 0 && m.version == ms[i-1].version):
			return nil, fmt.Errorf("migration %s/%s: version %d is not the first (0) or is taken twice", l.dir, m.name, m.version)
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
const LatestGoMigrationVersion = 23

// GoMigrationVersions returns the versions of this SDK's own migration
// line embedded in this build, ascending: the versions
// openworkflow_go_migrations holds after [Migrate]. The line may have
// gaps (see migrationLine), so they need not be 0 to
// [LatestGoMigrationVersion].
func GoMigrationVersions() []int64 {
	ms, err := goLine.migrations()
	if err != nil {
		panic(err) // the embedded files are checked by every test that migrates
	}
	vs := make([]int64, len(ms))
	for i, m := range ms {
		vs[i] = m.version
	}
	return vs
}

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
// colliding. Migrate is idempotent. A server older than
// [MinServerMajorVersion] is refused, before anything is created, with an
// error wrapping [ErrUnsupportedServerVersion].
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	_, err := MigrateWithReport(ctx, pool, schema)
	return err
}

// MigrationReport says what [MigrateWithReport] did to each migration line.
type MigrationReport struct {
	// OpenWorkflow is OpenWorkflow's line (openworkflow_migrations), shared
	// with the TypeScript SDK.
	OpenWorkflow LineReport `json:"openworkflow"`
	// Go is this SDK's own line (openworkflow_go_migrations). A schema the
	// TypeScript SDK migrated has OpenWorkflow's line only, so the first Go
	// migration of it applies this line alone.
	Go LineReport `json:"go"`
}

// LineReport says what [MigrateWithReport] did to one migration line.
type LineReport struct {
	// Table is the line's version table.
	Table string `json:"table"`
	// Before and After are MAX(version) of Table before and after the
	// migration, read under the migration lock; -1 means the table did not
	// exist (no migration of this line had run).
	Before int64 `json:"before"`
	After  int64 `json:"after"`
	// Applied lists the versions this call applied, oldest first; empty
	// (not nil) when the line was up to date.
	Applied []int64 `json:"applied"`
}

// MigrateWithReport is [Migrate], reporting the versions of each line
// before and after and the migrations it applied, as `ow migrate` prints
// them.
func MigrateWithReport(ctx context.Context, pool *pgxpool.Pool, schema string) (MigrationReport, error) {
	reports, err := migrate(ctx, pool, schema, openworkflowLine, goLine)
	if err != nil {
		return MigrationReport{}, err
	}
	return MigrationReport{OpenWorkflow: reports[0], Go: reports[1]}, nil
}

// migrate applies the lines in order under the schema's advisory lock and
// reports what it did to each.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, lines ...migrationLine) ([]LineReport, error) {
	if schema == "" {
		schema = DefaultSchema
	}
	if err := ValidateSchema(schema); err != nil {
		return nil, err
	}
	q, err := loadQueries(schema)
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate schema %s: acquire connection: %w", schema, err)
	}
	defer conn.Release()
	// An unsupported server is refused before anything is created in it.
	if _, err := checkServerVersion(ctx, conn.Conn(), MinServerMajorVersion); err != nil {
		return nil, fmt.Errorf("migrate schema %s: %w", schema, err)
	}

	lockKey := "openworkflow:migrate:" + schema
	if _, err := conn.Exec(ctx, q.MigrationLock, lockKey); err != nil {
		return nil, fmt.Errorf("migrate schema %s: take advisory lock: %w", schema, err)
	}
	defer func() {
		// A session lock outlives errors; if it cannot be released, the
		// connection must not go back to the pool still holding it.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockReleaseTimeout)
		defer cancel()
		if _, err := conn.Exec(uctx, q.MigrationUnlock, lockKey); err != nil {
			_ = conn.Hijack().Close(uctx)
		}
	}()
	reports := make([]LineReport, 0, len(lines))
	for _, l := range lines {
		r, err := l.apply(ctx, conn.Conn(), &q, schema)
		if err != nil {
			return nil, err
		}
		reports = append(reports, r)
	}
	return reports, nil
}

// apply runs the line's migrations above its current version, each in its
// own transaction, and reports the versions before and after.
func (l migrationLine) apply(ctx context.Context, conn *pgx.Conn, q *queries, schema string) (LineReport, error) {
	r := LineReport{Table: l.table, Applied: []int64{}}
	ms, err := l.migrations()
	if err != nil {
		return r, err
	}
	current, err := currentMigrationVersion(ctx, conn, q, schema, l.table)
	if err != nil {
		return r, fmt.Errorf("migrate schema %s: read current version of %s: %w", schema, l.table, err)
	}
	r.Before, r.After = current, current
	var recorded map[int64]bool
	if l.gaps && current >= 0 {
		if recorded, err = recordedMigrationVersions(ctx, conn, schema, l.table); err != nil {
			return r, fmt.Errorf("migrate schema %s: read versions of %s: %w", schema, l.table, err)
		}
	}
	for _, m := range ms {
		if (l.gaps && recorded[m.version]) || (!l.gaps && m.version <= current) {
			continue
		}
		script := strings.ReplaceAll(m.sql, "{{schema}}", quoteIdent(schema))
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, script) // no arguments: simple protocol, several statements
			return err
		}); err != nil {
			return r, fmt.Errorf("migrate schema %s: migration %s/%s: %w", schema, l.dir, m.name, err)
		}
		r.Applied = append(r.Applied, m.version)
		r.After = max(r.After, m.version)
	}
	return r, nil
}

// currentMigrationVersion is MAX(version) of the version table, or -1
// when that table does not exist yet.
func currentMigrationVersion(ctx context.Context, conn *pgx.Conn, q *queries, schema, table string) (int64, error) {
	var exists bool
	if err := conn.QueryRow(ctx, q.MigrationsTableExists, schema, table).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return -1, nil
	}
	version := q.OpenWorkflowMigrationVersion
	if table == goMigrationsTable {
		version = q.GoMigrationVersion
	}
	var v *int64
	if err := conn.QueryRow(ctx, version).Scan(&v); err != nil {
		return 0, err
	}
	if v == nil {
		return -1, nil
	}
	return *v, nil
}

// recordedMigrationVersions is the set of versions in the version table,
// which exists.
func recordedMigrationVersions(ctx context.Context, conn *pgx.Conn, schema, table string) (map[int64]bool, error) {
	q := "SELECT \"version\" FROM " + quoteIdent(schema) + "." + quoteIdent(table)
	rows, err := conn.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	set := make(map[int64]bool, len(vs))
	for _, v := range vs {
		set[v] = true
	}
	return set, nil
}

// goMigrationsTable is the version table of this SDK's own line.
const goMigrationsTable = "openworkflow_go_migrations"

// quoteIdent quotes an identifier already checked by ValidateSchema.
func quoteIdent(s string) string { return `"` + s + `"` }

// errClosed is returned by calls on a closed backend's listener.
var errClosed = errors.New("postgres backend is closed")
