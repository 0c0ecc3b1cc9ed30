-- Forks (backend.RunForker, fork.go): a new run of the same workflow and
-- input whose history starts with copies of the forked run's completed
-- attempts before a step (backend.PlanFork chooses them), in one BEGIN
-- IMMEDIATE transaction.

-- name: fork_run
-- Inserts fork :fork_id of run :run_id: pending and due now, the same
-- workflow name, version, config, input, priority and concurrency key,
-- context :context, no idempotency key, parent or deadline; waiting for
-- admission when its workflow has stored limits (see insert_run). Its
-- attempts start at 1 (see fork_mark).
INSERT INTO "workflow_runs" (
  "namespace_id", "id", "workflow_name", "version", "status",
  "idempotency_key", "config", "context", "input", "attempts",
  "parent_step_attempt_namespace_id", "parent_step_attempt_id",
  "available_at", "deadline_at", "created_at", "updated_at",
  "go_priority", "go_concurrency_key", "go_queued_at"
)
SELECT "namespace_id", :fork_id, "workflow_name", "version", 'pending',
  NULL, "config", :context, "input", 1,
  NULL, NULL,
  CASE WHEN {{limited}} THEN NULL ELSE :now END, NULL, :now, :now,
  "go_priority", CASE WHEN {{limited}} THEN COALESCE("go_concurrency_key", '') ELSE "go_concurrency_key" END,
  CASE WHEN {{limited}} THEN :now END
FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "id" = :run_id
RETURNING {{run_columns}}

-- name: fork_steps
-- Copies the attempts of :ids (a JSON array of [old id, new id]) into
-- fork :fork_id: every column as recorded, times included, so the fork's
-- history keeps their order; updated_at is now.
INSERT INTO "step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name",
  "kind", "status", "config", "context", "output", "error",
  "child_workflow_run_namespace_id", "child_workflow_run_id", "started_at",
  "finished_at", "created_at", "updated_at"
)
SELECT src."namespace_id", json_extract(m.value, '$[1]'), :fork_id, src."step_name",
  src."kind", src."status", src."config", src."context", src."output", src."error",
  src."child_workflow_run_namespace_id", src."child_workflow_run_id", src."started_at",
  src."finished_at", src."created_at", :now
FROM json_each(:ids) AS m
JOIN "step_attempts" AS src ON src."namespace_id" = :ns AND src."id" = json_extract(m.value, '$[0]')

-- name: fork_mark
-- The mark :mark_id of kind 'retry' named '__fork:' || :mark_id (output
-- {"attempts": 1}) after the fork's copied attempts: a worker reads the
-- history of a run claimed before (attempts above 1 at the claim), and
-- the mark starts the fork's retry budgets from its own claims, as after
-- a manual retry (retry_run, internal/history).
INSERT INTO "step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name",
  "kind", "status", "config", "context", "output", "error",
  "started_at", "finished_at", "created_at", "updated_at"
)
VALUES (
  :ns, :mark_id, :fork_id, '__fork:' || :mark_id,
  'retry', 'completed', '{}', NULL, '{"attempts":1}', NULL,
  :now, :now, :now, :now
)

-- name: fork_list
-- Lists fork :fork_id in the context of the run it forks, :run_id
-- ({"forks": [ids]}, oldest first), while the list has fewer than
-- :max_forks ids and the context is an object or NULL (backend/fork.go:
-- lineage). updated_at is left alone: the run itself did not change.
UPDATE "workflow_runs"
SET "context" = json_set(COALESCE("context", '{}'), '$.forks',
      json_insert(COALESCE(json_extract("context", '$.forks'), '[]'), '$[#]', :fork_id))
WHERE "namespace_id" = :ns AND "id" = :run_id
  AND ("context" IS NULL OR json_type("context") = 'object')
  AND COALESCE(json_array_length("context", '$.forks'), 0) < :max_forks
