-- Debounce, as PostgreSQL's sql/debounce.sql. :due is now + the period
-- and :deadline now + the max delay, computed in Go (times are text).

-- name: debounce_extend
-- Joins a start to the pending burst of :key: the due time (whichever of
-- available_at, go_queued_at, go_paused_due_at holds it) moves to :due,
-- never past the burst's deadline, and the input is replaced unless
-- :leading.
UPDATE "workflow_runs"
SET "input" = CASE WHEN :leading THEN "input" ELSE :input END,
    "available_at" = CASE WHEN "available_at" IS NOT NULL THEN MIN(:due, "go_debounce_deadline") END,
    "go_queued_at" = CASE WHEN "go_queued_at" IS NOT NULL THEN MIN(:due, "go_debounce_deadline") END,
    "go_paused_due_at" = CASE WHEN "go_paused_due_at" IS NOT NULL THEN MIN(:due, "go_debounce_deadline") END,
    "updated_at" = :now
WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name AND "go_debounce_key" = :key
  AND "status" = 'pending' AND "attempts" = 0
RETURNING "id"

-- name: debounce_mark
-- Makes run :id, just inserted, the debounced run of :key; the unique
-- index refuses it when another pending run holds the key.
UPDATE "workflow_runs"
SET "go_debounce_key" = :key, "go_debounce_deadline" = :deadline,
    "available_at" = CASE WHEN "available_at" IS NOT NULL THEN :due END,
    "go_queued_at" = CASE WHEN "go_queued_at" IS NOT NULL THEN :due END
WHERE "namespace_id" = :ns AND "id" = :id

-- name: get_debounced_run
SELECT {{run_columns}}, "go_debounce_key",
  COALESCE("available_at", "go_queued_at", "go_paused_due_at"), "go_debounce_deadline"
FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "id" = :id

-- name: list_debounced_runs
-- The pending debounced runs, soonest due first (at most :limit).
SELECT {{run_columns}}, "go_debounce_key",
  COALESCE("available_at", "go_queued_at", "go_paused_due_at") AS "due", "go_debounce_deadline"
FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "status" = 'pending' AND "attempts" = 0
  AND "go_debounce_key" IS NOT NULL
ORDER BY "due" IS NULL, "due", "id"
LIMIT :limit
