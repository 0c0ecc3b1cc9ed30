-- Pausing and resuming runs (RunPauser, go migration 12). A paused run
-- keeps OpenWorkflow's status; it has available_at NULL, so that no claim
-- takes it (the TypeScript SDK's included), and go_queued_at NULL, so
-- that no admission takes it; its due time waits in go_paused_due_at.
-- Every statement that sets available_at redirects it there while
-- go_paused_at is set (the fragments due and paused_due below).

-- fragment: due(expr)
-- The available_at to write for run "wr": {{expr}}, or NULL while the run
-- is paused (the time goes to go_paused_due_at: paused_due).
CASE WHEN wr."go_paused_at" IS NULL THEN {{expr}} END

-- fragment: paused_due(expr)
-- The go_paused_due_at to write with due({{expr}}): {{expr}} while the run
-- is paused, else unchanged (NULL).
CASE WHEN wr."go_paused_at" IS NULL THEN wr."go_paused_due_at" ELSE {{expr}} END

-- fragment: paused_wake(at)
-- The go_paused_due_at of a paused run woken (a child's end, a signal, a
-- hook payload): now, unless it was due earlier; unchanged when the run is
-- not paused (wake_now then moves its available_at).
CASE
      WHEN wr."go_paused_at" IS NULL THEN wr."go_paused_due_at"
      WHEN wr."go_paused_due_at" IS NULL OR wr."go_paused_due_at" > {{clock({{at}})}} THEN {{now({{at}})}}
      ELSE wr."go_paused_due_at"
    END

-- name: pause_run
-- Pauses non-terminal run $2 with reason $3 (NULL: none), unless it is
-- paused already. Its due time is saved: available_at (a pending run's
-- start, a parked run's wake-up, an executing run's lease, which stays
-- with its worker) or, for a run waiting for admission, go_queued_at.
-- A run a worker executes is announced to it (kind 'paused', naming the
-- run and the worker), so that its pass starts no further step at once
-- rather than at its next heartbeat.
WITH paused AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "go_paused_at" = {{now($4)}},
      "go_pause_reason" = $3,
      "go_paused_due_at" = COALESCE(wr."available_at", wr."go_queued_at"),
      "available_at" = NULL,
      "go_queued_at" = NULL,
      "updated_at" = {{now($4)}}
  WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
    AND (wr."status" IN ('pending', 'running', 'sleeping')) IS TRUE
    AND wr."go_paused_at" IS NULL
  RETURNING wr.*,
    CASE WHEN (wr."status" = 'running') IS TRUE AND wr."worker_id" IS NOT NULL THEN
      pg_notify('openworkflow', json_build_object(
        'schema', {{schema_literal}}, 'ns', wr."namespace_id", 'kind', 'paused', 'id', wr."id", 'worker', wr."worker_id")::text)
    END AS notified
)
SELECT {{run_columns}} FROM paused AS wr

-- name: resume_paused_run
-- Unpauses non-terminal run $2: its saved due time (now when none was
-- saved) goes back to available_at, or to go_queued_at when the run has
-- not started under its workflow's limits (pending, never admitted, no
-- worker: it waits for admission, as a new run of a limited workflow).
-- The run is announced when it is due.
WITH resumed AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "available_at" = CASE WHEN {{queue_again}} THEN NULL ELSE COALESCE(wr."go_paused_due_at", {{now($3)}}) END,
      "go_queued_at" = CASE WHEN {{queue_again}} THEN COALESCE(wr."go_paused_due_at", {{now($3)}}) END,
      "go_concurrency_key" = CASE WHEN {{queue_again}} THEN COALESCE(wr."go_concurrency_key", '') ELSE wr."go_concurrency_key" END,
      "go_paused_at" = NULL,
      "go_pause_reason" = NULL,
      "go_paused_due_at" = NULL,
      "updated_at" = {{now($3)}}
  FROM (SELECT {{limited($1, (SELECT r."workflow_name" FROM {{schema}}."workflow_runs" AS r WHERE r."namespace_id" = {{by_id_ns($1)}} AND r."id" = $2))}} AS "limited") AS lim
  WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
    AND (wr."status" IN ('pending', 'running', 'sleeping')) IS TRUE
    AND wr."go_paused_at" IS NOT NULL
  RETURNING wr.*,
    CASE WHEN COALESCE(wr."available_at", wr."go_queued_at") <= {{clock($3)}} THEN {{notify('work')}} END AS notified
)
SELECT {{run_columns}} FROM resumed AS wr

-- fragment: queue_again
-- Whether run "wr", being resumed, waits for admission: its workflow has
-- limits (lim."limited") and it never started under them (pending, never
-- admitted, no worker).
(lim."limited" AND wr."status" = 'pending' AND wr."go_admitted_at" IS NULL AND wr."worker_id" IS NULL)

-- name: resume_canceled_run
-- Resumes canceled run $2 in place (DBOS's resume): pending and due now,
-- without error, finish time or worker, any pause cleared, attempts and
-- deadline kept, waiting for admission again when its workflow has
-- limits (as retry_run). A run whose deadline has passed does not match.
-- The completed attempt $3 of kind 'retry' named '__resume:' || $3, with
-- output {"attempts": <the run's attempts>}, is the mark from which a
-- worker's history counts the retry budgets again (internal/history).
-- Of two concurrent resumes the second waits for the first's row lock,
-- then re-reads the row, now pending, and matches nothing.
WITH resumed AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'pending',
      "available_at" = CASE WHEN lim."limited" THEN NULL ELSE {{now($4)}} END,
      "error" = NULL,
      "finished_at" = NULL,
      "worker_id" = NULL,
      "updated_at" = {{now($4)}},
      "go_queued_at" = CASE WHEN lim."limited" THEN {{now($4)}} END,
      "go_admitted_at" = NULL,
      "go_concurrency_key" = CASE WHEN lim."limited" THEN COALESCE(wr."go_concurrency_key", '') ELSE wr."go_concurrency_key" END,
      "go_paused_at" = NULL,
      "go_pause_reason" = NULL,
      "go_paused_due_at" = NULL
  FROM (SELECT {{limited($1, (SELECT r."workflow_name" FROM {{schema}}."workflow_runs" AS r WHERE r."namespace_id" = {{by_id_ns($1)}} AND r."id" = $2))}} AS "limited") AS lim
  WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
    AND (wr."status" = 'canceled') IS TRUE
    AND NOT {{past_deadline($4)}}
  RETURNING wr.*, {{notify('work')}} AS notified
),
mark AS (
  INSERT INTO {{schema}}."step_attempts" (
    "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status",
    "config", "context", "output", "error",
    "started_at", "finished_at", "created_at", "updated_at"
  )
  SELECT wr."namespace_id", $3::text, wr."id", '__resume:' || $3::text, 'retry', 'completed',
    '{}'::jsonb, NULL, jsonb_build_object('attempts', wr."attempts"), NULL,
    {{now($4)}}, {{now($4)}}, {{now($4)}}, {{now($4)}}
  FROM resumed AS wr
)
SELECT {{run_columns}} FROM resumed AS wr
