-- Migration 1: the two core tables, with OpenWorkflow's columns. Timestamps
-- are fixed-width ISO-8601 UTC TEXT ("2006-01-02T15:04:05.000Z") so that
-- lexicographic comparison is chronological; JSON is TEXT, SQL NULL for
-- absent values. SQLite can only declare foreign keys with the table, so
-- the three keys PostgreSQL adds in migrations 2 and 3 are declared here
-- (workflow_runs references step_attempts, created just after, hence the
-- deferred check).
PRAGMA defer_foreign_keys = ON;

CREATE TABLE IF NOT EXISTS "workflow_runs" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  --
  "workflow_name" TEXT NOT NULL,
  "version" TEXT,
  "status" TEXT NOT NULL,
  "idempotency_key" TEXT,
  "config" TEXT NOT NULL,
  "context" TEXT,
  "input" TEXT,
  "output" TEXT,
  "error" TEXT,
  "attempts" INTEGER NOT NULL,
  "parent_step_attempt_namespace_id" TEXT,
  "parent_step_attempt_id" TEXT,
  "worker_id" TEXT,
  "available_at" TEXT,
  "deadline_at" TEXT,
  "started_at" TEXT,
  "finished_at" TEXT,
  "created_at" TEXT NOT NULL,
  "updated_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "id"),
  FOREIGN KEY ("parent_step_attempt_namespace_id", "parent_step_attempt_id")
    REFERENCES "step_attempts" ("namespace_id", "id")
    ON DELETE SET NULL
);

CREATE TABLE IF NOT EXISTS "step_attempts" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  --
  "workflow_run_id" TEXT NOT NULL,
  "step_name" TEXT NOT NULL,
  "kind" TEXT NOT NULL,
  "status" TEXT NOT NULL,
  "config" TEXT NOT NULL,
  "context" TEXT,
  "output" TEXT,
  "error" TEXT,
  "child_workflow_run_namespace_id" TEXT,
  "child_workflow_run_id" TEXT,
  "started_at" TEXT,
  "finished_at" TEXT,
  "created_at" TEXT NOT NULL,
  "updated_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "id"),
  FOREIGN KEY ("namespace_id", "workflow_run_id")
    REFERENCES "workflow_runs" ("namespace_id", "id")
    ON DELETE CASCADE,
  FOREIGN KEY ("child_workflow_run_namespace_id", "child_workflow_run_id")
    REFERENCES "workflow_runs" ("namespace_id", "id")
    ON DELETE SET NULL
);

INSERT OR IGNORE INTO "openworkflow_migrations" ("version") VALUES (1);
