-- Forks (backend.RunForker, fork.go): a new run of the same workflow and
-- input whose history starts with copies of the forked run's completed
-- attempts before a step (backend.PlanFork chooses them), in one
-- transaction. JSON columns are copied as stored, so a value Go stored
-- escaped (go migration 3) is copied with its record (fork_escapes).

-- name: fork_run
-- Inserts fork $3 of run $2 of namespace $1: pending and due now, the
-- same workflow name, version, config, input, priority and concurrency
-- key, context $4, no idempotency key, parent or deadline; announced as
-- work. A fork of a workflow with stored limits waits for admission, as
-- any new run of it (insert_run). Its attempts
-- start at 1, with the mark $6 of kind 'retry' named '__fork:' || $6
-- (output {"attempts": 1}) after the copied attempts: a worker reads the
-- history of a run claimed before (attempts above 1 at the claim), and
-- the mark starts the fork's retry budgets from its own claims, as after
-- a manual retry (RetryWorkflowRun, internal/history).
WITH inserted AS (
  INSERT INTO {{schema}}."workflow_runs" AS wr (
    "namespace_id", "id", "workflow_name", "version", "status", "idempotency_key",
    "config", "context", "input", "attempts",
    "parent_step_attempt_namespace_id", "parent_step_attempt_id",
    "available_at", "deadline_at", "created_at", "updated_at",
    "go_priority", "go_concurrency_key", "go_queued_at"
  )
  SELECT src."namespace_id", $3, src."workflow_name", src."version", 'pending', NULL,
    src."config", $4::jsonb, src."input", 1,
    NULL, NULL,
    CASE WHEN lim."limited" THEN NULL ELSE {{now($5)}} END, NULL, {{now($5)}}, {{now($5)}},
    src."go_priority",
    CASE WHEN lim."limited" THEN COALESCE(src."go_concurrency_key", '') ELSE src."go_concurrency_key" END,
    CASE WHEN lim."limited" THEN {{now($5)}} END
  FROM {{schema}}."workflow_runs" AS src
  CROSS JOIN LATERAL (SELECT {{limited(src."namespace_id", src."workflow_name")}} AS "limited") AS lim
  WHERE src."namespace_id" = {{by_id_ns($1)}} AND src."id" = $2
  RETURNING wr.*, {{notify('work')}} AS notified
),
mark AS (
  INSERT INTO {{schema}}."step_attempts" (
    "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status",
    "config", "context", "output", "error",
    "started_at", "finished_at", "created_at", "updated_at"
  )
  SELECT wr."namespace_id", $6::text, wr."id", '__fork:' || $6::text, 'retry', 'completed',
    '{}'::jsonb, NULL, '{"attempts":1}'::jsonb, NULL,
    {{now($5)}}, {{now($5)}}, {{now($5)}}, {{now($5)}}
  FROM inserted AS wr
)
SELECT {{run_columns}} FROM inserted AS wr

-- name: fork_steps
-- Copies the attempts $3 of the forked run into fork $2 under the new ids
-- $4 (same positions): every column as recorded, times included, so the
-- fork's history keeps their order; updated_at is now.
INSERT INTO {{schema}}."step_attempts" AS sa (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status",
  "config", "context", "output", "error",
  "child_workflow_run_namespace_id", "child_workflow_run_id",
  "started_at", "finished_at", "created_at", "updated_at"
)
SELECT src."namespace_id", m."new_id", $2, src."step_name", src."kind", src."status",
  src."config", src."context", src."output", src."error",
  src."child_workflow_run_namespace_id", src."child_workflow_run_id",
  src."started_at", src."finished_at", src."created_at", {{now($5)}}
FROM unnest($3::text[], $4::text[]) AS m("old_id", "new_id")
JOIN {{schema}}."step_attempts" AS src ON src."namespace_id" = {{by_id_ns($1)}} AND src."id" = m."old_id"

-- name: fork_escapes
-- Copies the records of the escaped values of the rows copied: table $2,
-- old row ids $3, new ones $4; of a run, only its config and input (the
-- columns fork_run copies).
INSERT INTO {{schema}}."openworkflow_go_escaped_json" AS e
  ("namespace_id", "table_name", "row_id", "column_name", "digest")
SELECT src."namespace_id", src."table_name", m."new_id", src."column_name", src."digest"
FROM unnest($3::text[], $4::text[]) AS m("old_id", "new_id")
JOIN {{schema}}."openworkflow_go_escaped_json" AS src
  ON src."namespace_id" = $1 AND src."table_name" = $2 AND src."row_id" = m."old_id"
WHERE $2 <> 'workflow_runs' OR src."column_name" IN ('config', 'input')
ON CONFLICT DO NOTHING

-- name: fork_list
-- Lists fork $3 in the context of the run it forks, $2 of namespace $1
-- ({"forks": [ids]}, oldest first), while the list has fewer than $4 ids
-- and the context is an object or NULL (backend/fork.go: lineage).
-- updated_at is left alone: the run itself did not change.
UPDATE {{schema}}."workflow_runs"
SET "context" = jsonb_set(COALESCE("context", '{}'::jsonb), '{forks}',
      COALESCE("context"->'forks', '[]'::jsonb) || jsonb_build_array($3::text))
WHERE "namespace_id" = $1 AND "id" = $2
  AND ("context" IS NULL OR jsonb_typeof("context") = 'object')
  AND COALESCE(jsonb_array_length(CASE WHEN jsonb_typeof("context"->'forks') = 'array' THEN "context"->'forks' END), 0) < $4
