-- Updates of runs (go migration 15, go_run_updates; UpdateStore), as
-- PostgreSQL's sql/updates.sql. An admission runs in one write
-- transaction: the run (get_run), an earlier update of the same id, the
-- limits (count_run_updates), the row (insert_run_update) and the wake of
-- a parked run (wake_run, runs.sql). A worker settles an update under its
-- lease (owned_run_claim, hooks.sql; settle_run_update); the hub then
-- announces it.

-- fragment: update_columns
"namespace_id", "workflow_run_id", "id", "name", "seq", "input", "state",
  "result", "error", "created_at", "settled_at"

-- name: get_run_update
SELECT {{update_columns}}
FROM "go_run_updates"
WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id AND "id" = :id

-- name: list_run_updates
-- The run's updates in admission order; with :only_admitted, only the
-- admitted ones.
SELECT {{update_columns}}
FROM "go_run_updates"
WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id
  AND (NOT :only_admitted OR "state" = 'admitted')
ORDER BY "seq"

-- name: count_run_updates
-- The run's admitted updates, and all its updates: the limits.
SELECT COALESCE(SUM("state" = 'admitted'), 0), COUNT(*)
FROM "go_run_updates"
WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id

-- name: insert_run_update
INSERT INTO "go_run_updates" (
  "namespace_id", "workflow_run_id", "id", "name", "seq", "input", "state", "created_at"
)
SELECT :ns, :run_id, :id, :name,
  COALESCE((SELECT MAX("seq") FROM "go_run_updates"
            WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id), 0) + 1,
  :input, 'admitted', :now
RETURNING "seq"

-- name: settle_run_update
-- Moves an admitted update to its final state.
UPDATE "go_run_updates"
SET "state" = :state, "result" = :result, "error" = :error, "settled_at" = :now
WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id AND "id" = :id
  AND "state" = 'admitted'
RETURNING "id"
