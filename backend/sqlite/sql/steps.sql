-- Step attempts: reads, and the step writes of ApplyWrites, each fenced
-- on its run's ownership (owned_step). See fragments.sql for the
-- conventions.

-- name: get_step
SELECT {{step_columns}}
FROM "step_attempts"
WHERE "namespace_id" = :ns AND "id" = :step_id

-- name: list_steps
-- Completed by ListStepAttempts (listPage) like list_runs.
SELECT {{step_columns}}
FROM "step_attempts"
WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id

-- name: list_steps_summary
-- list_steps without output (ListStepAttemptsParams.OmitPayloads).
SELECT {{step_summary_columns}}
FROM "step_attempts"
WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id

-- name: list_step_histories
-- The attempts of every run of the JSON array :ids, grouped by run and
-- oldest first within one.
SELECT {{step_columns}}
FROM "step_attempts"
WHERE "namespace_id" = :ns AND "workflow_run_id" IN (SELECT "value" FROM json_each(:ids))
ORDER BY "workflow_run_id", "created_at", "id"

-- name: complete_step
-- Completes the attempt with :output. Idempotent: an already completed
-- attempt keeps its first output and timestamps.
UPDATE "step_attempts"
SET "status" = 'completed',
    "output" = CASE WHEN "status" = 'running' THEN :output ELSE "output" END,
    "error" = NULL,
    "finished_at" = COALESCE("finished_at", :now),
    "updated_at" = CASE WHEN "status" = 'running' THEN :now ELSE "updated_at" END
WHERE "status" IN ('running', 'completed', 'succeeded')
  AND {{owned_step}}
RETURNING "id"

-- name: fail_step
-- Fails the attempt with :error; idempotent like complete_step (an
-- attempt already failed keeps its first error).
UPDATE "step_attempts"
SET "status" = 'failed',
    "output" = NULL,
    "error" = CASE WHEN "status" = 'running' THEN :error ELSE "error" END,
    "finished_at" = COALESCE("finished_at", :now),
    "updated_at" = CASE WHEN "status" = 'running' THEN :now ELSE "updated_at" END
WHERE "status" IN ('running', 'failed')
  AND {{owned_step}}
RETURNING "id"

-- name: set_step_child
-- Links the running workflow-kind attempt to its child run (:child_ns,
-- :child_id).
UPDATE "step_attempts"
SET "child_workflow_run_namespace_id" = :child_ns,
    "child_workflow_run_id" = :child_id,
    "updated_at" = :now
WHERE "status" = 'running'
  AND {{owned_step}}
RETURNING "id"
