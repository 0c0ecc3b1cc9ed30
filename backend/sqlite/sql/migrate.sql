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

-- name: create_priority_index
-- The indexes of go migration 8 (priorities and limits) on
-- workflow_runs, created if missing at every open as
-- create_deadline_index is, after the migration added their columns. All
-- partial, so runs without a priority, limits or admission have no entry
-- (PostgreSQL's go migration 8 says what each serves). Their predicates
-- are repeated, term for term, by the statements that use them, as SQLite
-- requires. This one: the claim's due runs of a priority other than 0,
-- of every claimable status, in claim order (priority, then due time), so
-- that a run of priority 10 woken from a sleep is read before the runs of
-- priority 0 (as PostgreSQL's go migration 10).
CREATE INDEX IF NOT EXISTS "workflow_runs_go_claim_priority_idx"
ON "workflow_runs" ("namespace_id", "go_priority" DESC, "available_at", "created_at", "id")
WHERE "status" IN {{non_terminal_statuses}} AND "go_priority" <> 0

-- name: drop_pending_priority_index
-- The index create_priority_index made before the claim ordered runs
-- already started by priority: pending runs only. Dropped at open.
DROP INDEX IF EXISTS "workflow_runs_go_priority_idx"

-- name: create_queue_index
-- The runs waiting for admission of one workflow, in claim order: those
-- whose go_queued_at is set (the statements reading it test the status
-- outside the index scan, with SQLite's unary +, so that OpenWorkflow's
-- (namespace, workflow, status, created_at) index cannot compete).
CREATE INDEX IF NOT EXISTS "workflow_runs_go_queue_idx"
ON "workflow_runs" ("namespace_id", "workflow_name", "go_priority" DESC, "go_queued_at", "created_at", "id")
WHERE "go_queued_at" IS NOT NULL

-- name: create_queue_key_index
-- The same per concurrency key.
CREATE INDEX IF NOT EXISTS "workflow_runs_go_queue_key_idx"
ON "workflow_runs" ("namespace_id", "workflow_name", "go_concurrency_key", "go_priority" DESC, "go_queued_at", "created_at", "id")
WHERE "go_queued_at" IS NOT NULL

-- name: create_admitted_index
-- The runs admitted and not finished, counted per workflow and key.
CREATE INDEX IF NOT EXISTS "workflow_runs_go_admitted_idx"
ON "workflow_runs" ("namespace_id", "workflow_name", "go_concurrency_key")
WHERE "go_admitted_at" IS NOT NULL AND "status" IN {{non_terminal_statuses}}
