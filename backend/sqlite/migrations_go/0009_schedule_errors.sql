-- go 9 · a schedule's last error, as PostgreSQL's go migration 9
-- (backend/postgres/migrations_go/0009_schedule_errors.sql says what each
-- column is for). Times are ISO-8601 text with milliseconds.
ALTER TABLE "workflow_schedules" ADD COLUMN "last_error" TEXT;
ALTER TABLE "workflow_schedules" ADD COLUMN "last_error_at" TEXT;
ALTER TABLE "workflow_schedules" ADD COLUMN "failures" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "workflow_schedules" ADD COLUMN "retry_at" TEXT;

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (9);
