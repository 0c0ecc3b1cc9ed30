-- Bulk actions (backend.BulkActionStore, bulk.go; go migration 14), as
-- PostgreSQL's sql/bulk.sql. A page is one BEGIN IMMEDIATE transaction:
-- get_bulk_action (the write lock serializes the pages), the single-run
-- statements of runs.sql per run (cancel_run; retry_run with
-- insert_retry_mark) or bulk_deletable and retention's deletes, then
-- advance_bulk_action.

-- fragment: bulk_columns
-- The go_bulk_actions columns in the order scanBulkAction reads them.
"namespace_id", "id", "operation", "query", "reason", "requested_by",
  "state", "max_per_second", "matched", "acted", "skipped", "failed",
  "pages", "cursor", "last_error", "lease_owner", "lease_expires_at",
  "created_at", "updated_at", "started_at", "finished_at"

-- name: insert_bulk_action
INSERT INTO "go_bulk_actions" (
  "namespace_id", "id", "operation", "query", "reason", "requested_by", "state",
  "max_per_second", "matched", "created_at", "updated_at"
)
VALUES (:ns, :id, :operation, :query, :reason, :requested_by, 'running',
  :max_per_second, :matched, :created_at, :now)
RETURNING {{bulk_columns}}

-- name: get_bulk_action
SELECT {{bulk_columns}}
FROM "go_bulk_actions"
WHERE "namespace_id" = :ns AND "id" = :id

-- name: list_bulk_actions
-- Completed by ListBulkActions (listPage) with the cursor, order, limit.
SELECT {{bulk_columns}}
FROM "go_bulk_actions"
WHERE "namespace_id" = :ns

-- name: cancel_bulk_action
UPDATE "go_bulk_actions"
SET "state" = 'canceling', "updated_at" = :now
WHERE "namespace_id" = :ns AND "id" = :id AND "state" = 'running'
RETURNING {{bulk_columns}}

-- name: claim_bulk_action
-- Leases the oldest open action without a live lease to :owner until
-- :expires_at (the write lock makes claimers take turns).
UPDATE "go_bulk_actions"
SET "lease_owner" = :owner,
    "lease_expires_at" = :expires_at,
    "started_at" = COALESCE("started_at", :now),
    "updated_at" = :now
WHERE ("namespace_id", "id") = (
  SELECT o."namespace_id", o."id"
  FROM "go_bulk_actions" AS o
  WHERE o."namespace_id" = :ns AND o."state" IN ('running', 'canceling')
    AND (o."lease_expires_at" IS NULL OR o."lease_expires_at" <= :now)
  ORDER BY o."created_at", o."id"
  LIMIT 1
)
RETURNING {{bulk_columns}}

-- name: advance_bulk_action
-- What a page did (see PostgreSQL's advance_bulk_action): :state NULL
-- leaves the state; a final state finishes the action and drops the lease.
UPDATE "go_bulk_actions"
SET "cursor" = :cursor,
    "acted" = "acted" + :acted,
    "skipped" = "skipped" + :skipped,
    "failed" = "failed" + :failed,
    "pages" = "pages" + :pages,
    "state" = COALESCE(:state, "state"),
    "last_error" = COALESCE(:last_error, "last_error"),
    "finished_at" = CASE WHEN :state IN ('completed', 'canceled', 'failed') THEN :now END,
    "lease_owner" = CASE WHEN :state IN ('completed', 'canceled', 'failed') THEN NULL ELSE :owner END,
    "lease_expires_at" = CASE WHEN :state IN ('completed', 'canceled', 'failed') THEN NULL ELSE :expires_at END,
    "updated_at" = :now
WHERE "namespace_id" = :ns AND "id" = :id
RETURNING {{bulk_columns}}

-- name: bulk_deletable
-- The runs of :ids (a JSON array) a bulk delete may delete: terminal, and
-- not a finished child whose parent still waits for it in a running
-- workflow step (retention's rule, prune_part).
SELECT wr."id"
FROM "workflow_runs" AS wr
WHERE wr."namespace_id" = :ns AND wr."id" IN (SELECT value FROM json_each(:ids))
  AND wr."status" IN ('completed', 'succeeded', 'failed', 'canceled')
  AND NOT EXISTS (
    SELECT 1 FROM "step_attempts" AS parent_step
    WHERE parent_step."namespace_id" = wr."parent_step_attempt_namespace_id"
      AND parent_step."id" = wr."parent_step_attempt_id"
      AND parent_step."status" = 'running')
  AND NOT EXISTS (
    SELECT 1 FROM "step_attempts" AS waiting
    WHERE waiting."child_workflow_run_namespace_id" = wr."namespace_id"
      AND waiting."child_workflow_run_id" = wr."id"
      AND waiting."status" = 'running')
