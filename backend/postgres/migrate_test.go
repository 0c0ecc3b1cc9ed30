package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

// goLine is the versions of our own migration line embedded (it may have
// gaps), checked to end at the latest.
func goLine() []int64 {
	vs := postgres.GoMigrationVersions()
	if len(vs) == 0 || vs[0] != 0 || vs[len(vs)-1] != postgres.LatestGoMigrationVersion {
		panic(fmt.Sprintf("this SDK's migration line %v does not run from 0 to LatestGoMigrationVersion (%d)", vs, postgres.LatestGoMigrationVersion))
	}
	return vs
}

// oursIndexes are the indexes of our own line on workflow_runs.
var oursIndexes = []string{
	"workflow_runs_go_admitted_idx", "workflow_runs_go_claim_priority_idx", "workflow_runs_go_deadline_idx", "workflow_runs_go_debounce_idx",
	"workflow_runs_go_fair_idx", "workflow_runs_go_fair_key_idx", "workflow_runs_go_paused_idx", "workflow_runs_go_queue_idx", "workflow_runs_go_queue_key_idx",
	"workflow_runs_go_singleton_idx",
}

// migratedSchema returns a new schema of the test's own, migrated, and a
// pool on the test server.
func migratedSchema(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	schema := pgtest.NewSchema(t)
	pool := pgtest.Pool(t)
	if err := postgres.Migrate(context.Background(), pool, schema); err != nil {
		t.Fatal(err)
	}
	return pool, schema
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("concurrent migrations of a fresh schema all succeed", func(t *testing.T) {
		t.Parallel()
		schema := pgtest.NewSchema(t)
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				p, err := pgxpool.New(ctx, pgtest.URL())
				if err != nil {
					t.Error(err)
					return
				}
				defer p.Close()
				if err := postgres.Migrate(ctx, p, schema); err != nil {
					t.Errorf("migrate: %v", err)
				}
			})
		}
		wg.Wait()
		pool := pgtest.Pool(t)
		q := pgx.Identifier{schema}.Sanitize()
		versions, err := pgx.CollectRows(must(pool.Query(ctx, `SELECT version FROM `+q+`.openworkflow_migrations ORDER BY 1`)), pgx.RowTo[int64])
		if err != nil || !slices.Equal(versions, []int64{0, 1, 2, 3, 4, 5}) || postgres.LatestMigrationVersion != 5 {
			t.Errorf("versions = %v, %v", versions, err)
		}
		goVersions, err := pgx.CollectRows(must(pool.Query(ctx, `SELECT version FROM `+q+`.openworkflow_go_migrations ORDER BY 1`)), pgx.RowTo[int64])
		if err != nil || !slices.Equal(goVersions, goLine()) {
			t.Errorf("versions of our own line = %v, %v; want %v", goVersions, err, goLine())
		}
		b, err := postgres.FromPool(pool, postgres.Options{Schema: schema, NamespaceID: "n"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf"}); err != nil {
			t.Errorf("create in the new schema: %v", err)
		}
	})

	t.Run("the schema has OpenWorkflow's keys and indexes", func(t *testing.T) {
		t.Parallel()
		pool, schema := migratedSchema(t)
		// OpenWorkflow's tables only: those of our own line (go migration
		// 5's hooks and streams) have keys and indexes of their own.
		fks, err := pgx.CollectRows(must(pool.Query(ctx, `SELECT conname || ':' || convalidated FROM pg_constraint
			WHERE connamespace = $1::regnamespace AND contype = 'f'
			AND conrelid IN (SELECT c.oid FROM pg_class AS c WHERE c.relnamespace = $1::regnamespace
				AND c.relname IN ('workflow_runs', 'step_attempts', 'workflow_signals'))
			ORDER BY 1`, pgx.Identifier{schema}.Sanitize())), pgx.RowTo[string])
		wantFKs := []string{"step_attempts_child_workflow_run_fk:true", "step_attempts_workflow_run_fk:true", "workflow_runs_parent_step_attempt_fk:true"}
		if err != nil || !slices.Equal(fks, wantFKs) {
			t.Errorf("foreign keys = %v, %v; want %v", fks, err, wantFKs)
		}
		idx, err := pgx.CollectRows(must(pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexname NOT LIKE '%pkey'
			AND tablename IN ('workflow_runs', 'step_attempts', 'workflow_signals')
			AND indexname NOT LIKE 'workflow\_runs\_go\_%' ORDER BY 1`, schema)), pgx.RowTo[string])
		wantIdx := []string{
			"step_attempts_child_workflow_run_idx", "step_attempts_signal_wait_idx",
			"step_attempts_workflow_run_created_at_idx", "step_attempts_workflow_run_step_name_created_at_idx",
			"workflow_runs_created_at_desc_idx", "workflow_runs_parent_step_idx",
			"workflow_runs_status_available_at_created_at_idx", "workflow_runs_status_created_at_desc_idx",
			"workflow_runs_workflow_name_idempotency_key_created_at_idx", "workflow_runs_workflow_name_status_created_at_desc_idx",
			"workflow_signals_idempotency_idx", "workflow_signals_step_attempt_idx",
		}
		if err != nil || !slices.Equal(idx, wantIdx) {
			t.Errorf("indexes = %v, %v\nwant %v", idx, err, wantIdx)
		}
		ours, err := pgx.CollectRows(must(pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = $1
			AND indexname LIKE 'workflow\_runs\_go\_%' ORDER BY 1`, schema)), pgx.RowTo[string])
		// Go migration 1 made three list indexes besides the deadline one;
		// go migration 2 dropped them (their cost on every run
		// transition). Go migration 8 added the partial indexes of
		// priorities and limits.
		wantOurs := oursIndexes
		if err != nil || !slices.Equal(ours, wantOurs) {
			t.Errorf("indexes of our own migration line = %v, %v\nwant %v", ours, err, wantOurs)
		}
	})

	t.Run("go migration 2 drops the list indexes of a database at go version 1, and later ones apply", func(t *testing.T) {
		t.Parallel()
		pool, schema := migratedSchema(t)
		// Back to go version 1: its three list indexes, and no version 2.
		q := pgx.Identifier{schema}.Sanitize()
		if _, err := pool.Exec(ctx, `
			CREATE INDEX "workflow_runs_go_status_list_idx" ON `+q+`."workflow_runs" ("namespace_id",
			  (CASE "status" WHEN 'succeeded' THEN 'completed' WHEN 'sleeping' THEN 'running' ELSE "status" END),
			  "created_at" DESC, "id" DESC);
			CREATE INDEX "workflow_runs_go_name_list_idx" ON `+q+`."workflow_runs"
			  ("namespace_id", "workflow_name", "created_at" DESC, "id" DESC);
			CREATE INDEX "workflow_runs_go_name_status_list_idx" ON `+q+`."workflow_runs" ("namespace_id", "workflow_name",
			  (CASE "status" WHEN 'succeeded' THEN 'completed' WHEN 'sleeping' THEN 'running' ELSE "status" END),
			  "created_at" DESC, "id" DESC);
			DELETE FROM `+q+`."openworkflow_go_migrations" WHERE "version" >= 2`); err != nil {
			t.Fatal(err)
		}
		if err := postgres.Migrate(ctx, pool, schema); err != nil {
			t.Fatal(err)
		}
		ours, err := pgx.CollectRows(must(pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = $1
			AND indexname LIKE 'workflow\_runs\_go\_%' ORDER BY 1`, schema)), pgx.RowTo[string])
		if err != nil || !slices.Equal(ours, oursIndexes) {
			t.Errorf("indexes of our own migration line after the upgrade = %v, %v", ours, err)
		}
		goVersions, err := pgx.CollectRows(must(pool.Query(ctx, `SELECT version FROM `+q+`.openworkflow_go_migrations ORDER BY 1`)), pgx.RowTo[int64])
		if err != nil || !slices.Equal(goVersions, goLine()) {
			t.Errorf("versions of our own line after the upgrade = %v, %v; want %v", goVersions, err, goLine())
		}
	})

	// This SDK's line may have gaps (changes developed side by side take
	// their numbers ahead of landing), so a version below the highest
	// recorded one is still applied when it is missing, unlike
	// OpenWorkflow's line (MAX(version)).
	t.Run("our own line applies every version not recorded, below the highest recorded one too", func(t *testing.T) {
		t.Parallel()
		pool, schema := migratedSchema(t)
		q := pgx.Identifier{schema}.Sanitize()
		if _, err := pool.Exec(ctx, `DROP TABLE `+q+`."workflow_definitions";
		DELETE FROM `+q+`."openworkflow_go_migrations" WHERE "version" = 4;
		INSERT INTO `+q+`."openworkflow_go_migrations" ("version") VALUES (99)`); err != nil {
			t.Fatal(err)
		}
		if err := postgres.Migrate(ctx, pool, schema); err != nil {
			t.Fatalf("migrate again: %v", err)
		}
		got, err := pgx.CollectRows(must(pool.Query(ctx, `SELECT version FROM `+q+`.openworkflow_go_migrations ORDER BY 1`)), pgx.RowTo[int64])
		if want := append(goLine(), 99); err != nil || !slices.Equal(got, want) {
			t.Errorf("versions of our own line = %v, %v; want %v", got, err, want)
		}
		b, err := postgres.FromPool(pool, postgres.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.ListDefinitions(ctx, backend.ListDefinitionsParams{}); err != nil {
			t.Errorf("the definitions table was not created again: %v", err)
		}
	})
}
