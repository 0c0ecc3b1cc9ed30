-- go 12 · pausing a run, as PostgreSQL's go migration 12
-- (backend/postgres/migrations_go/0012_pause.sql says why each column is
-- so). Three columns of this SDK's own on workflow_runs, which the
-- TypeScript SDK never writes; times are ISO-8601 text with milliseconds,
-- as in OpenWorkflow's SQLite tables.
ALTER TABLE "workflow_runs" ADD COLUMN "go_paused_at" TEXT;
ALTER TABLE "workflow_runs" ADD COLUMN "go_pause_reason" TEXT;
ALTER TABLE "workflow_runs" ADD COLUMN "go_paused_due_at" TEXT;

-- Every write that sets available_at on a paused run (this SDK's parks,
-- reschedules, heartbeats, releases and wake-ups, and those of a
-- TypeScript worker sharing the file) has it moved to go_paused_due_at by
-- this trigger, in the same statement, so that no claim sees the run.
-- (SQLite's recursive triggers are off: its own update does not fire it
-- again.) A wake-up writes now there: the run is due on resume.
CREATE TRIGGER IF NOT EXISTS "workflow_runs_go_paused_hold"
AFTER UPDATE OF "available_at" ON "workflow_runs"
FOR EACH ROW WHEN NEW."go_paused_at" IS NOT NULL AND NEW."available_at" IS NOT NULL
BEGIN
  UPDATE "workflow_runs"
  SET "go_paused_due_at" = NEW."available_at", "available_at" = NULL
  WHERE "namespace_id" = NEW."namespace_id" AND "id" = NEW."id";
END;

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (12);
