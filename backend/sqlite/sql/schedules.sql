-- Schedules (backend.ScheduleStore, schedules.go), in workflow_schedules
-- and workflow_schedule_runs (go migration 7), as PostgreSQL's
-- sql/schedules.sql. The cron and overlap logic is in Go
-- (backend.FireLockedSchedule); these statements read and write the rows
-- it works on. Every write runs in a BEGIN IMMEDIATE transaction holding
-- the file's write lock from its first read, so a fire reads a schedule
-- nobody else changes until it commits.

-- fragment: schedule_columns
-- The workflow_schedules columns, in the order scanSchedule reads them.
"namespace_id", "name", "workflow_name", "version", "cron", "time_zone",
  "input", "overlap", "catchup_window_ms", "paused", "next_fire_at",
  "buffered_at", "last_run_id", "last_fire_at", "started", "skipped",
  "missed", "created_at", "updated_at", "priority",
  "last_error", "last_error_at", "failures", "retry_at"

-- name: put_schedule
-- Creates schedule :name, or updates it: the workflow, input, overlap,
-- catch-up window and priority are replaced; next_fire_at (:next_fire_at, the cron's
-- first tick after now) and the buffered tick are kept unless the cron or
-- the time zone changed; :paused applies only to a new schedule (an
-- operator's pause survives a redeploy). A put clears the last error and
-- the back-off (go migration 9). Every SET expression reads the row as it
-- was.
INSERT INTO "workflow_schedules" AS s (
  "namespace_id", "name", "workflow_name", "version", "cron", "time_zone", "input",
  "overlap", "catchup_window_ms", "paused", "next_fire_at", "started", "skipped", "missed",
  "created_at", "updated_at", "priority"
)
VALUES (:ns, :name, :workflow_name, :version, :cron, :time_zone, :input,
  :overlap, :catchup_window_ms, :paused, :next_fire_at, 0, 0, 0, :now, :now, :priority)
ON CONFLICT ("namespace_id", "name") DO UPDATE SET
  "workflow_name" = excluded."workflow_name",
  "priority" = excluded."priority",
  "version" = excluded."version",
  "input" = excluded."input",
  "overlap" = excluded."overlap",
  "catchup_window_ms" = excluded."catchup_window_ms",
  "next_fire_at" = CASE WHEN s."cron" = excluded."cron" AND s."time_zone" = excluded."time_zone"
    THEN s."next_fire_at" ELSE excluded."next_fire_at" END,
  "buffered_at" = CASE WHEN s."cron" = excluded."cron" AND s."time_zone" = excluded."time_zone"
    THEN s."buffered_at" END,
  "cron" = excluded."cron",
  "time_zone" = excluded."time_zone",
  "updated_at" = excluded."updated_at",
  "last_error" = NULL, "last_error_at" = NULL, "failures" = 0, "retry_at" = NULL
RETURNING {{schedule_columns}}

-- name: get_schedule
SELECT {{schedule_columns}} FROM "workflow_schedules"
WHERE "namespace_id" = :ns AND "name" = :name

-- name: list_schedules
-- One page by name: :after is the After cursor when not NULL, :limit one
-- more than the caller's page, to know whether another follows.
SELECT {{schedule_columns}} FROM "workflow_schedules"
WHERE "namespace_id" = :ns AND (:after IS NULL OR "name" > :after)
ORDER BY "name"
LIMIT :limit

-- name: delete_schedule
-- Deletes schedule :name; its rows of workflow_schedule_runs go with it
-- (the runs stay).
DELETE FROM "workflow_schedules" WHERE "namespace_id" = :ns AND "name" = :name

-- name: pause_schedule
-- Pauses schedule :name; updated_at moves only when it was running.
UPDATE "workflow_schedules"
SET "paused" = 1, "updated_at" = CASE WHEN "paused" = 1 THEN "updated_at" ELSE :now END
WHERE "namespace_id" = :ns AND "name" = :name
RETURNING {{schedule_columns}}

-- name: resume_schedule
-- Resumes paused schedule :name with next tick :next_fire_at and no
-- buffered tick.
UPDATE "workflow_schedules"
SET "paused" = 0, "next_fire_at" = :next_fire_at, "buffered_at" = NULL, "updated_at" = :now
WHERE "namespace_id" = :ns AND "name" = :name
RETURNING {{schedule_columns}}

-- name: due_schedules
-- Up to :limit running schedules with something to fire: the next tick
-- has come (next_fire_idx's range), or a buffered tick's blocking run
-- (last_run_id) is no longer pending or running. A failing schedule
-- backing off (retry_at to come) is left out.
SELECT "name" FROM (
  SELECT "name" FROM "workflow_schedules"
  WHERE "namespace_id" = :ns AND "paused" = 0 AND "next_fire_at" <= :now
    AND ("retry_at" IS NULL OR "retry_at" <= :now)
  ORDER BY "next_fire_at" LIMIT :limit
)
UNION
SELECT "name" FROM (
  SELECT s."name" FROM "workflow_schedules" AS s
  WHERE s."namespace_id" = :ns AND s."paused" = 0 AND s."buffered_at" IS NOT NULL
    AND (s."retry_at" IS NULL OR s."retry_at" <= :now)
    AND NOT EXISTS (
      SELECT 1 FROM "workflow_runs" AS wr
      WHERE wr."namespace_id" = s."namespace_id" AND wr."id" = s."last_run_id"
        AND wr."status" IN {{non_terminal_statuses}})
  LIMIT :limit
)

-- name: next_schedule_fire
-- The earliest next tick of the running schedules (a failing one's no
-- earlier than its retry_at; the times are text of one layout, so max
-- orders them) and whether one not backing off holds a buffered tick.
SELECT min(max("next_fire_at", COALESCE("retry_at", ''))),
  COALESCE(max("buffered_at" IS NOT NULL AND "retry_at" IS NULL), 0)
FROM "workflow_schedules"
WHERE "namespace_id" = :ns AND "paused" = 0

-- name: run_active
-- Whether run :id is pending or running (legacy sleeping included).
SELECT EXISTS (
  SELECT 1 FROM "workflow_runs"
  WHERE "namespace_id" = :ns AND "id" = :id AND "status" IN {{non_terminal_statuses}})

-- name: tick_started
-- Whether schedule :name has a run for tick :scheduled_at (tick_idx).
SELECT EXISTS (
  SELECT 1 FROM "workflow_schedule_runs"
  WHERE "namespace_id" = :ns AND "schedule_name" = :name AND "scheduled_at" = :scheduled_at
    AND "triggered" = 0)

-- name: insert_schedule_run
-- Records run :run_id of schedule :name for tick :scheduled_at
-- (:triggered: triggered rather than a tick). tick_idx refuses a second
-- run of one tick.
INSERT INTO "workflow_schedule_runs"
  ("namespace_id", "schedule_name", "workflow_run_id", "scheduled_at", "triggered", "created_at")
VALUES (:ns, :name, :run_id, :scheduled_at, :triggered, :now)

-- name: save_schedule_state
-- Writes what a fire or a trigger changed of schedule :name; it
-- succeeded, so the last error and the back-off are cleared.
UPDATE "workflow_schedules"
SET "next_fire_at" = :next_fire_at, "buffered_at" = :buffered_at, "last_run_id" = :last_run_id,
    "last_fire_at" = :last_fire_at, "started" = :started, "skipped" = :skipped, "missed" = :missed,
    "updated_at" = :now,
    "last_error" = NULL, "last_error_at" = NULL, "failures" = 0, "retry_at" = NULL
WHERE "namespace_id" = :ns AND "name" = :name

-- name: record_schedule_failure
-- Records that a fire of schedule :name failed: message :error, failures
-- in a row :failures, not fired again before :retry_at (the back-off).
-- Nothing else of the schedule changes: its ticks wait for the retry.
UPDATE "workflow_schedules"
SET "last_error" = :error, "last_error_at" = :now, "failures" = :failures, "retry_at" = :retry_at
WHERE "namespace_id" = :ns AND "name" = :name
