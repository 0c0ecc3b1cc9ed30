-- Schedules (backend.ScheduleStore, schedules.go), in workflow_schedules
-- and workflow_schedule_runs (go migration 7). The cron and overlap logic
-- is in Go (backend.FireLockedSchedule); these statements read, lock and
-- write the rows it works on. A fire locks its schedule's row FOR UPDATE
-- SKIP LOCKED: a worker that finds another firing it moves on rather than
-- waiting to find the tick gone.

-- fragment: schedule_columns
-- The workflow_schedules columns, read as "s", in the order scanSchedule
-- reads them.
s."namespace_id", s."name", s."workflow_name", s."version", s."cron", s."time_zone",
  s."input", s."overlap", s."catchup_window_ms", s."paused", s."next_fire_at",
  s."buffered_at", s."last_run_id", s."last_fire_at", s."started", s."skipped",
  s."missed", s."created_at", s."updated_at", s."priority",
  s."last_error", s."last_error_at", s."failures", s."retry_at"

-- fragment: schedule_changed
-- pg_notify announcing that schedule "s" changed (kind 'schedule'), so idle
-- workers look at its next tick.
pg_notify('openworkflow', json_build_object(
  'schema', {{schema_literal}}, 'ns', s."namespace_id", 'kind', 'schedule', 'id', s."name")::text)

-- name: put_schedule
-- Creates schedule $2 of namespace $1, or updates it: the workflow ($3,
-- $4), input ($7), overlap ($8), catch-up window ($9 ms) and priority
-- ($13) are replaced;
-- next_fire_at ($11, the cron's first tick after now) and the buffered
-- tick are kept unless the cron ($5) or the time zone ($6) changed; paused
-- ($10) applies only to a new schedule (an operator's pause survives a
-- redeploy). A put clears the last error and the back-off (go migration
-- 9): the schedule, fixed, fires when due. Every SET expression reads the
-- row as it was.
INSERT INTO {{schema}}."workflow_schedules" AS s (
  "namespace_id", "name", "workflow_name", "version", "cron", "time_zone", "input",
  "overlap", "catchup_window_ms", "paused", "next_fire_at", "started", "skipped", "missed",
  "created_at", "updated_at", "priority"
)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0, 0, 0, {{now($12)}}, {{now($12)}}, $13)
ON CONFLICT ("namespace_id", "name") DO UPDATE SET
  "workflow_name" = EXCLUDED."workflow_name",
  "priority" = EXCLUDED."priority",
  "version" = EXCLUDED."version",
  "input" = EXCLUDED."input",
  "overlap" = EXCLUDED."overlap",
  "catchup_window_ms" = EXCLUDED."catchup_window_ms",
  "next_fire_at" = CASE WHEN s."cron" = EXCLUDED."cron" AND s."time_zone" = EXCLUDED."time_zone"
    THEN s."next_fire_at" ELSE EXCLUDED."next_fire_at" END,
  "buffered_at" = CASE WHEN s."cron" = EXCLUDED."cron" AND s."time_zone" = EXCLUDED."time_zone"
    THEN s."buffered_at" END,
  "cron" = EXCLUDED."cron",
  "time_zone" = EXCLUDED."time_zone",
  "updated_at" = EXCLUDED."updated_at",
  "last_error" = NULL, "last_error_at" = NULL, "failures" = 0, "retry_at" = NULL
RETURNING {{schedule_columns}}, {{schedule_changed}} AS "notified"

-- name: get_schedule
SELECT {{schedule_columns}}
FROM {{schema}}."workflow_schedules" AS s
WHERE s."namespace_id" = $1 AND s."name" = $2

-- name: list_schedules
-- One page of namespace $1's schedules by name: $2 is the After cursor
-- when not NULL, $3 the page size (one more than the caller's, to know
-- whether another page follows). One range of the primary key.
SELECT {{schedule_columns}}
FROM {{schema}}."workflow_schedules" AS s
WHERE s."namespace_id" = $1 AND ($2::text IS NULL OR s."name" > $2)
ORDER BY s."name"
LIMIT $3

-- name: delete_schedule
-- Deletes schedule $2; its rows of workflow_schedule_runs go with it (the
-- runs stay).
DELETE FROM {{schema}}."workflow_schedules" AS s
WHERE s."namespace_id" = $1 AND s."name" = $2
RETURNING s."name"

-- name: pause_schedule
-- Pauses schedule $2; updated_at moves only when it was running.
UPDATE {{schema}}."workflow_schedules" AS s
SET "paused" = TRUE, "updated_at" = CASE WHEN s."paused" THEN s."updated_at" ELSE {{now($3)}} END
WHERE s."namespace_id" = $1 AND s."name" = $2
RETURNING {{schedule_columns}}

-- name: lock_schedule
-- Schedule $2 of namespace $1, locked until the transaction ends (resume
-- and trigger wait for a fire in progress), and the statement's clock.
SELECT {{schedule_columns}}, {{now($3)}}
FROM {{schema}}."workflow_schedules" AS s
WHERE s."namespace_id" = $1 AND s."name" = $2
FOR UPDATE

-- name: lock_due_schedule
-- lock_schedule for a fire: a schedule another transaction holds is
-- skipped (no row), since that one is firing it.
SELECT {{schedule_columns}}, {{now($3)}}
FROM {{schema}}."workflow_schedules" AS s
WHERE s."namespace_id" = $1 AND s."name" = $2
FOR UPDATE SKIP LOCKED

-- name: resume_schedule
-- Resumes paused schedule $2 with next tick $3 and no buffered tick.
UPDATE {{schema}}."workflow_schedules" AS s
SET "paused" = FALSE, "next_fire_at" = $3, "buffered_at" = NULL, "updated_at" = {{now($4)}}
WHERE s."namespace_id" = $1 AND s."name" = $2
RETURNING {{schedule_columns}}, {{schedule_changed}} AS "notified"

-- name: due_schedules
-- Up to $2 running schedules of namespace $1 with something to fire: the
-- next tick has come (next_fire_idx's range), or a buffered tick's
-- blocking run (last_run_id, probed by primary key) is no longer pending
-- or running. A failing schedule backing off (retry_at to come) is left
-- out, so that it holds up neither itself nor the others.
(SELECT s."name" FROM {{schema}}."workflow_schedules" AS s
 WHERE s."namespace_id" = $1 AND NOT s."paused" AND s."next_fire_at" <= {{clock($3)}}
   AND (s."retry_at" IS NULL OR s."retry_at" <= {{clock($3)}})
 ORDER BY s."next_fire_at" LIMIT $2)
UNION
(SELECT s."name" FROM {{schema}}."workflow_schedules" AS s
 WHERE s."namespace_id" = $1 AND NOT s."paused" AND s."buffered_at" IS NOT NULL
   AND (s."retry_at" IS NULL OR s."retry_at" <= {{clock($3)}})
   AND NOT EXISTS (
     SELECT 1 FROM {{schema}}."workflow_runs" AS wr
     WHERE wr."namespace_id" = s."namespace_id" AND wr."id" = s."last_run_id"
       AND (wr."status" IN ('pending', 'running', 'sleeping')) IS TRUE)
 LIMIT $2)

-- name: next_schedule_fire
-- The earliest next tick of namespace $1's running schedules (a failing
-- one's no earlier than its retry_at), whether one not backing off holds
-- a buffered tick, and the statement's clock.
SELECT min(GREATEST(s."next_fire_at", s."retry_at")),
  COALESCE(bool_or(s."buffered_at" IS NOT NULL AND s."retry_at" IS NULL), FALSE), {{clock($2)}}
FROM {{schema}}."workflow_schedules" AS s
WHERE s."namespace_id" = $1 AND NOT s."paused"

-- name: run_active
-- Whether run $2 is pending or running (legacy sleeping included).
SELECT EXISTS (
  SELECT 1 FROM {{schema}}."workflow_runs" AS wr
  WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
    AND (wr."status" IN ('pending', 'running', 'sleeping')) IS TRUE)

-- name: tick_started
-- Whether schedule $2 has a run for tick $3 (tick_idx).
SELECT EXISTS (
  SELECT 1 FROM {{schema}}."workflow_schedule_runs" AS sr
  WHERE sr."namespace_id" = $1 AND sr."schedule_name" = $2 AND sr."scheduled_at" = $3
    AND NOT sr."triggered")

-- name: insert_schedule_run
-- Records run $3 of schedule $2 for tick $4 ($5: triggered rather than a
-- tick). tick_idx refuses a second run of one tick.
INSERT INTO {{schema}}."workflow_schedule_runs"
  ("namespace_id", "schedule_name", "workflow_run_id", "scheduled_at", "triggered", "created_at")
VALUES ($1, $2, $3, $4, $5, {{now($6)}})

-- name: save_schedule_state
-- Writes what a fire or a trigger changed of schedule $2; it succeeded, so
-- the last error and the back-off are cleared.
UPDATE {{schema}}."workflow_schedules" AS s
SET "next_fire_at" = $3, "buffered_at" = $4, "last_run_id" = $5, "last_fire_at" = $6,
    "started" = $7, "skipped" = $8, "missed" = $9, "updated_at" = {{now($10)}},
    "last_error" = NULL, "last_error_at" = NULL, "failures" = 0, "retry_at" = NULL
WHERE s."namespace_id" = $1 AND s."name" = $2

-- name: record_schedule_failure
-- Records that a fire of schedule $2 failed: message $3, failures in a row
-- $4, not fired again before $5 (the back-off), at the clock $6. Nothing
-- else of the schedule changes: its ticks wait for the retry.
UPDATE {{schema}}."workflow_schedules" AS s
SET "last_error" = $3, "last_error_at" = {{now($6)}}, "failures" = $4, "retry_at" = $5
WHERE s."namespace_id" = $1 AND s."name" = $2
