-- go 8 · concurrency and rate limits, and priorities, as PostgreSQL's go
-- migration 8 (backend/postgres/migrations_go/0008_limits.sql says why
-- each column, table and index is so). Four columns of this SDK's own on
-- workflow_runs, which the TypeScript SDK never writes (its inserts name
-- their columns and take the defaults) and ignores on read; their partial
-- indexes are created at open with this SDK's other indexes on
-- OpenWorkflow's tables (create_limit_indexes in sql/migrate.sql). Times
-- are ISO-8601 text with milliseconds, as in OpenWorkflow's SQLite tables.
-- And a schedule's priority, the priority of the runs it starts.
ALTER TABLE "workflow_runs" ADD COLUMN "go_priority" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "workflow_runs" ADD COLUMN "go_concurrency_key" TEXT;
ALTER TABLE "workflow_runs" ADD COLUMN "go_queued_at" TEXT;
ALTER TABLE "workflow_runs" ADD COLUMN "go_admitted_at" TEXT;

CREATE TABLE IF NOT EXISTS "workflow_limits" (
  "namespace_id" TEXT NOT NULL,
  "workflow_name" TEXT NOT NULL,
  "concurrency" INTEGER,
  "concurrency_per_key" INTEGER,
  "rate_limit" INTEGER,
  "rate_period_ms" INTEGER,
  "created_at" TEXT NOT NULL,
  "updated_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "workflow_name")
);

CREATE TABLE IF NOT EXISTS "workflow_limit_starts" (
  "namespace_id" TEXT NOT NULL,
  "workflow_name" TEXT NOT NULL,
  "concurrency_key" TEXT NOT NULL,
  "started_at" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "workflow_name", "concurrency_key", "started_at", "workflow_run_id")
);

CREATE INDEX IF NOT EXISTS "workflow_limit_starts_started_idx"
ON "workflow_limit_starts" ("namespace_id", "workflow_name", "started_at");

ALTER TABLE "workflow_schedules" ADD COLUMN "priority" INTEGER NOT NULL DEFAULT 0;

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (8);
