-- The waits of ow.WaitForEvent (go migration 19's go_event_waits; see
-- eventwaits.go). A wait is delivered at most one event: every delivery
-- and the timeout's close are UPDATEs conditioned on the row still being
-- open (event_id IS NULL AND closed_at IS NULL), so under READ COMMITTED
-- of concurrent writers one changes the row and the others, re-reading it
-- after the first commits, change nothing. Publishers update candidates in
-- step_attempt_id order, so two publishes never wait on each other in a
-- cycle.

-- name: insert_event_wait
-- Stores a wait unless it is stored ($2 is the key). after_seq is the
-- namespace's newest event at the start (a probe of go_events_seq_idx):
-- the wait sees later events; since_at is the start of its look-back
-- window ($11 milliseconds before now), NULL without one.
INSERT INTO {{schema}}."go_event_waits" (
  "namespace_id", "step_attempt_id", "workflow_run_id", "workflow_name", "step_name",
  "event_name", "match", "input", "index_path", "index_value",
  "after_seq", "since_at", "timeout_at", "created_at"
)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
  COALESCE((SELECT MAX(e."seq") FROM {{schema}}."go_events" AS e WHERE e."namespace_id" = $1), 0),
  CASE WHEN $11::bigint IS NULL THEN NULL
       ELSE {{now($13)}} - ($11::bigint * INTERVAL '1 millisecond') END,
  $12, {{now($13)}}
ON CONFLICT ("namespace_id", "step_attempt_id") DO NOTHING
RETURNING "after_seq", "since_at"

-- name: open_event_wait
-- A wait without a look-back in one statement and its own implicit
-- transaction (OpenEventWait): stores it as insert_event_wait does unless
-- stored, and returns it, the stored row when it was (a replay, the woken
-- run's pass). A look-back wait uses insert_event_wait in a transaction
-- instead, which delivers the window's event with the insert.
WITH "ins" AS (
  INSERT INTO {{schema}}."go_event_waits" AS ew (
    "namespace_id", "step_attempt_id", "workflow_run_id", "workflow_name", "step_name",
    "event_name", "match", "input", "index_path", "index_value",
    "after_seq", "since_at", "timeout_at", "created_at"
  )
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
    COALESCE((SELECT MAX(e."seq") FROM {{schema}}."go_events" AS e WHERE e."namespace_id" = $1), 0),
    NULL, $11, {{now($12)}}
  ON CONFLICT ("namespace_id", "step_attempt_id") DO NOTHING
  RETURNING {{event_wait_columns}}
)
SELECT * FROM "ins"
UNION ALL
SELECT {{event_wait_columns}}
FROM {{schema}}."go_event_waits" AS ew
WHERE ew."namespace_id" = $1 AND ew."step_attempt_id" = $2 AND NOT EXISTS (SELECT 1 FROM "ins")

-- name: get_event_wait
SELECT {{event_wait_columns}}
FROM {{schema}}."go_event_waits" AS ew
WHERE ew."namespace_id" = $1 AND ew."step_attempt_id" = $2

-- name: list_event_waits
SELECT {{event_wait_columns}}
FROM {{schema}}."go_event_waits" AS ew
WHERE ew."namespace_id" = $1 AND ew."workflow_run_id" = $2
ORDER BY ew."created_at", ew."step_attempt_id"

-- name: lookback_events
-- The stored events of name $2 a look-back wait may take: published
-- before the wait ($3, its after_seq) and since $4, oldest first.
SELECT {{event_columns}}
FROM {{schema}}."go_events" AS e
WHERE e."namespace_id" = $1 AND e."name" = $2 AND e."seq" <= $3 AND e."created_at" >= $4
ORDER BY e."seq"
LIMIT $5

-- name: event_wait_paths
-- The distinct index paths of the open waits on event name $2, by a loose
-- index scan of go_event_waits_open_idx (one probe per distinct path,
-- however many waits share it), so a publish's cost does not grow with
-- the number of waits.
WITH RECURSIVE p("path") AS (
  (SELECT ew."index_path"
   FROM {{schema}}."go_event_waits" AS ew
   WHERE ew."namespace_id" = $1 AND ew."event_name" = $2 AND ew."index_path" IS NOT NULL
     AND ew."event_id" IS NULL AND ew."closed_at" IS NULL
   ORDER BY ew."index_path" LIMIT 1)
  UNION ALL
  SELECT (SELECT ew."index_path"
          FROM {{schema}}."go_event_waits" AS ew
          WHERE ew."namespace_id" = $1 AND ew."event_name" = $2 AND ew."index_path" > p."path"
            AND ew."event_id" IS NULL AND ew."closed_at" IS NULL
          ORDER BY ew."index_path" LIMIT 1)
  FROM p
  WHERE p."path" IS NOT NULL
)
SELECT p."path" FROM p WHERE p."path" IS NOT NULL

-- name: event_wait_candidates
-- The open waits on name $2 indexed by path $3 and value $4 that started
-- before event seq $5, of runs that are not finished.
SELECT ew."step_attempt_id", ew."workflow_run_id", ew."workflow_name", ew."match", ew."input"
FROM {{schema}}."go_event_waits" AS ew
JOIN {{schema}}."workflow_runs" AS wr
  ON wr."namespace_id" = ew."namespace_id" AND wr."id" = ew."workflow_run_id"
WHERE ew."namespace_id" = $1 AND ew."event_name" = $2 AND ew."index_path" = $3 AND ew."index_value" = $4
  AND ew."event_id" IS NULL AND ew."closed_at" IS NULL AND ew."after_seq" < $5
  AND (wr."status" IN ('pending', 'running', 'sleeping')) IS TRUE

-- name: unindexed_event_waits
-- The open waits on name $2 with no index key, oldest $4 first (see
-- backend.MaxUnindexedWaitsPerPublish).
SELECT ew."step_attempt_id", ew."workflow_run_id", ew."workflow_name", ew."match", ew."input"
FROM {{schema}}."go_event_waits" AS ew
JOIN {{schema}}."workflow_runs" AS wr
  ON wr."namespace_id" = ew."namespace_id" AND wr."id" = ew."workflow_run_id"
WHERE ew."namespace_id" = $1 AND ew."event_name" = $2 AND ew."index_path" IS NULL
  AND ew."event_id" IS NULL AND ew."closed_at" IS NULL AND ew."after_seq" < $3
  AND (wr."status" IN ('pending', 'running', 'sleeping')) IS TRUE
ORDER BY ew."step_attempt_id"
LIMIT $4

-- name: deliver_event_wait
-- Delivers event $3 ($4 its JSON) to wait $2 if it is still open; returns
-- the run to wake.
UPDATE {{schema}}."go_event_waits" AS ew
SET "event_id" = $3, "event" = $4, "delivered_at" = {{now($5)}}
WHERE ew."namespace_id" = $1 AND ew."step_attempt_id" = $2
  AND ew."event_id" IS NULL AND ew."closed_at" IS NULL
RETURNING ew."workflow_run_id"

-- name: record_event_wait_error
UPDATE {{schema}}."go_event_waits" AS ew
SET "last_error" = $3
WHERE ew."namespace_id" = $1 AND ew."step_attempt_id" = $2

-- name: close_event_wait
-- Closes wait $2 at its timeout unless it has its event.
UPDATE {{schema}}."go_event_waits" AS ew
SET "closed_at" = {{now($3)}}
WHERE ew."namespace_id" = $1 AND ew."step_attempt_id" = $2
  AND ew."event_id" IS NULL AND ew."closed_at" IS NULL

-- name: wake_event_waiter
-- Makes run $2 claimable now if it is parked (unowned, not terminal), and
-- announces it; an owned run finds the delivery when it parks
-- (reconcile_parked_runs).
UPDATE {{schema}}."workflow_runs" AS wr
SET "available_at" = {{wake_now($3)}},
    "go_paused_due_at" = {{paused_wake($3)}},
    "updated_at" = {{now($3)}}
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
  AND (wr."status" IN ('pending', 'running', 'sleeping')) IS TRUE
  AND wr."worker_id" IS NULL
RETURNING {{notify('work')}}

-- fragment: event_wait_columns
-- The go_event_waits columns, read as "ew", in the order scanEventWait
-- reads them.
ew."step_attempt_id", ew."workflow_run_id", ew."step_name", ew."event_name", ew."match",
  ew."index_path", ew."since_at", ew."timeout_at", ew."created_at", ew."event_id", ew."event",
  ew."delivered_at", ew."closed_at", ew."last_error"

-- name: prune_event_waits
-- The event waits of runs $2 (retention), by go_event_waits_run_idx.
DELETE FROM {{schema}}."go_event_waits" AS ew
WHERE ew."namespace_id" = $1 AND ew."workflow_run_id" = ANY($2::text[])

-- name: lock_event_waiter_runs
-- Locks the runs $2 whose waits an event is about to be delivered to, in
-- id order (so concurrent publishers do not deadlock), before the
-- deliveries: a park of one of them then waits for the publish's commit
-- and its reconciliation (reconcile_parked_runs) sees the delivery, or
-- the park committed first and wake_event_waiter sees it parked — as
-- lock_signal_waiters does for signals. Without it a delivery committed
-- between a park's commit and its reconciliation woke nobody.
WITH ids AS MATERIALIZED (
  SELECT $1::text AS "namespace_id", d."id"
  FROM unnest($2::text[]) AS d("id")
)
SELECT wr."id"
FROM ids
JOIN {{schema}}."workflow_runs" AS wr
  ON wr."namespace_id" = ids."namespace_id" AND wr."id" = ids."id"
ORDER BY wr."id"
FOR UPDATE OF wr
