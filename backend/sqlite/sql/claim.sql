-- Claims and leases. A claim is one BEGIN IMMEDIATE transaction of three
-- parts: the deadline sweep (fail_expired_runs), the choice of the runs
-- (claim_candidates), and one claim_run per run chosen (see
-- ClaimWorkflowRuns). See fragments.sql for the conventions.

-- name: fail_expired_runs
-- The claim's deadline sweep: fails every non-terminal run whose deadline
-- passed. It also catches runs leased by another worker: their next
-- fenced write fails. The partial index workflow_runs_go_deadline_idx
-- (migrate.sql) keeps it an index probe; its predicate repeats these
-- terms.
UPDATE "workflow_runs"
SET "status" = 'failed',
    "error" = :error,
    "worker_id" = NULL,
    "available_at" = NULL,
    "finished_at" = :now,
    "updated_at" = :now
WHERE "namespace_id" = :ns
  AND "status" IN {{non_terminal_statuses}}
  AND "deadline_at" IS NOT NULL
  AND "deadline_at" <= :now
RETURNING {{parent_link}}

-- name: claim_candidates
-- Picks the runs to claim: due pending runs first, then due running ones
-- (expired leases, parked runs), due runs of the legacy status sleeping,
-- and last the parked runs due by :ahead (the claim's lookahead) but not
-- yet; each part by available_at then created_at. Each part reads the
-- claim index (namespace, status, available_at, created_at) in order for
-- one status and stops at :limit, so a claim costs the same with 5 or
-- 500,000 runs waiting: one query over several statuses, or ordered by a
-- CASE on the status, sorts every due run on every claim.
SELECT "id" FROM (
{{claim_candidate(0, 'pending', "available_at" <= :now)}}
  UNION ALL
{{claim_candidate(1, 'running', "available_at" <= :now)}}
  UNION ALL
{{claim_candidate(2, 'sleeping', "available_at" <= :now)}}
  UNION ALL
{{claim_candidate(3, 'running', "available_at" > :now AND "available_at" <= :ahead AND "worker_id" IS NULL)}})
ORDER BY "rank", "available_at", "created_at", "id"
LIMIT :limit

-- fragment: claim_candidate(rank, status, due)
-- One part of claim_candidates: up to :limit runs of one status, due as
-- {{due}} says, not past their deadline, of the :workflows (a JSON array
-- of [name, version or null]) when set, in claim-index order.
  SELECT * FROM (
    SELECT "id", {{rank}} AS "rank", "available_at", "created_at"
    FROM "workflow_runs"
    WHERE "namespace_id" = :ns
      AND "status" = {{status}}
      AND {{due}}
      AND ("deadline_at" IS NULL OR "deadline_at" > :now)
      AND (:workflows IS NULL OR EXISTS (
        SELECT 1 FROM json_each(:workflows) AS k
        WHERE json_extract(k.value, '$[0]') = "workflow_name" AND json_extract(k.value, '$[1]') IS "version"))
    ORDER BY "available_at", "created_at"
    LIMIT :limit)

-- name: claim_run
-- Claims one candidate for :worker_id with a lease until :lease_until.
UPDATE "workflow_runs"
SET "status" = 'running',
    "attempts" = "attempts" + 1,
    "worker_id" = :worker_id,
    "available_at" = :lease_until,
    "started_at" = COALESCE("started_at", :now),
    "updated_at" = :now
WHERE "namespace_id" = :ns AND "id" = :run_id
RETURNING {{run_columns}}

-- name: next_due
-- When the namespace's next run becomes claimable (a delayed start, a
-- parked run's wake-up, a lease's expiry), one index-ordered probe per
-- status.
SELECT min("t") FROM (
  SELECT * FROM (SELECT "available_at" AS "t" FROM "workflow_runs"
    WHERE "namespace_id" = :ns AND "status" = 'pending' AND "available_at" > :now ORDER BY "available_at" LIMIT 1)
  UNION ALL
  SELECT * FROM (SELECT "available_at" FROM "workflow_runs"
    WHERE "namespace_id" = :ns AND "status" = 'running' AND "available_at" > :now ORDER BY "available_at" LIMIT 1)
  UNION ALL
  SELECT * FROM (SELECT "available_at" FROM "workflow_runs"
    WHERE "namespace_id" = :ns AND "status" = 'sleeping' AND "available_at" > :now ORDER BY "available_at" LIMIT 1))

-- name: extend_lease
-- The heartbeat: a new lease until :lease_until, leaseholder only.
UPDATE "workflow_runs"
SET "available_at" = :lease_until,
    "updated_at" = :now
WHERE {{owned_run}}
RETURNING "id"

-- name: release_worker_runs
-- Hands back the running runs leased to one of the worker ids of the
-- JSON array :worker_ids (a claim whose outcome the worker does not know).
UPDATE "workflow_runs"
SET "worker_id" = NULL,
    "available_at" = :now,
    "updated_at" = :now
WHERE "namespace_id" = :ns
  AND "status" = 'running'
  AND "worker_id" IN (SELECT value FROM json_each(:worker_ids))
