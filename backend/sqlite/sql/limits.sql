-- Limits and admission (backend.LimitStore, and the claim that admits runs
-- of limited workflows: see claimAdmitting in limits.go). Every claim runs
-- in a BEGIN IMMEDIATE transaction, SQLite's one write lock, so counting a
-- workflow's slots and admitting into them cannot interleave with another
-- claim: no lock of their own is needed (PostgreSQL's claims take an
-- advisory lock per workflow instead).

-- name: put_limits
-- Stores the limits of :workflow_name (NULL columns limit nothing),
-- declared by :declared_by (NULL: not by a worker), returning a row only
-- when they changed: the limits replaced (NULL for a new row, as JSON:
-- see go migration 10) and when.
INSERT INTO "workflow_limits" AS l (
  "namespace_id", "workflow_name", "concurrency", "concurrency_per_key", "rate_limit", "rate_period_ms",
  "declared_by", "created_at", "updated_at"
)
VALUES (:ns, :workflow_name, :concurrency, :per_key, :rate_limit, :rate_period_ms, :declared_by, :now, :now)
ON CONFLICT ("namespace_id", "workflow_name") DO UPDATE
SET "concurrency" = excluded."concurrency",
    "concurrency_per_key" = excluded."concurrency_per_key",
    "rate_limit" = excluded."rate_limit",
    "rate_period_ms" = excluded."rate_period_ms",
    "declared_by" = excluded."declared_by",
    "updated_at" = excluded."updated_at",
    "replaced" = json_object('concurrency', l."concurrency", 'concurrencyPerKey', l."concurrency_per_key",
      'rateLimit', l."rate_limit", 'ratePeriodMs', l."rate_period_ms", 'declaredBy', l."declared_by"),
    "replaced_at" = excluded."updated_at"
WHERE l."concurrency" IS NOT excluded."concurrency"
   OR l."concurrency_per_key" IS NOT excluded."concurrency_per_key"
   OR l."rate_limit" IS NOT excluded."rate_limit"
   OR l."rate_period_ms" IS NOT excluded."rate_period_ms"
RETURNING "replaced", "replaced_at"

-- name: queue_backlog
-- When the limits of :workflow_name were stored or changed: its pending
-- runs that never started wait for admission from when they were due
-- (backend.LimitStore), with the key '' when they have none.
UPDATE "workflow_runs"
SET "go_queued_at" = "available_at",
    "available_at" = NULL,
    "go_concurrency_key" = COALESCE("go_concurrency_key", ''),
    "updated_at" = :now
WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name
  AND "status" = 'pending' AND "attempts" = 0 AND "started_at" IS NULL
  AND "go_queued_at" IS NULL AND "available_at" IS NOT NULL

-- name: count_started_backlog
-- And its runs started and not finished, which no admission counted,
-- hold slots from their start.
UPDATE "workflow_runs"
SET "go_admitted_at" = COALESCE("started_at", :now),
    "go_concurrency_key" = COALESCE("go_concurrency_key", '')
WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name
  AND "status" IN {{non_terminal_statuses}} AND ("attempts" > 0 OR "started_at" IS NOT NULL)
  AND "go_admitted_at" IS NULL AND "go_queued_at" IS NULL

-- name: delete_limits
DELETE FROM "workflow_limits"
WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name
RETURNING 1

-- name: forget_limit_starts
DELETE FROM "workflow_limit_starts"
WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name

-- name: release_queued_runs
-- Makes the runs of :workflow_name waiting for admission ordinary pending
-- runs, available when they were queued for (and unqueues those that
-- ended while they waited); returns the available_at of each released.
UPDATE "workflow_runs"
SET "available_at" = CASE WHEN "status" = 'pending' THEN "go_queued_at" ELSE "available_at" END,
    "go_queued_at" = NULL,
    "updated_at" = CASE WHEN "status" = 'pending' THEN :now ELSE "updated_at" END
WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name AND "go_queued_at" IS NOT NULL
RETURNING CASE WHEN "status" = 'pending' THEN "available_at" END

-- name: unqueue_run
-- Clears go_queued_at of run :run_id, which ended while it waited.
UPDATE "workflow_runs" SET "go_queued_at" = NULL
WHERE "namespace_id" = :ns AND "id" = :run_id AND "status" <> 'pending'

-- name: list_limits
SELECT "workflow_name", "concurrency", "concurrency_per_key", "rate_limit", "rate_period_ms", "updated_at",
       "declared_by", "replaced", "replaced_at"
FROM "workflow_limits"
WHERE "namespace_id" = :ns
ORDER BY "workflow_name"

-- name: admission_limits
-- The limits of :workflow_name and, when it has a concurrency limit, its
-- runs admitted and not finished (all keys; from
-- workflow_runs_go_admitted_idx), else 0.
SELECT l."concurrency", l."concurrency_per_key", l."rate_limit", l."rate_period_ms",
       CASE WHEN l."concurrency" IS NOT NULL THEN
         (SELECT count(*) FROM "workflow_runs" AS a
          WHERE a."namespace_id" = :ns AND a."workflow_name" = :workflow_name
            AND a."go_admitted_at" IS NOT NULL AND a."status" IN {{non_terminal_statuses}})
       ELSE 0 END
FROM "workflow_limits" AS l
WHERE l."namespace_id" = :ns AND l."workflow_name" = :workflow_name

-- name: admission_window
-- The first :limit runs of :workflow_name in its queue, in claim order
-- (priority, then FIFO), from workflow_runs_go_queue_idx: the admission's
-- first look (see PostgreSQL's admission_queue). Runs that ended while
-- they waited (by a writer that did not clear go_queued_at) come with
-- their status, for the caller to skip and unqueue. Each row has its
-- key's counts too, as admission_key_counts gives them (0 for a limit the
-- workflow has not), so that the look is one statement.
SELECT w."id", w."go_concurrency_key", w."go_priority", w."go_queued_at", w."created_at", w."deadline_at", w."status",
       CASE WHEN l."concurrency_per_key" IS NOT NULL THEN
         (SELECT count(*) FROM "workflow_runs" AS a
          WHERE a."namespace_id" = :ns AND a."workflow_name" = :workflow_name AND a."go_concurrency_key" = w."go_concurrency_key"
            AND a."go_admitted_at" IS NOT NULL AND a."status" IN {{non_terminal_statuses}})
       ELSE 0 END,
       CASE WHEN l."rate_limit" IS NOT NULL THEN
         (SELECT count(*) FROM "workflow_limit_starts" AS s
          WHERE s."namespace_id" = :ns AND s."workflow_name" = :workflow_name AND s."concurrency_key" = w."go_concurrency_key"
            AND s."started_at" > :since)
       ELSE 0 END
FROM (
  SELECT "id", "go_concurrency_key", "go_priority", "go_queued_at", "created_at", "deadline_at", "status"
  FROM "workflow_runs"
  WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name AND "go_queued_at" IS NOT NULL
  ORDER BY "go_priority" DESC, "go_queued_at", "created_at", "id"
  LIMIT :limit
) AS w
JOIN "workflow_limits" AS l ON l."namespace_id" = :ns AND l."workflow_name" = :workflow_name
ORDER BY w."go_priority" DESC, w."go_queued_at", w."created_at", w."id"

-- name: admission_next_key
-- The smallest concurrency key at or above :from among the waiting runs of
-- :workflow_name: one probe of workflow_runs_go_queue_key_idx, a step of
-- the admission's key-by-key look.
SELECT min("go_concurrency_key")
FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name
  AND "go_queued_at" IS NOT NULL AND +"status" = 'pending'
  AND "go_concurrency_key" >= :from

-- name: admission_key_head
-- The first :limit due waiting runs of :workflow_name with key :key, in
-- claim order (workflow_runs_go_queue_key_idx).
SELECT "id", "go_concurrency_key", "go_priority", "go_queued_at", "created_at", "deadline_at", "status"
FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name AND "go_concurrency_key" = :key
  AND "go_queued_at" IS NOT NULL AND +"status" = 'pending'
  AND "go_queued_at" <= :now AND ("deadline_at" IS NULL OR "deadline_at" > :now)
ORDER BY "go_priority" DESC, "go_queued_at", "created_at", "id"
LIMIT :limit

-- name: admission_key_counts
-- For key :key of :workflow_name: its runs admitted and not finished, and
-- its admissions after :since (the start of the rate period).
SELECT
  (SELECT count(*) FROM "workflow_runs" AS a
   WHERE a."namespace_id" = :ns AND a."workflow_name" = :workflow_name AND a."go_concurrency_key" = :key
     AND a."go_admitted_at" IS NOT NULL AND a."status" IN {{non_terminal_statuses}}),
  (SELECT count(*) FROM "workflow_limit_starts" AS s
   WHERE s."namespace_id" = :ns AND s."workflow_name" = :workflow_name AND s."concurrency_key" = :key
     AND s."started_at" > :since)

-- name: insert_limit_start
-- Records the admission of run :run_id (key :key) for the rate limit.
INSERT INTO "workflow_limit_starts" ("namespace_id", "workflow_name", "concurrency_key", "started_at", "workflow_run_id")
VALUES (:ns, :workflow_name, :key, :now, :run_id)

-- name: prune_limit_starts
-- Forgets the admissions of :workflow_name at or before :until (the start
-- of its rate period).
DELETE FROM "workflow_limit_starts"
WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name AND "started_at" <= :until
