-- Runs: creation, reads, cancellation, and the wake-ups that follow a
-- run's end or a signal (see fragments.sql for the conventions).

-- name: get_run_by_idempotency_key
-- The oldest run with the key created at or after :since (now − the
-- idempotency period, 24 h), whatever its status.
SELECT {{run_columns}}
FROM "workflow_runs"
WHERE "namespace_id" = :ns
  AND "workflow_name" = :workflow_name
  AND "idempotency_key" = :idempotency_key
  AND "created_at" >= :since
ORDER BY "created_at" ASC, "id" ASC
LIMIT 1

-- name: insert_run
-- Inserts a pending run, claimable from :available_at, with :priority and
-- :concurrency_key. A run of a workflow with stored limits (one
-- primary-key probe of workflow_limits) waits for admission instead:
-- available_at NULL, go_queued_at :available_at, and its concurrency key
-- '' when none was given (see PostgreSQL's insert_run). With a
-- :claim_worker (backend.CreateClaim) a run that does not wait for
-- admission is inserted claimed, as the claim would lease it: running,
-- attempts 1, worker_id :claim_worker, leased until :lease_until.
INSERT INTO "workflow_runs" (
  "namespace_id", "id", "workflow_name", "version", "status",
  "idempotency_key", "config", "context", "input", "attempts",
  "parent_step_attempt_namespace_id", "parent_step_attempt_id",
  "available_at", "deadline_at", "created_at", "updated_at",
  "go_priority", "go_concurrency_key", "go_queued_at", "worker_id", "started_at"
)
SELECT
  :ns, :id, :workflow_name, :version, CASE WHEN lim."claimed" THEN 'running' ELSE 'pending' END,
  :idempotency_key, :config, :context, :input, CASE WHEN lim."claimed" THEN 1 ELSE 0 END,
  :parent_ns, :parent_id,
  CASE WHEN lim."limited" THEN NULL WHEN lim."claimed" THEN :lease_until ELSE :available_at END, :deadline_at, :now, :now,
  :priority, CASE WHEN lim."limited" THEN COALESCE(:concurrency_key, '') ELSE :concurrency_key END,
  CASE WHEN lim."limited" THEN :available_at END,
  CASE WHEN lim."claimed" THEN :claim_worker END,
  CASE WHEN lim."claimed" THEN :now END
FROM (SELECT l."limited", :claim_worker IS NOT NULL AND NOT l."limited" AS "claimed"
      FROM (SELECT EXISTS (SELECT 1 FROM "workflow_limits" AS l
                           WHERE l."namespace_id" = :ns AND l."workflow_name" = :workflow_name) AS "limited") AS l) AS lim
RETURNING {{run_columns}}

-- name: get_run
SELECT {{run_columns}}
FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "id" = :run_id

-- name: list_runs
-- Completed by ListWorkflowRuns (listPage) with the filters, the cursor
-- condition, the order and the limit.
SELECT {{run_columns}}
FROM "workflow_runs"
WHERE "namespace_id" = :ns

-- name: list_runs_summary
-- list_runs without input and output (ListWorkflowRunsParams.OmitPayloads):
-- NULL in their place, so SQLite reads neither value, nor the overflow
-- pages a large one spans.
SELECT {{run_summary_columns}}
FROM "workflow_runs"
WHERE "namespace_id" = :ns

-- name: count_runs
SELECT "status", COUNT(*)
FROM "workflow_runs"
WHERE "namespace_id" = :ns
GROUP BY "status"

-- name: cancel_run
-- Cancels a non-terminal run, whoever holds it.
UPDATE "workflow_runs"
SET "status" = 'canceled',
    "worker_id" = NULL,
    "available_at" = NULL,
    "finished_at" = :now,
    "updated_at" = :now,
    "go_queued_at" = NULL
WHERE "namespace_id" = :ns
  AND "id" = :run_id
  AND "status" IN {{non_terminal_statuses}}
RETURNING {{run_columns}}

-- name: retry_run
-- Retries failed run :run_id (RetryWorkflowRun): pending and due now,
-- without error, finish time or worker, with deadline :deadline_at. Only
-- a failed run matches, so of two retries (serialized by the write lock)
-- the second matches nothing. insert_retry_mark follows in the same
-- transaction. A run of a workflow with stored limits waits for admission
-- again (see PostgreSQL's retry_run).
UPDATE "workflow_runs"
SET "status" = 'pending',
    "available_at" = CASE WHEN {{limited}} THEN NULL ELSE :now END,
    "error" = NULL,
    "finished_at" = NULL,
    "worker_id" = NULL,
    "deadline_at" = :deadline_at,
    "updated_at" = :now,
    "go_queued_at" = CASE WHEN {{limited}} THEN :now END,
    "go_admitted_at" = NULL,
    "go_concurrency_key" = CASE WHEN {{limited}} THEN COALESCE("go_concurrency_key", '') ELSE "go_concurrency_key" END
WHERE "namespace_id" = :ns
  AND "id" = :run_id
  AND "status" = 'failed'
  -- a run marked never to be retried forward (backend.NotRetryableStep)
  AND NOT EXISTS (
    SELECT 1 FROM "step_attempts" AS nr
    WHERE nr."namespace_id" = :ns AND nr."workflow_run_id" = :run_id
      AND nr."step_name" = '__not_retryable' AND nr."status" IN ('completed', 'succeeded')
  )
RETURNING {{run_columns}}

-- name: insert_retry_mark
-- The mark of a manual retry in the run's history: a completed attempt
-- :step_id of kind 'retry' named '__retry:' || :step_id, with output
-- {"attempts": :attempts} (the run's attempts when retried), from which a
-- worker's history resets the retry budgets (internal/history).
INSERT INTO "step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status",
  "config", "context", "output", "error",
  "child_workflow_run_namespace_id", "child_workflow_run_id",
  "started_at", "finished_at", "created_at", "updated_at"
)
VALUES (
  :ns, :step_id, :run_id, '__retry:' || :step_id, 'retry', 'completed',
  '{}', NULL, json_object('attempts', :attempts), NULL,
  NULL, NULL,
  :now, :now, :now, :now
)

-- name: wake_parent
-- Makes the parent of a finished child claimable now, only if the parent
-- is parked (no worker) and its workflow attempt linked to this child is
-- still running. :parent_ns/:parent_step_id come from the child's parent
-- columns; :child_ns/:child_id are the child's own key.
UPDATE "workflow_runs"
SET "available_at" = {{wake_now}},
    "updated_at" = :now
WHERE "namespace_id" = :parent_ns
  AND "id" = (
    SELECT "workflow_run_id"
    FROM "step_attempts"
    WHERE "namespace_id" = :parent_ns
      AND "id" = :parent_step_id
      AND "kind" = 'workflow'
      AND "status" = 'running'
      AND "child_workflow_run_namespace_id" = :child_ns
      AND "child_workflow_run_id" = :child_id
    LIMIT 1
  )
  AND ("status" = 'sleeping' OR ("status" = 'running' AND "worker_id" IS NULL))
RETURNING "id"

-- name: wake_run
-- Makes a parked (unowned, non-terminal) run claimable now: a signal was
-- delivered to it.
UPDATE "workflow_runs"
SET "available_at" = {{wake_now}},
    "updated_at" = :now
WHERE "namespace_id" = :ns
  AND "id" = :run_id
  AND "status" IN {{non_terminal_statuses}}
  AND "worker_id" IS NULL
RETURNING "id"
