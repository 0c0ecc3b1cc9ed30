-- Singleton starts (backend.Singleton; go migration 21;
-- docs/flow-control.md). A singleton create runs in one transaction:
-- lock_singleton, singleton_active, then per mode nothing (skip with an
-- active run), cancel_run for each active run (cancel), and insert_run
-- followed by singleton_mark.

-- name: lock_singleton
-- Serializes the singleton creates of one (schema, namespace, workflow,
-- key) for the rest of the transaction; $1 is Backend.singletonLockKey.
SELECT pg_advisory_xact_lock(hashtextextended($1, 0))

-- name: singleton_active
-- The active runs (pending, running or sleeping: parked, paused and held
-- ones included) of key $3 of workflow $2, oldest first, locked: an end
-- committing meanwhile is waited for and re-read (READ COMMITTED), so a run
-- that ended is not counted and an end that comes after this sees what the
-- create inserts (migration 21's release). One range of
-- workflow_runs_go_singleton_idx. Locked in creation order, the order in
-- which the release trigger takes them too.
SELECT {{run_columns}}
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1 AND wr."workflow_name" = $2 AND wr."go_singleton_key" = $3
  AND wr."status" IN ('pending', 'running', 'sleeping')
ORDER BY wr."created_at", wr."id"
FOR UPDATE

-- name: singleton_mark
-- Sets the singleton key $3 of run $2 just inserted and, with $4 (mode
-- queue behind an active run), holds it: its due time (available_at, or
-- go_queued_at when it waits for admission) moves to go_singleton_held_at
-- until migration 21's release trigger releases it.
UPDATE {{schema}}."workflow_runs" AS wr
SET "go_singleton_key" = $3,
    "go_singleton_held_at" = CASE WHEN $4::boolean THEN COALESCE(wr."available_at", wr."go_queued_at") END,
    "available_at" = CASE WHEN $4::boolean THEN NULL ELSE wr."available_at" END,
    "go_queued_at" = CASE WHEN $4::boolean THEN NULL ELSE wr."go_queued_at" END
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
RETURNING {{run_columns}}
