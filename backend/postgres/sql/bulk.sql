-- Bulk actions (backend.BulkActionStore, bulk.go; go migration 14). A
-- page of an action is lock_bulk_action, the single-run statements of
-- runs.sql for each run of the page (cancel_run, retry_run) or the
-- retention deletes (bulk_lock_deletable, then prune_*), and
-- advance_bulk_action, in one READ COMMITTED transaction.

-- fragment: bulk_columns
-- The go_bulk_actions columns, read as "ba", in the order scanBulkAction
-- reads them.
ba."namespace_id", ba."id", ba."operation", ba."query", ba."reason", ba."requested_by",
  ba."state", ba."max_per_second", ba."matched", ba."acted", ba."skipped", ba."failed",
  ba."pages", ba."cursor", ba."last_error", ba."lease_owner", ba."lease_expires_at",
  ba."created_at", ba."updated_at", ba."started_at", ba."finished_at"

-- name: insert_bulk_action
-- A new running action $2, created at $10 (NULL: now).
INSERT INTO {{schema}}."go_bulk_actions" AS ba (
  "namespace_id", "id", "operation", "query", "reason", "requested_by", "state",
  "max_per_second", "matched", "created_at", "updated_at"
)
VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8,
  COALESCE($9::timestamptz, {{now($10)}}), {{now($10)}})
RETURNING {{bulk_columns}}

-- name: get_bulk_action
SELECT {{bulk_columns}}
FROM {{schema}}."go_bulk_actions" AS ba
WHERE ba."namespace_id" = $1 AND ba."id" = $2

-- name: list_bulk_actions
-- Completed by ListBulkActions with the cursor, order and limit.
SELECT {{bulk_columns}}
FROM {{schema}}."go_bulk_actions" AS ba
WHERE ba."namespace_id" = $1

-- name: cancel_bulk_action
-- A running action becomes canceling; its driver ends it at its next page.
UPDATE {{schema}}."go_bulk_actions" AS ba
SET "state" = 'canceling', "updated_at" = {{now($3)}}
WHERE ba."namespace_id" = $1 AND ba."id" = $2 AND ba."state" = 'running'
RETURNING {{bulk_columns}}

-- name: claim_bulk_action
-- Leases the oldest open action without a live lease to $2 for $3
-- milliseconds; SKIP LOCKED so that concurrent claimers take different
-- actions (or none) without waiting, as a run's claim.
UPDATE {{schema}}."go_bulk_actions" AS ba
SET "lease_owner" = $2,
    "lease_expires_at" = {{now($4)}} + make_interval(secs => $3::bigint / 1000.0),
    "started_at" = COALESCE(ba."started_at", {{now($4)}}),
    "updated_at" = {{now($4)}}
WHERE (ba."namespace_id", ba."id") = (
  SELECT o."namespace_id", o."id"
  FROM {{schema}}."go_bulk_actions" AS o
  WHERE o."namespace_id" = $1 AND o."state" IN ('running', 'canceling')
    AND (o."lease_expires_at" IS NULL OR o."lease_expires_at" <= {{clock($4)}})
  ORDER BY o."created_at", o."id"
  LIMIT 1
  FOR UPDATE SKIP LOCKED
)
RETURNING {{bulk_columns}}

-- name: lock_bulk_action
-- The action's row, locked for the page's transaction: every page of an
-- action serializes on it, so a page applies only after the one before
-- it committed, and reads the cursor that page left.
SELECT {{bulk_columns}}
FROM {{schema}}."go_bulk_actions" AS ba
WHERE ba."namespace_id" = $1 AND ba."id" = $2
FOR UPDATE

-- name: advance_bulk_action
-- What a page did: the cursor $3, the counts added, the state $8 (NULL:
-- unchanged), finished now when final; the lease of owner $9 extended by
-- $10 milliseconds, or released when final.
UPDATE {{schema}}."go_bulk_actions" AS ba
SET "cursor" = $3,
    "acted" = ba."acted" + $4,
    "skipped" = ba."skipped" + $5,
    "failed" = ba."failed" + $6,
    "pages" = ba."pages" + $7,
    "state" = COALESCE($8, ba."state"),
    "last_error" = COALESCE($11, ba."last_error"),
    "finished_at" = CASE WHEN $8 IN ('completed', 'canceled', 'failed') THEN {{now($12)}} END,
    "lease_owner" = CASE WHEN $8 IN ('completed', 'canceled', 'failed') THEN NULL ELSE $9 END,
    "lease_expires_at" = CASE WHEN $8 IN ('completed', 'canceled', 'failed') THEN NULL
      ELSE {{now($12)}} + make_interval(secs => $10::bigint / 1000.0) END,
    "updated_at" = {{now($12)}}
WHERE ba."namespace_id" = $1 AND ba."id" = $2
RETURNING {{bulk_columns}}

-- name: bulk_lock_deletable
-- The runs of $2 a bulk delete may delete, locked: terminal, and not a
-- finished child whose parent still waits for it in a running workflow
-- step (retention's rule, prune_candidates). A run another transaction
-- holds is waited for (the page must act on it or see it changed).
SELECT wr."id"
FROM (SELECT DISTINCT unnest($2::text[]) AS "id") AS c
JOIN LATERAL (
  SELECT wr."id"
  FROM {{schema}}."workflow_runs" AS wr
  WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = c."id"
    AND (wr."status" IN ('completed', 'succeeded', 'failed', 'canceled')) IS TRUE
    AND NOT EXISTS (
      SELECT 1 FROM {{schema}}."step_attempts" AS parent_step
      WHERE parent_step."namespace_id" = wr."parent_step_attempt_namespace_id"
        AND parent_step."id" = wr."parent_step_attempt_id"
        AND parent_step."status" = 'running'
    )
    AND NOT EXISTS (
      SELECT 1 FROM {{schema}}."step_attempts" AS waiting
      WHERE waiting."child_workflow_run_namespace_id" = wr."namespace_id"
        AND waiting."child_workflow_run_id" = wr."id"
        AND waiting."status" = 'running'
    )
  FOR UPDATE OF wr
) AS wr ON TRUE

-- name: bulk_cancel_runs
-- cancel_run for every run of $2 at once: the same guard (a run not
-- pending, running or sleeping when its row is locked matches nothing and
-- is skipped) and the same columns, in one statement, so that go
-- migration 6's statement triggers fire once per page rather than once
-- per run (a page of 1,000 single cancels ran at 1,400 runs/s,
-- docs/benchmarks.md). The runs are found by primary key from a
-- MATERIALIZED input of (namespace, id) pairs, so that no plan scans the
-- namespace (fragments.sql, "Lookups by id": on a fresh table the
-- planner joined the page against every run of the namespace, 24 s a
-- page).
--
-- The 'finished' notification goes to the runs a worker held (worker_id
-- set before the cancel: a pass may be executing, and must stop at once,
-- as after a single cancel); a pending or parked run has no pass, and a
-- client waiting for its result sees the end at its fallback poll
-- (events are hints). A notification per run cost 90 ms a page of 1,000.
-- Returns the canceled runs' ids and parents, whose parked parents are
-- woken after the commit, as a single cancel's.
WITH input AS MATERIALIZED (
  SELECT DISTINCT $1::text AS "namespace_id", unnest($2::text[]) AS "id"
),
held AS MATERIALIZED (
  SELECT c."namespace_id", c."id"
  FROM input AS c
  JOIN {{schema}}."workflow_runs" AS w ON w."namespace_id" = c."namespace_id" AND w."id" = c."id"
  WHERE {{unestimated(w."worker_id" IS NOT NULL)}}
),
canceled AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'canceled',
      "worker_id" = NULL,
      "available_at" = NULL,
      "finished_at" = {{stamp($3)}},
      "updated_at" = {{stamp($3)}},
      "go_queued_at" = NULL
  FROM input AS c
  WHERE wr."namespace_id" = c."namespace_id" AND wr."id" = c."id"
    AND {{unestimated(wr."status" IN ('pending', 'running', 'sleeping'))}}
  RETURNING wr."namespace_id", wr."id", wr."parent_step_attempt_namespace_id", wr."parent_step_attempt_id"
)
SELECT wr."namespace_id", wr."id", wr."parent_step_attempt_namespace_id", wr."parent_step_attempt_id",
  CASE WHEN EXISTS (SELECT 1 FROM held AS h WHERE h."namespace_id" = wr."namespace_id" AND h."id" = wr."id")
    THEN {{notify('finished')}} END AS notified
FROM canceled AS wr
