-- Continue-as-new (backend.RunContinuer, continue.go): a leased run ends
-- and its successor starts with a new input, in one transaction. The
-- lineage is written both ways in the runs' context column
-- (backend.ContinuationOf, backend.ContinuedTo).

-- name: continue_lock_run
-- Locks run $2 of namespace $1 while it is running and leased to worker
-- $3 (the fence of every worker write), FOR NO KEY UPDATE as owned_run
-- does, and returns it. No row: the worker lost it.
SELECT {{run_columns}}
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
  AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
FOR NO KEY UPDATE

-- name: continue_insert_run
-- Inserts successor $3 of run $2 (locked by continue_lock_run): pending,
-- due at $7 (NULL: now), the same workflow name, config, priority,
-- concurrency key, parent link and deadline, version $5 (NULL: the old
-- run's), input $4, context $6, no idempotency key; a successor of a
-- workflow with stored limits waits for admission, as insert_run's runs.
-- A successor of a paused run is paused too (same time and reason, its due
-- time saved in go_paused_due_at), so that a chain paused while its run
-- continued stays held (resume_paused_run queues it for admission then).
WITH inserted AS (
  INSERT INTO {{schema}}."workflow_runs" AS wr (
    "namespace_id", "id", "workflow_name", "version", "status", "idempotency_key",
    "config", "context", "input", "attempts",
    "parent_step_attempt_namespace_id", "parent_step_attempt_id",
    "available_at", "deadline_at", "created_at", "updated_at",
    "go_priority", "go_concurrency_key", "go_queued_at",
    "go_paused_at", "go_pause_reason", "go_paused_due_at"
  )
  SELECT src."namespace_id", $3, src."workflow_name", COALESCE($5::text, src."version"), 'pending', NULL,
    src."config", $6::jsonb, $4::jsonb, 0,
    src."parent_step_attempt_namespace_id", src."parent_step_attempt_id",
    CASE WHEN lim."limited" OR src."go_paused_at" IS NOT NULL THEN NULL ELSE COALESCE($7::timestamptz, {{now($8)}}) END,
    src."deadline_at", {{now($8)}}, {{now($8)}},
    src."go_priority",
    CASE WHEN lim."limited" THEN COALESCE(src."go_concurrency_key", '') ELSE src."go_concurrency_key" END,
    CASE WHEN lim."limited" AND src."go_paused_at" IS NULL THEN COALESCE($7::timestamptz, {{now($8)}}) END,
    src."go_paused_at", src."go_pause_reason",
    CASE WHEN src."go_paused_at" IS NOT NULL THEN COALESCE($7::timestamptz, {{now($8)}}) END
  FROM {{schema}}."workflow_runs" AS src
  CROSS JOIN LATERAL (SELECT {{limited(src."namespace_id", src."workflow_name")}} AS "limited") AS lim
  WHERE src."namespace_id" = {{by_id_ns($1)}} AND src."id" = $2
  RETURNING wr.*, {{notify('work')}} AS notified
)
SELECT {{run_columns}} FROM inserted AS wr

-- name: continue_end_run
-- Ends run $2, leased to worker $3 (fenced again), completed with output
-- $4 ({"continuedAsNew": {"runId": successor}}), worker_id kept as a
-- completion keeps it, and names successor $5 in its context
-- ("continuedTo"; a context that is not an object is replaced).
UPDATE {{schema}}."workflow_runs" AS wr
SET "status" = 'completed',
    "output" = $4::jsonb,
    "error" = NULL,
    "available_at" = NULL,
    "finished_at" = {{stamp($6)}},
    "updated_at" = {{stamp($6)}},
    "context" = jsonb_set(CASE WHEN jsonb_typeof(wr."context") = 'object' THEN wr."context" ELSE '{}'::jsonb END,
      '{continuedTo}', to_jsonb($5::text))
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
  AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
RETURNING {{notify('finished')}} AS notified

-- name: continue_move_signals
-- Moves the run signals of run $2 not yet received (SignalRun, go
-- migration 11) to its successor $3, numbers and order kept: the
-- successor has none of its own yet.
UPDATE {{schema}}."go_run_signals"
SET "workflow_run_id" = $3
WHERE "namespace_id" = $1 AND "workflow_run_id" = $2 AND "step_attempt_id" IS NULL

-- name: continue_relink_parent
-- Links the parent's running workflow-kind attempt ($1, $2) that waits on
-- run $3 of namespace $4 to its successor $5, so the parent waits for the
-- end of the chain and wake_parent matches the successor's end.
UPDATE {{schema}}."step_attempts"
SET "child_workflow_run_id" = $5,
    "updated_at" = {{now($6)}}
WHERE "namespace_id" = $1 AND "id" = $2 AND "kind" = 'workflow' AND "status" = 'running'
  AND "child_workflow_run_namespace_id" = $4 AND "child_workflow_run_id" = $3

-- name: continue_schedule_runs
-- Makes the schedules that started run $2 name its successor $3: their
-- last run (which the overlap rule reads) and their record of the tick.
-- The schedules are found through workflow_schedule_runs_run_idx; both
-- parts read the statement's snapshot, before either update.
WITH s AS (
  UPDATE {{schema}}."workflow_schedules" AS ws
  SET "last_run_id" = $3
  WHERE ws."namespace_id" = $1 AND ws."last_run_id" = $2
    AND ws."name" IN (SELECT sr."schedule_name" FROM {{schema}}."workflow_schedule_runs" AS sr
                      WHERE sr."namespace_id" = $1 AND sr."workflow_run_id" = $2)
)
UPDATE {{schema}}."workflow_schedule_runs"
SET "workflow_run_id" = $3
WHERE "namespace_id" = $1 AND "workflow_run_id" = $2

-- name: continue_copy_search_attributes
-- Copies the search attributes of run $2 (go migration 13) to its
-- successor $3, whose created_at orders them in the value indexes: a chain
-- keeps the attributes its runs set, and a later upsert by the successor
-- replaces them there only.
INSERT INTO {{schema}}."go_search_attributes" (
  "namespace_id", "workflow_run_id", "name", "seq", "run_created_at",
  "keyword", "int", "float", "bool", "time"
)
SELECT sa."namespace_id", $3, sa."name", sa."seq", nr."created_at",
  sa."keyword", sa."int", sa."float", sa."bool", sa."time"
FROM {{schema}}."go_search_attributes" AS sa
JOIN {{schema}}."workflow_runs" AS nr ON nr."namespace_id" = sa."namespace_id" AND nr."id" = $3
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = $2
