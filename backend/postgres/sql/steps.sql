-- Step attempts: reads, and the step writes of ApplyWrites. Every step
-- write first locks its run's row FOR NO KEY UPDATE in the same statement
-- (owned_run), so a claim that moves the lease serializes with it: either
-- the write lands before the lease moves or it is refused. Every
-- statement's last parameter is the injected clock (see fragments.sql).

-- name: get_step
SELECT {{step_columns}}
FROM {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = {{by_id_ns($1)}} AND sa."id" = $2

-- name: list_steps
-- Completed by listStepsQuery like list_runs.
SELECT {{step_columns}}
FROM {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = $2

-- name: list_steps_summary
-- list_steps without output (ListStepAttemptsParams.OmitPayloads).
SELECT {{step_summary_columns}}
FROM {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = $2

-- name: list_step_histories
-- The attempts of every run of $2, grouped by run and oldest first within
-- one, through the (namespace_id, workflow_run_id, created_at) index.
SELECT {{step_columns}}
FROM {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = ANY($2::text[])
ORDER BY sa."workflow_run_id", sa."created_at", sa."id"

-- name: complete_step
-- Completes running attempt $4 of run $2 leased to worker $3 with output
-- $5; completing an attempt already completed keeps its first output and
-- timestamps.
WITH {{owned_run($1, $2, $3)}}
UPDATE {{schema}}."step_attempts" AS sa
SET "status" = 'completed',
    "output" = CASE WHEN sa."status" = 'running' THEN $5 ELSE sa."output" END,
    "error" = NULL,
    "finished_at" = COALESCE(sa."finished_at", {{now($6)}}),
    "updated_at" = CASE WHEN sa."status" = 'running' THEN {{now($6)}} ELSE sa."updated_at" END
FROM owned_run
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = $2 AND sa."id" = $4
  AND sa."status" IN ('running', 'completed', 'succeeded')
RETURNING {{step_columns}}

-- name: fail_step
-- Fails running attempt $4 with error $5; failing an attempt already
-- failed keeps its first error.
WITH {{owned_run($1, $2, $3)}}
UPDATE {{schema}}."step_attempts" AS sa
SET "status" = 'failed',
    "output" = NULL,
    "error" = CASE WHEN sa."status" = 'running' THEN $5 ELSE sa."error" END,
    "finished_at" = COALESCE(sa."finished_at", {{now($6)}}),
    "updated_at" = CASE WHEN sa."status" = 'running' THEN {{now($6)}} ELSE sa."updated_at" END
FROM owned_run
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = $2 AND sa."id" = $4
  AND sa."status" IN ('running', 'failed')
RETURNING {{step_columns}}

-- name: set_step_child
-- Links running workflow-kind attempt $4 to its child run ($5, $6).
WITH {{owned_run($1, $2, $3)}}
UPDATE {{schema}}."step_attempts" AS sa
SET "child_workflow_run_namespace_id" = $5,
    "child_workflow_run_id" = $6,
    "updated_at" = {{now($7)}}
FROM owned_run
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = $2 AND sa."id" = $4
  AND sa."status" = 'running'
RETURNING sa."id"

-- name: step_status
-- An attempt's status, to explain a refused write.
SELECT sa."status"
FROM {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = $2 AND sa."id" = $3
