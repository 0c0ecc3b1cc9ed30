-- The waits of ow.WaitForEvent (go migration 19's go_event_waits), as the
-- PostgreSQL backend's sql/eventwaits.sql (which says why each statement
-- is shaped so). Writers are serialized by BEGIN IMMEDIATE; the deliveries
-- and the close are still conditioned on the row being open, so a wait
-- takes one event.

-- name: insert_event_wait
INSERT INTO "go_event_waits" (
  "namespace_id", "step_attempt_id", "workflow_run_id", "workflow_name", "step_name",
  "event_name", "match", "input", "index_path", "index_value",
  "after_seq", "since_at", "timeout_at", "created_at"
)
SELECT :ns, :step_id, :run_id, :workflow, :step_name, :event_name, :match, :input, :index_path, :index_value,
  COALESCE((SELECT MAX(e."seq") FROM "go_events" AS e WHERE e."namespace_id" = :ns), 0),
  :since_at, :timeout_at, :now
WHERE true
ON CONFLICT ("namespace_id", "step_attempt_id") DO NOTHING
RETURNING "after_seq", "since_at"

-- name: get_event_wait
SELECT {{event_wait_columns}}
FROM "go_event_waits" AS ew
WHERE ew."namespace_id" = :ns AND ew."step_attempt_id" = :step_id

-- name: list_event_waits
SELECT {{event_wait_columns}}
FROM "go_event_waits" AS ew
WHERE ew."namespace_id" = :ns AND ew."workflow_run_id" = :run_id
ORDER BY ew."created_at", ew."step_attempt_id"

-- name: lookback_events
SELECT {{event_columns}}
FROM "go_events" AS e
WHERE e."namespace_id" = :ns AND e."name" = :name AND e."seq" <= :after_seq AND e."created_at" >= :since_at
ORDER BY e."seq"
LIMIT :limit

-- name: event_wait_paths
-- Loose index scan of go_event_waits_open_idx, as PostgreSQL's.
WITH RECURSIVE p("path") AS (
  SELECT (SELECT ew."index_path"
   FROM "go_event_waits" AS ew
   WHERE ew."namespace_id" = :ns AND ew."event_name" = :name AND ew."index_path" IS NOT NULL
     AND ew."event_id" IS NULL AND ew."closed_at" IS NULL
   ORDER BY ew."index_path" LIMIT 1)
  UNION ALL
  SELECT (SELECT ew."index_path"
          FROM "go_event_waits" AS ew
          WHERE ew."namespace_id" = :ns AND ew."event_name" = :name AND ew."index_path" > p."path"
            AND ew."event_id" IS NULL AND ew."closed_at" IS NULL
          ORDER BY ew."index_path" LIMIT 1)
  FROM p
  WHERE p."path" IS NOT NULL
)
SELECT p."path" FROM p WHERE p."path" IS NOT NULL

-- name: event_wait_candidates
SELECT ew."step_attempt_id", ew."workflow_run_id", ew."workflow_name", ew."match", ew."input"
FROM "go_event_waits" AS ew
JOIN "workflow_runs" AS wr
  ON wr."namespace_id" = ew."namespace_id" AND wr."id" = ew."workflow_run_id"
WHERE ew."namespace_id" = :ns AND ew."event_name" = :name AND ew."index_path" = :path AND ew."index_value" = :value
  AND ew."event_id" IS NULL AND ew."closed_at" IS NULL AND ew."after_seq" < :seq
  AND wr."status" IN {{non_terminal_statuses}}

-- name: unindexed_event_waits
SELECT ew."step_attempt_id", ew."workflow_run_id", ew."workflow_name", ew."match", ew."input"
FROM "go_event_waits" AS ew
JOIN "workflow_runs" AS wr
  ON wr."namespace_id" = ew."namespace_id" AND wr."id" = ew."workflow_run_id"
WHERE ew."namespace_id" = :ns AND ew."event_name" = :name AND ew."index_path" IS NULL
  AND ew."event_id" IS NULL AND ew."closed_at" IS NULL AND ew."after_seq" < :seq
  AND wr."status" IN {{non_terminal_statuses}}
ORDER BY ew."step_attempt_id"
LIMIT :limit

-- name: deliver_event_wait
UPDATE "go_event_waits"
SET "event_id" = :event_id, "event" = :event, "delivered_at" = :now
WHERE "namespace_id" = :ns AND "step_attempt_id" = :step_id
  AND "event_id" IS NULL AND "closed_at" IS NULL
RETURNING "workflow_run_id"

-- name: record_event_wait_error
UPDATE "go_event_waits"
SET "last_error" = :message
WHERE "namespace_id" = :ns AND "step_attempt_id" = :step_id

-- name: close_event_wait
UPDATE "go_event_waits"
SET "closed_at" = :now
WHERE "namespace_id" = :ns AND "step_attempt_id" = :step_id
  AND "event_id" IS NULL AND "closed_at" IS NULL

-- fragment: event_wait_columns
ew."step_attempt_id", ew."workflow_run_id", ew."step_name", ew."event_name", ew."match",
  ew."index_path", ew."since_at", ew."timeout_at", ew."created_at", ew."event_id", ew."event",
  ew."delivered_at", ew."closed_at", ew."last_error"

-- name: prune_event_waits
-- The event waits of the runs :ids (retention).
DELETE FROM "go_event_waits"
WHERE "namespace_id" = :ns AND "workflow_run_id" IN (SELECT value FROM json_each(:ids))
