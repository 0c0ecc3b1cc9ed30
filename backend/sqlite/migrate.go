package sqlite

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

// migrationFiles holds the schema, one numbered script per version
// (0000_init.sql, …); each inserts its own version into
// openworkflow_migrations. They mirror OpenWorkflow's SQLite migrations
// 0–5, so a file is shared with the TypeScript SDK.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered script.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the embedded scripts in version order.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		prefix, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a version number and '_'", base)
		}
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrate applies every migration above the database's version in one
// BEGIN IMMEDIATE transaction: the first of several processes opening a
// fresh file migrates it, the others wait for the lock and then find
// nothing left to do.
func (b *Backend) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return b.write(ctx, func(tx *txn, _ time.Time, _ *events) error {
		current := -1
		var exists int
		if err := tx.QueryRowContext(ctx, qMigrationsTableExists).Scan(&exists); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if exists > 0 {
			if err := tx.QueryRowContext(ctx, qMigrationVersion).Scan(&current); err != nil {
				return fmt.Errorf("read schema version: %w", err)
			}
		}
		for _, m := range ms {
			if m.version <= current {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, qCreateDeadlineIndex); err != nil {
			return fmt.Errorf("create %s: %w", deadlineIndex, err)
		}
		return nil
	})
}

// deadlineIndex keeps the claim's deadline sweep (qFailExpiredRuns) an
// index probe: without it every claim read every live run of the namespace
// (about 45 ms with 200,000 pending runs). It is this SDK's own, outside
// the numbered line OpenWorkflow's SQLite migrations share with the
// TypeScript SDK, so it is created if missing at every open (as the
// PostgreSQL backend's workflow_runs_go_deadline_idx, in its own line).
// Its predicate repeats the sweep's terms, which SQLite requires to use a
// partial index.
const deadlineIndex = "workflow_runs_go_deadline_idx"

const qCreateDeadlineIndex = `CREATE INDEX IF NOT EXISTS "` + deadlineIndex + `"
ON "workflow_runs" ("namespace_id", "deadline_at")
WHERE "deadline_at" IS NOT NULL AND "status" IN ` + nonTerminalStatuses
