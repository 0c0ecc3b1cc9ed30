-- go 7 · schedules (backend.ScheduleStore): each starts runs of a workflow
-- on a cron expression. Tables of this SDK's own line: OpenWorkflow has no
-- schedules, and the runs a schedule starts are ordinary rows of
-- workflow_runs (their context records the schedule), which TypeScript
-- workers execute like any other. Nothing here changes a table of
-- OpenWorkflow's.
--
-- workflow_schedules: one row per schedule, named within its namespace.
--   - The primary key (namespace_id, name) is Get's, Put's upsert's and
--     every fire's lookup, and gives List its order.
--   - next_fire_at is the next tick. A fire locks the row (FOR UPDATE SKIP
--     LOCKED) and advances next_fire_at in the transaction that inserts
--     the tick's run: of the workers that saw a tick due, one starts it.
--   - next_fire_idx (partial: running schedules only) is the due check's
--     range and the next tick's MIN, which every idle worker asks.
--   - input is text, kept as given (jsonb would reorder keys and refuse
--     U+0000, see go migration 3); the run's input is written from it.
--   - buffered_at is the tick buffer_one keeps while the run of
--     last_run_id is still pending or running; started, skipped and missed
--     count what became of the ticks.
CREATE TABLE IF NOT EXISTS {{schema}}."workflow_schedules" (
  "namespace_id" TEXT NOT NULL,
  "name" TEXT NOT NULL,
  "workflow_name" TEXT NOT NULL,
  "version" TEXT,
  "cron" TEXT NOT NULL,
  "time_zone" TEXT NOT NULL,
  "input" TEXT,
  "overlap" TEXT NOT NULL CHECK ("overlap" IN ('skip', 'buffer_one', 'allow_all')),
  "catchup_window_ms" BIGINT NOT NULL,
  "paused" BOOLEAN NOT NULL,
  "next_fire_at" TIMESTAMPTZ NOT NULL,
  "buffered_at" TIMESTAMPTZ,
  "last_run_id" TEXT,
  "last_fire_at" TIMESTAMPTZ,
  "started" BIGINT NOT NULL,
  "skipped" BIGINT NOT NULL,
  "missed" BIGINT NOT NULL,
  "created_at" TIMESTAMPTZ NOT NULL,
  "updated_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "name")
);

CREATE INDEX IF NOT EXISTS "workflow_schedules_next_fire_idx"
ON {{schema}}."workflow_schedules" ("namespace_id", "next_fire_at")
WHERE NOT "paused";

-- workflow_schedule_runs: one row per run a schedule started, with the
-- tick it is for.
--   - tick_idx (UNIQUE, partial: ticks only, not triggers) is the unique
--     key of (schedule, tick time): a tick whose run exists is never
--     started again, whatever next_fire_at says.
--   - The primary key (namespace_id, schedule_name, scheduled_at,
--     workflow_run_id) lists a schedule's runs by tick and serves the
--     cascade of a deleted schedule.
--   - run_idx serves the cascade of a deleted run (retention, or by hand):
--     the row goes with its run.
CREATE TABLE IF NOT EXISTS {{schema}}."workflow_schedule_runs" (
  "namespace_id" TEXT NOT NULL,
  "schedule_name" TEXT NOT NULL,
  "scheduled_at" TIMESTAMPTZ NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "triggered" BOOLEAN NOT NULL,
  "created_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "schedule_name", "scheduled_at", "workflow_run_id"),
  CONSTRAINT "workflow_schedule_runs_schedule_fk" FOREIGN KEY ("namespace_id", "schedule_name")
    REFERENCES {{schema}}."workflow_schedules" ("namespace_id", "name") ON DELETE CASCADE,
  CONSTRAINT "workflow_schedule_runs_workflow_run_fk" FOREIGN KEY ("namespace_id", "workflow_run_id")
    REFERENCES {{schema}}."workflow_runs" ("namespace_id", "id") ON DELETE CASCADE
);

CREATE UNIQUE INDEX IF NOT EXISTS "workflow_schedule_runs_tick_idx"
ON {{schema}}."workflow_schedule_runs" ("namespace_id", "schedule_name", "scheduled_at")
WHERE NOT "triggered";

CREATE INDEX IF NOT EXISTS "workflow_schedule_runs_run_idx"
ON {{schema}}."workflow_schedule_runs" ("namespace_id", "workflow_run_id");

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (7)
ON CONFLICT DO NOTHING;
