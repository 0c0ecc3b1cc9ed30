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
// (0000_init.sql, …), in two lines. migrations/ mirrors OpenWorkflow's
// SQLite migrations 0–5, each inserting its own version into
// openworkflow_migrations, so a file is shared with the TypeScript SDK.
// migrations_go/ is this SDK's own line (tables OpenWorkflow does not
// have), recorded in openworkflow_go_migrations, so the TypeScript SDK
// never sees a version it does not know in its table.
//
//go:embed migrations/*.sql migrations_go/*.sql
var migrationFiles embed.FS

// migration is one numbered script.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the embedded scripts of the line in directory dir
// in version order.
func loadMigrations(dir string) ([]migration, error) {
	names, err := fs.Glob(migrationFiles, dir+"/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := strings.TrimPrefix(name, dir+"/")
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

// migrate applies, in one BEGIN IMMEDIATE transaction, every migration of
// OpenWorkflow's line above the database's version, then every migration
// of this SDK's line whose version is not recorded (that line may have
// gaps: see migrations_go/0000_init.sql): the first of several processes
// opening a fresh file migrates it, the others wait for the lock and then
// find nothing left to do. It then creates this SDK's own indexes on
// OpenWorkflow's workflow_runs if missing (create_deadline_index in
// sql/migrate.sql says why there, and the indexes of go migration 8).
func (b *Backend) migrate(ctx context.Context) error {
	ms, err := loadMigrations("migrations")
	if err != nil {
		return err
	}
	goMs, err := loadMigrations("migrations_go")
	if err != nil {
		return err
	}
	return b.write(ctx, func(tx *txn, _ time.Time, _ *events) error {
		current := -1
		var exists int
		if err := tx.QueryRowContext(ctx, b.q.MigrationsTableExists).Scan(&exists); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if exists > 0 {
			if err := tx.QueryRowContext(ctx, b.q.OpenWorkflowMigrationVersion).Scan(&current); err != nil {
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
		if err := b.applyGoMigrations(ctx, tx, goMs); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, b.q.CreateDeadlineIndex); err != nil {
			return fmt.Errorf("create workflow_runs_go_deadline_idx: %w", err)
		}
		for _, stmt := range []string{b.q.CreatePriorityIndex, b.q.DropPendingPriorityIndex, b.q.CreateQueueIndex, b.q.CreateQueueKeyIndex, b.q.CreateAdmittedIndex} {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("create the indexes of go migration 8 (and the claim's priority index): %w", err)
			}
		}
		return nil
	})
}

// applyGoMigrations applies the migrations of this SDK's line whose
// versions openworkflow_go_migrations does not record (all of them on a
// file that has no such table yet), in version order.
func (b *Backend) applyGoMigrations(ctx context.Context, tx *txn, ms []migration) error {
	recorded := map[int]bool{}
	var exists int
	if err := tx.QueryRowContext(ctx, b.q.GoMigrationsTableExists).Scan(&exists); err != nil {
		return fmt.Errorf("read versions of this SDK's migrations: %w", err)
	}
	if exists > 0 {
		rows, err := tx.QueryContext(ctx, b.q.GoMigrationVersions)
		if err != nil {
			return fmt.Errorf("read versions of this SDK's migrations: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				return err
			}
			recorded[v] = true
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for _, m := range ms {
		if recorded[m.version] {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("apply migration migrations_go/%s: %w", m.name, err)
		}
	}
	return nil
}
