-- go 15 · updates of runs, as PostgreSQL's go migration 15
-- (backend/postgres/migrations_go/0015_run_updates.sql says why): one row
-- per update of a run, admitted by Client.UpdateRun and settled (rejected,
-- completed, failed) by the worker at the run's next wait point. The
-- primary key makes the update id the caller's idempotency key within its
-- run; seq orders one run's updates in admission order.
CREATE TABLE IF NOT EXISTS "go_run_updates" (
  "namespace_id" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "name" TEXT NOT NULL,
  "seq" INTEGER NOT NULL,
  "input" TEXT,
  "state" TEXT NOT NULL,
  "result" TEXT,
  "error" TEXT,
  "created_at" TEXT NOT NULL,
  "settled_at" TEXT,
  PRIMARY KEY ("namespace_id", "workflow_run_id", "id")
);

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (15);
