-- The registry of workers (backend.WorkerRegistry, workers.go), in
-- go_workers (go migration 17). Advisory: no claim reads it.

-- fragment: worker_columns
-- The go_workers columns, in the order scanWorker reads them.
"namespace_id", "id", "host", "pid", "sdk", "sdk_version", "state",
  "concurrency", "in_use", "heartbeat_interval_ms", "workflows",
  "started_at", "last_heartbeat_at"

-- name: forget_workers
-- Deletes the namespace's rows other than :id silent since :cutoff.
DELETE FROM "go_workers"
WHERE "namespace_id" = :ns AND "id" <> :id AND "last_heartbeat_at" < :cutoff

-- name: put_worker
-- Upserts worker :id, its last heartbeat :now; started_at is :started_at,
-- or on insert :now and the stored one after when :started_at is NULL.
INSERT INTO "go_workers" ({{worker_columns}})
VALUES (:ns, :id, :host, :pid, :sdk, :sdk_version, :state, :concurrency,
  :in_use, :interval_ms, :workflows, COALESCE(:started_at, :now), :now)
ON CONFLICT ("namespace_id", "id") DO UPDATE SET
  "host" = excluded."host", "pid" = excluded."pid", "sdk" = excluded."sdk",
  "sdk_version" = excluded."sdk_version", "state" = excluded."state",
  "concurrency" = excluded."concurrency", "in_use" = excluded."in_use",
  "heartbeat_interval_ms" = excluded."heartbeat_interval_ms",
  "workflows" = excluded."workflows",
  "started_at" = COALESCE(:started_at, "go_workers"."started_at"),
  "last_heartbeat_at" = excluded."last_heartbeat_at"

-- name: list_workers
-- The namespace's workers heard from since :cutoff, by id.
SELECT {{worker_columns}} FROM "go_workers"
WHERE "namespace_id" = :ns AND "last_heartbeat_at" >= :cutoff
ORDER BY "id"

-- name: count_active_runs_by_workflow
-- The pending and running runs per workflow name, version and stored
-- status (terminal runs are never read).
SELECT "workflow_name", COALESCE("version", ''), "status", COUNT(*)
FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "status" IN ('pending', 'running', 'sleeping')
GROUP BY 1, 2, 3
ORDER BY 1, 2
