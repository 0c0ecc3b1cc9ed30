-- go 7 · schedules (backend.ScheduleStore), as PostgreSQL's go migration 7
-- (backend/postgres/migrations_go says why each table and index is so):
-- tables of this SDK's own, never read by the TypeScript SDK, whose
-- workers execute the runs a schedule starts like any other. Times are
-- ISO-8601 text with milliseconds, booleans 0 or 1, the input JSON text
-- kept as given. A fire runs in a BEGIN IMMEDIATE transaction, so it holds
-- the file's write lock from its first read of the schedule's row: of the
-- workers that saw a tick due, one starts it, and the others find
-- next_fire_at moved on.
CREATE TABLE IF NOT EXISTS "workflow_schedules" (
  "namespace_id" TEXT NOT NULL,
  "name" TEXT NOT NULL,
  "workflow_name" TEXT NOT NULL,
  "version" TEXT,
  "cron" TEXT NOT NULL,
  "time_zone" TEXT NOT NULL,
  "input" TEXT,
  "overlap" TEXT NOT NULL CHECK ("overlap" IN ('skip', 'buffer_one', 'allow_all')),
  "catchup_window_ms" INTEGER NOT NULL,
  "paused" INTEGER NOT NULL,
  "next_fire_at" TEXT NOT NULL,
  "buffered_at" TEXT,
  "last_run_id" TEXT,
  "last_fire_at" TEXT,
  "started" INTEGER NOT NULL,
  "skipped" INTEGER NOT NULL,
  "missed" INTEGER NOT NULL,
  "created_at" TEXT NOT NULL,
  "updated_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "name")
);

CREATE INDEX IF NOT EXISTS "workflow_schedules_next_fire_idx"
ON "workflow_schedules" ("namespace_id", "next_fire_at")
WHERE "paused" = 0;

CREATE TABLE IF NOT EXISTS "workflow_schedule_runs" (
  "namespace_id" TEXT NOT NULL,
  "schedule_name" TEXT NOT NULL,
  "scheduled_at" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "triggered" INTEGER NOT NULL,
  "created_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "schedule_name", "scheduled_at", "workflow_run_id"),
  CONSTRAINT "workflow_schedule_runs_schedule_fk" FOREIGN KEY ("namespace_id", "schedule_name")
    REFERENCES "workflow_schedules" ("namespace_id", "name") ON DELETE CASCADE,
  CONSTRAINT "workflow_schedule_runs_workflow_run_fk" FOREIGN KEY ("namespace_id", "workflow_run_id")
    REFERENCES "workflow_runs" ("namespace_id", "id") ON DELETE CASCADE
);

-- The unique key of (schedule, tick time): ticks only, not triggers.
CREATE UNIQUE INDEX IF NOT EXISTS "workflow_schedule_runs_tick_idx"
ON "workflow_schedule_runs" ("namespace_id", "schedule_name", "scheduled_at")
WHERE "triggered" = 0;

-- The cascade of a deleted run.
CREATE INDEX IF NOT EXISTS "workflow_schedule_runs_run_idx"
ON "workflow_schedule_runs" ("namespace_id", "workflow_run_id");

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (7);
