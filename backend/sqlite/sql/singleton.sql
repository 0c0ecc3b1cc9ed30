-- Singleton starts (backend.Singleton; go migration 21;
-- docs/flow-control.md), as PostgreSQL's sql/singleton.sql; the create's
-- write transaction (BEGIN IMMEDIATE) serializes them.

-- name: singleton_active
-- The active runs of key :key of workflow :workflow_name, oldest first
-- (one range of workflow_runs_go_singleton_idx).
SELECT {{run_columns}}
FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name AND "go_singleton_key" = :key
  AND "status" IN {{non_terminal_statuses}}
ORDER BY "created_at", "id"

-- name: singleton_mark
-- Sets the singleton key :key of run :run_id just inserted and, with
-- :hold, holds it (its due time moves to go_singleton_held_at until go
-- migration 21's release trigger releases it).
UPDATE "workflow_runs"
SET "go_singleton_key" = :key,
    "go_singleton_held_at" = CASE WHEN :hold THEN COALESCE("available_at", "go_queued_at") END,
    "available_at" = CASE WHEN :hold THEN NULL ELSE "available_at" END,
    "go_queued_at" = CASE WHEN :hold THEN NULL ELSE "go_queued_at" END
WHERE "namespace_id" = :ns AND "id" = :run_id
RETURNING {{run_columns}}
