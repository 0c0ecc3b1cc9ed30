-- The registry of workers (backend.WorkerRegistry, workers.go), in
-- go_workers (go migration 17). Advisory: no claim reads it.

-- fragment: worker_columns
-- The go_workers columns, read as "w", in the order scanWorker reads them.
w."namespace_id", w."id", w."host", w."pid", w."sdk", w."sdk_version",
  w."state", w."concurrency", w."in_use", w."heartbeat_interval_ms",
  w."workflows", w."started_at", w."last_heartbeat_at"

-- name: put_worker
-- Upserts worker $2 of namespace $1 ($3 host, $4 pid, $5 sdk, $6 sdk
-- version, $7 state, $8 concurrency, $9 slots in use, $10 heartbeat
-- interval in ms, $11 workflows JSON, $12 started_at or NULL for now on
-- insert and the stored one after), its last heartbeat now; and deletes
-- the namespace's other rows silent for $13 ms (forgotten). One statement,
-- one round trip.
WITH forgotten AS (
  DELETE FROM {{schema}}."go_workers" AS f
  WHERE f."namespace_id" = $1 AND f."id" <> $2
    AND f."last_heartbeat_at" < {{clock($14)}} - $13::bigint * INTERVAL '1 millisecond'
)
INSERT INTO {{schema}}."go_workers" AS w
  ("namespace_id", "id", "host", "pid", "sdk", "sdk_version", "state", "concurrency",
   "in_use", "heartbeat_interval_ms", "workflows", "started_at", "last_heartbeat_at")
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
  COALESCE(date_trunc('milliseconds', $12::timestamptz), {{now($14)}}), {{now($14)}})
ON CONFLICT ("namespace_id", "id") DO UPDATE SET
  "host" = EXCLUDED."host", "pid" = EXCLUDED."pid", "sdk" = EXCLUDED."sdk",
  "sdk_version" = EXCLUDED."sdk_version", "state" = EXCLUDED."state",
  "concurrency" = EXCLUDED."concurrency", "in_use" = EXCLUDED."in_use",
  "heartbeat_interval_ms" = EXCLUDED."heartbeat_interval_ms",
  "workflows" = EXCLUDED."workflows",
  "started_at" = COALESCE(date_trunc('milliseconds', $12::timestamptz), w."started_at"),
  "last_heartbeat_at" = EXCLUDED."last_heartbeat_at"

-- name: list_workers
-- The workers of namespace $1 heard from within $2 ms, by id, each with
-- the statement's present (to derive "gone" by the database's clock).
SELECT {{worker_columns}}, {{now($3)}}
FROM {{schema}}."go_workers" AS w
WHERE w."namespace_id" = $1
  AND w."last_heartbeat_at" >= {{clock($3)}} - $2::bigint * INTERVAL '1 millisecond'
ORDER BY w."id"

-- name: count_active_runs_by_workflow
-- The pending and running runs of namespace $1 per workflow name, version
-- and stored status: the range of the status index over active runs only
-- (terminal runs are never read).
SELECT wr."workflow_name", COALESCE(wr."version", ''), wr."status", COUNT(*)
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1 AND wr."status" IN ('pending', 'running', 'sleeping')
GROUP BY 1, 2, 3
ORDER BY 1, 2
