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
    "updated_at" = :now,
    "go_queued_at" = NULL
WHERE "namespace_id" = :ns
  AND "status" IN {{non_terminal_statuses}}
  AND "deadline_at" IS NOT NULL
  AND "deadline_at" <= :now
RETURNING {{parent_link}}

-- name: claim_candidates
-- Picks the runs to claim, in claim order: the due runs — pending, handed
-- back or with an expired lease, woken, of the legacy status sleeping, all
-- alike — by priority (higher first), then by the time they became
-- claimable (available_at), created_at and id; then the parked runs due by
-- :ahead (the claim's lookahead) but not yet. So a run handed back after
-- an outage, or woken, keeps its place ahead of the runs that became due
-- after it, and a run of priority 10 that slept wakes ahead of the runs of
-- priority 0. Each part reads one index in order and stops at :limit —
-- for runs of priority 0 OpenWorkflow's claim index (namespace, status,
-- available_at, created_at), one range per status; for the others the
-- partial index workflow_runs_go_claim_priority_idx, all claimable
-- statuses in claim order — so a claim sorts at most a few times :limit
-- rows and costs the same with 5 or 500,000 runs waiting: one query over
-- several statuses, or ordered by a CASE on the status, sorts every due
-- run on every claim. Only the ids: an ordinary claim takes the runs as
-- they come.
SELECT "id" FROM (
{{claim_candidate_parts(1)}})
ORDER BY "rank", "priority" DESC, COALESCE("fair_pass", {{fair_vtime}}), "available_at", "created_at", "id"
LIMIT :limit

-- name: claim_candidates_planned
-- claim_candidates for a claim that chooses among its candidates
-- (backend.PlanClaim: it admits runs of limited workflows, or caps some
-- workflows): with what orders them, and leaving out the workflows named
-- in :exclude (NULL, or a JSON array), which a capped claim may take no
-- more of.
SELECT "id", "workflow_name", "rank", "priority", "available_at", "created_at",
       COALESCE("fair_pass", {{fair_vtime}}), {{fair_vtime}} FROM (
{{claim_candidate_parts((:exclude IS NULL OR "workflow_name" NOT IN (SELECT value FROM json_each(:exclude))))}})
ORDER BY "rank", "priority" DESC, COALESCE("fair_pass", {{fair_vtime}}), "available_at", "created_at", "id"
LIMIT :limit

-- fragment: claim_candidate_parts(extra)
-- The parts of claim_candidates, each also filtered by {{extra}}: rank 0
-- the due runs, rank 1 those due only within the lookahead.
{{claim_priority_candidate("go_priority" > 0, {{extra}})}}
  UNION ALL
{{claim_candidate(0, 'pending', "go_priority" = 0 AND "available_at" <= :now, {{extra}})}}
  UNION ALL
{{claim_candidate(0, 'running', "go_priority" = 0 AND "available_at" <= :now, {{extra}})}}
  UNION ALL
{{claim_candidate(0, 'sleeping', "go_priority" = 0 AND "available_at" <= :now, {{extra}})}}
  UNION ALL
{{claim_priority_candidate("go_priority" < 0, {{extra}})}}
  UNION ALL
{{claim_candidate(1, 'running', "available_at" > :now AND "available_at" <= :ahead AND "worker_id" IS NULL, {{extra}})}}
  UNION ALL
{{claim_fair_candidate({{extra}})}}

-- fragment: claim_candidate(rank, status, due, extra)
-- One part of claim_candidates: up to :limit runs of one status, due as
-- {{due}} says, FIFO in claim-index order; priority 0 in the claim's order
-- (the early ones' priority is not weighed: they are few, none due yet).
  SELECT * FROM (
    SELECT "id", "workflow_name", {{rank}} AS "rank", 0 AS "priority", "available_at", "created_at", NULL AS "fair_pass"
    FROM "workflow_runs"
    WHERE "namespace_id" = :ns
      AND "status" = {{status}}
      AND {{due}}
      AND {{claim_filters}} AND {{extra}}
    ORDER BY "available_at", "created_at"
    LIMIT :limit)

-- fragment: claim_priority_candidate(priority, extra)
-- The part of claim_candidates for due runs of a priority other than 0
-- ({{priority}} says which) of every claimable status, by priority then
-- due time, from the partial index workflow_runs_go_claim_priority_idx
-- (whose predicate is repeated, as SQLite requires to use it).
  SELECT * FROM (
    SELECT "id", "workflow_name", 0 AS "rank", "go_priority" AS "priority", "available_at", "created_at", NULL AS "fair_pass"
    FROM "workflow_runs"
    WHERE "namespace_id" = :ns
      AND "status" IN {{non_terminal_statuses}} AND "go_priority" <> 0 AND {{priority}}
      AND "available_at" <= :now
      AND {{claim_filters}} AND {{extra}}
    ORDER BY "go_priority" DESC, "available_at", "created_at", "id"
    LIMIT :limit)

-- fragment: claim_fair_candidate(extra)
-- The part of claim_candidates for the runs waiting under fair shares
-- (go migration 22): due by go_fair_due_at, by priority then pass, from
-- the partial index workflow_runs_go_fair_idx (its predicate repeated);
-- empty unless fairness is used. Every other part's run has no pass of
-- its own: the claim orders it at the namespace's virtual time
-- (fair_vtime), so runs without fairness are FIFO among themselves and
-- go before the fair runs enqueued after them.
  SELECT * FROM (
    SELECT "id", "workflow_name", 0 AS "rank", "go_priority" AS "priority", "go_fair_due_at" AS "available_at",
           "created_at", "go_fair_pass" AS "fair_pass"
    FROM "workflow_runs"
    WHERE "namespace_id" = :ns
      AND "status" = 'pending' AND "go_fair_due_at" IS NOT NULL AND "available_at" IS NULL AND "go_paused_at" IS NULL
      AND "go_fair_due_at" <= :now
      AND {{claim_filters}} AND {{extra}}
    ORDER BY "go_priority" DESC, "go_fair_pass", "created_at", "id"
    LIMIT :limit)

-- fragment: fair_vtime
-- The namespace's virtual time under fair shares: the highest pass a
-- claim took (0 before any).
COALESCE((SELECT v."vtime" FROM "workflow_fair_clock" AS v WHERE v."namespace_id" = :ns), 0)

-- fragment: claim_filters
-- What every claim candidate must also be: not past its deadline, of the
-- :workflows (a JSON array of [name, version or null]) when set.
("deadline_at" IS NULL OR "deadline_at" > :now)
      AND (:workflows IS NULL OR EXISTS (
        SELECT 1 FROM json_each(:workflows) AS k
        WHERE json_extract(k.value, '$[0]') = "workflow_name" AND json_extract(k.value, '$[1]') IS "version"))

-- name: claim_run
-- Claims one candidate for :worker_id with a lease until :lease_until. It
-- assigns none of go migration 8's columns, so that SQLite leaves their
-- indexes alone (admit_run admits).
UPDATE "workflow_runs"
SET "status" = 'running',
    "attempts" = "attempts" + 1,
    "worker_id" = :worker_id,
    "available_at" = :lease_until,
    "started_at" = COALESCE("started_at", :now),
    "updated_at" = :now
WHERE "namespace_id" = :ns AND "id" = :run_id
RETURNING {{run_columns}}

-- name: admit_run
-- claim_run for a run waiting for admission, if it still waits: it is
-- admitted (it leaves the queue and records its admission time).
UPDATE "workflow_runs"
SET "status" = 'running',
    "attempts" = "attempts" + 1,
    "worker_id" = :worker_id,
    "available_at" = :lease_until,
    "started_at" = COALESCE("started_at", :now),
    "updated_at" = :now,
    "go_queued_at" = NULL,
    "go_admitted_at" = :now
WHERE "namespace_id" = :ns AND "id" = :run_id AND "status" = 'pending' AND "go_queued_at" IS NOT NULL
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
-- The heartbeat: a new lease until :lease_until, leaseholder only. On a
-- paused run go migration 12's trigger moves the lease to
-- go_paused_due_at (so that a resume restores a live lease), and the
-- statement returns the pause: the worker then starts no further step
-- and hands the run back.
UPDATE "workflow_runs"
SET "available_at" = :lease_until,
    "updated_at" = :now
WHERE {{owned_run}}
RETURNING "go_paused_at" IS NOT NULL

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
