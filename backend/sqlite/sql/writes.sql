-- The worker's run writes and step inserts (ApplyWrites), each fenced on
-- the run's ownership (owned_run), and the savepoint that bounds one group
-- of a batch. See fragments.sql for the conventions.

-- name: insert_step
-- Inserts an attempt only while the run is owned; no row comes back
-- otherwise. A batch may insert it running, or already completed or
-- failed; started_at and finished_at come computed from Go.
INSERT INTO "step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status",
  "config", "context", "output", "error",
  "child_workflow_run_namespace_id", "child_workflow_run_id",
  "started_at", "finished_at", "created_at", "updated_at"
)
SELECT :ns, :step_id, :run_id, :step_name, :kind, :status,
  :config, :context, :output, :error,
  :child_ns, :child_id,
  :started_at, :finished_at, :now, :now
FROM "workflow_runs"
WHERE {{owned_run}}
RETURNING "id"

-- name: complete_run
-- Completes the owned run with :output, or, when its deadline has passed,
-- fails it with :deadline_error exactly as the claim's deadline sweep
-- would, so that no run completes past its deadline whichever of the two
-- comes first. Returns the parent link and how the run ended (the status,
-- output and error published with EventRunFinished).
UPDATE "workflow_runs"
SET "status" = CASE WHEN {{past_deadline}} THEN 'failed' ELSE 'completed' END,
    "output" = CASE WHEN {{past_deadline}} THEN NULL ELSE :output END,
    "error" = CASE WHEN {{past_deadline}} THEN :deadline_error ELSE NULL END,
    "worker_id" = CASE WHEN {{past_deadline}} THEN NULL ELSE "worker_id" END,
    "available_at" = NULL,
    "finished_at" = :now,
    "updated_at" = :now
WHERE {{owned_run}}
RETURNING {{parent_link}}, "status", "output", "error"

-- name: fail_run
-- Fails the owned run for good with :error (NULL for none); returns the
-- parent link and how the run ended, as complete_run.
UPDATE "workflow_runs"
SET "status" = 'failed',
    "available_at" = NULL,
    "finished_at" = :now,
    "error" = :error,
    "worker_id" = NULL,
    "started_at" = NULL,
    "updated_at" = :now
WHERE {{owned_run}}
RETURNING {{parent_link}}, "status", "output", "error"

-- name: reschedule_run
-- Sets the owned run pending at :available_at with :error (a retry).
UPDATE "workflow_runs"
SET "status" = 'pending',
    "available_at" = :available_at,
    "finished_at" = NULL,
    "error" = :error,
    "worker_id" = NULL,
    "started_at" = NULL,
    "updated_at" = :now
WHERE {{owned_run}}
RETURNING "id"

-- name: park_run
-- Parks an owned run until :available_at. If the wake-up it parks for has
-- already happened (a linked child is terminal, a signal-wait has its
-- delivery, a hook-wait's hook has a payload numbered above the wait's
-- afterSeq, or an event-wait has its event: go migration 19) and :available_at is later than now, it is parked until now
-- instead.
UPDATE "workflow_runs"
SET "status" = 'running',
    "available_at" = CASE
      WHEN (
        EXISTS (
          SELECT 1
          FROM "step_attempts" sa
          JOIN "workflow_runs" child
            ON child."namespace_id" = sa."child_workflow_run_namespace_id"
            AND child."id" = sa."child_workflow_run_id"
          WHERE sa."namespace_id" = "workflow_runs"."namespace_id"
            AND sa."workflow_run_id" = "workflow_runs"."id"
            AND sa."kind" = 'workflow'
            AND sa."status" = 'running'
            AND child."status" IN ('completed', 'succeeded', 'failed', 'canceled')
        )
        OR EXISTS (
          SELECT 1
          FROM "step_attempts" sa
          JOIN "workflow_signals" ws
            ON ws."namespace_id" = sa."namespace_id"
            AND ws."step_attempt_id" = sa."id"
          WHERE sa."namespace_id" = "workflow_runs"."namespace_id"
            AND sa."workflow_run_id" = "workflow_runs"."id"
            AND sa."kind" = 'signal-wait'
            AND sa."status" = 'running'
        )
        OR EXISTS (
          SELECT 1
          FROM "step_attempts" sa
          JOIN "workflow_hook_payloads" hp
            ON hp."namespace_id" = sa."namespace_id"
            AND hp."hook_id" = json_extract(sa."context", '$.hookId')
            AND hp."seq" > {{hook_wait_after(sa)}}
          WHERE sa."namespace_id" = "workflow_runs"."namespace_id"
            AND sa."workflow_run_id" = "workflow_runs"."id"
            AND sa."kind" = 'hook-wait'
            AND sa."status" = 'running'
        )
        OR EXISTS (
          SELECT 1
          FROM "go_event_waits" ew
          WHERE ew."namespace_id" = "workflow_runs"."namespace_id"
            AND ew."workflow_run_id" = "workflow_runs"."id"
            AND ew."event_id" IS NOT NULL
            AND EXISTS (
              SELECT 1 FROM "step_attempts" sa
              WHERE sa."namespace_id" = ew."namespace_id" AND sa."id" = ew."step_attempt_id"
                AND sa."status" = 'running'
            )
        )
      ) AND :available_at > :now THEN :now
      ELSE :available_at
    END,
    "worker_id" = NULL,
    "updated_at" = :now
WHERE "namespace_id" = :ns
  AND "id" = :run_id
  AND "status" NOT IN ('succeeded', 'completed', 'failed', 'canceled')
  AND "worker_id" = :worker_id
RETURNING "available_at"

-- name: savepoint
-- savepoint, release_savepoint and rollback_to_savepoint bound one group
-- of a batch (ApplyWrites), so a group that fails leaves the others.
SAVEPOINT "batch_write"

-- name: release_savepoint
RELEASE "batch_write"

-- name: rollback_to_savepoint
ROLLBACK TO "batch_write"
