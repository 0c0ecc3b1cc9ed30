-- The migrations' bookkeeping. The migration scripts themselves are in
-- migrations/ (OpenWorkflow's numbered line, shared with the TypeScript
-- SDK) and migrations_go/ (this SDK's own line).

-- name: migrations_table_exists
-- migrations_table_exists and openworkflow_migration_version find the
-- schema version (−1 for a fresh file).
SELECT COUNT(*) FROM "sqlite_master"
WHERE "type" = 'table' AND "name" = 'openworkflow_migrations'

-- name: openworkflow_migration_version
SELECT COALESCE(MAX("version"), -1) FROM "openworkflow_migrations"

-- name: create_deadline_index
-- Keeps the claim's deadline sweep (fail_expired_runs) an index probe:
-- without it every claim read every live run of the namespace (about
-- 45 ms with 200,000 pending runs). It is this SDK's own, outside the
-- numbered line OpenWorkflow's SQLite migrations share with the
-- TypeScript SDK, so it is created if missing at every open (as the
-- PostgreSQL backend's workflow_runs_go_deadline_idx, in its own line).
-- Its predicate repeats the sweep's terms, which SQLite requires to use a
-- partial index.
CREATE INDEX IF NOT EXISTS "workflow_runs_go_deadline_idx"
ON "workflow_runs" ("namespace_id", "deadline_at")
WHERE "deadline_at" IS NOT NULL AND "status" IN {{non_terminal_statuses}}

-- name: go_migrations_table_exists
-- go_migrations_table_exists and go_migration_versions read the versions
-- recorded of this SDK's own line (it may have gaps: every version not
-- recorded is applied).
SELECT COUNT(*) FROM "sqlite_master"
WHERE "type" = 'table' AND "name" = 'openworkflow_go_migrations'

-- name: go_migration_versions
SELECT "version" FROM "openworkflow_go_migrations"
