-- Updates of runs (go migration 15, go_run_updates; UpdateStore). An
-- admission locks the run (lock_updated_run), returns an earlier update of
-- the same id, refuses a finished or paused run and the limits
-- (count_run_updates), stores the row (insert_run_update) and wakes the
-- run if it is parked (wake_signaled_run). A worker settles an update
-- under its lease in one statement (settle_run_update), which announces
-- it to the callers waiting.

-- name: lock_updated_run
-- The run's status and whether it is paused (go migration 12), its row
-- locked until the commit.
SELECT wr."status", wr."go_paused_at" IS NOT NULL
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
FOR NO KEY UPDATE

-- fragment: update_columns
ru."namespace_id", ru."workflow_run_id", ru."id", ru."name", ru."seq", ru."input", ru."state",
  ru."result", ru."error", ru."created_at", ru."settled_at"

-- name: get_run_update
-- Update $3 of run $2.
SELECT {{update_columns}}
FROM {{schema}}."go_run_updates" AS ru
WHERE ru."namespace_id" = $1 AND ru."workflow_run_id" = $2 AND ru."id" = $3

-- name: list_run_updates
-- Run $2's updates in admission order; with $3, only the admitted ones
-- (go_run_updates_admitted_idx).
SELECT {{update_columns}}
FROM {{schema}}."go_run_updates" AS ru
WHERE ru."namespace_id" = $1 AND ru."workflow_run_id" = $2
  AND (NOT $3::boolean OR ru."state" = 'admitted')
ORDER BY ru."seq"

-- name: count_run_updates
-- Run $2's admitted updates, and all its updates: the limits.
SELECT COUNT(*) FILTER (WHERE ru."state" = 'admitted'), COUNT(*)
FROM {{schema}}."go_run_updates" AS ru
WHERE ru."namespace_id" = $1 AND ru."workflow_run_id" = $2

-- name: insert_run_update
-- Stores update $3 of run $2, admitted, next in the run's order.
INSERT INTO {{schema}}."go_run_updates" (
  "namespace_id", "workflow_run_id", "id", "name", "seq", "input", "state", "created_at"
)
SELECT $1, $2, $3, $4,
  COALESCE((SELECT MAX(ru."seq") FROM {{schema}}."go_run_updates" AS ru
            WHERE ru."namespace_id" = $1 AND ru."workflow_run_id" = $2), 0) + 1,
  $5, 'admitted', {{now($6)}}
RETURNING "seq", "created_at"

-- name: settle_run_update
-- Moves admitted update $3 of run $2 to state $4 with result $5 or error
-- $6 while the run is running under worker $7 (owned_run locks its row, so
-- a claim moving the lease waits for the settlement or refuses it), and
-- announces it (kind 'update', the run's id and the update's). One
-- statement, one round trip: a settled update's caller is waiting. No row
-- when the fence refuses or the update was settled already (the caller
-- tells the two apart).
WITH {{owned_run($1, $2, $7)}}
UPDATE {{schema}}."go_run_updates" AS ru
SET "state" = $4, "result" = $5, "error" = $6, "settled_at" = {{now($8)}}
WHERE ru."namespace_id" = $1 AND ru."workflow_run_id" = $2 AND ru."id" = $3
  AND ru."state" = 'admitted'
  AND EXISTS (SELECT 1 FROM owned_run)
RETURNING pg_notify('openworkflow', json_build_object(
  'schema', {{schema_literal}}, 'ns', ru."namespace_id", 'kind', 'update',
  'id', ru."workflow_run_id", 'uid', ru."id")::text)
