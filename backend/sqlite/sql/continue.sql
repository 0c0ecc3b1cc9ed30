-- Continue-as-new (backend.RunContinuer, continue.go): a leased run ends
-- and its successor starts with a new input, in one BEGIN IMMEDIATE
-- transaction. The lineage is written both ways in the runs' context
-- column (backend.ContinuationOf, backend.ContinuedTo).

-- name: continue_get_owned_run
-- Run :run_id while it is running and leased to :worker_id (the fence of
-- every worker write). No row: the worker lost it.
SELECT {{run_columns}}
FROM "workflow_runs"
WHERE {{owned_run}}

-- name: continue_insert_run
-- Inserts successor :next_id of run :run_id: pending, due at
-- :available_at, the same workflow name, config, priority, concurrency
-- key, parent link and deadline, version :version (NULL: the old run's),
-- input :input, context :context, no idempotency key; waiting for
-- admission when its workflow has stored limits (see insert_run). A
-- successor of a paused run is paused too (same time and reason, its due
-- time saved in go_paused_due_at), so that a chain paused while its run
-- continued stays held.
INSERT INTO "workflow_runs" (
  "namespace_id", "id", "workflow_name", "version", "status",
  "idempotency_key", "config", "context", "input", "attempts",
  "parent_step_attempt_namespace_id", "parent_step_attempt_id",
  "available_at", "deadline_at", "created_at", "updated_at",
  "go_priority", "go_concurrency_key", "go_queued_at",
  "go_paused_at", "go_pause_reason", "go_paused_due_at"
)
SELECT "namespace_id", :next_id, "workflow_name", COALESCE(:version, "version"), 'pending',
  NULL, "config", :context, :input, 0,
  "parent_step_attempt_namespace_id", "parent_step_attempt_id",
  CASE WHEN {{limited}} OR "go_paused_at" IS NOT NULL THEN NULL ELSE :available_at END, "deadline_at", :now, :now,
  "go_priority", CASE WHEN {{limited}} THEN COALESCE("go_concurrency_key", '') ELSE "go_concurrency_key" END,
  CASE WHEN {{limited}} AND "go_paused_at" IS NULL THEN :available_at END,
  "go_paused_at", "go_pause_reason", CASE WHEN "go_paused_at" IS NOT NULL THEN :available_at END
FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "id" = :run_id
RETURNING {{run_columns}}

-- name: continue_end_run
-- Ends the owned run, completed with :output ({"continuedAsNew":
-- {"runId": successor}}), worker_id kept as a completion keeps it, and
-- names successor :next_id in its context ("continuedTo"; a context that
-- is not an object is replaced).
UPDATE "workflow_runs"
SET "status" = 'completed',
    "output" = :output,
    "error" = NULL,
    "available_at" = NULL,
    "finished_at" = :now,
    "updated_at" = :now,
    "context" = json_set(CASE WHEN json_valid("context") AND json_type("context") = 'object' THEN "context" ELSE '{}' END,
      '$.continuedTo', :next_id)
WHERE {{owned_run}}

-- name: continue_move_signals
-- Moves the run signals of :run_id not yet received (SignalRun, go
-- migration 11) to its successor :next_id, numbers and order kept: the
-- successor has none of its own yet.
UPDATE "go_run_signals"
SET "workflow_run_id" = :next_id
WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id AND "step_attempt_id" IS NULL

-- name: continue_relink_parent
-- Links the parent's running workflow-kind attempt (:parent_ns,
-- :parent_id) that waits on :run_id to its successor :next_id, so the
-- parent waits for the end of the chain and wake_parent matches the
-- successor's end.
UPDATE "step_attempts"
SET "child_workflow_run_id" = :next_id,
    "updated_at" = :now
WHERE "namespace_id" = :parent_ns AND "id" = :parent_id AND "kind" = 'workflow' AND "status" = 'running'
  AND "child_workflow_run_namespace_id" = :ns AND "child_workflow_run_id" = :run_id

-- name: continue_schedule_last_run
-- Makes the schedules whose last run is :run_id name its successor
-- :next_id, so that their overlap rule sees the chain running.
UPDATE "workflow_schedules"
SET "last_run_id" = :next_id
WHERE "namespace_id" = :ns AND "last_run_id" = :run_id
  AND "name" IN (SELECT "schedule_name" FROM "workflow_schedule_runs"
                 WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id)

-- name: continue_schedule_runs
-- Makes the schedules' records of the tick that started :run_id name
-- its successor :next_id.
UPDATE "workflow_schedule_runs"
SET "workflow_run_id" = :next_id
WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id

-- name: continue_copy_search_attributes
-- Copies the search attributes of :run_id (go migration 13) to its
-- successor :next_id, whose created_at orders them in the value indexes:
-- a chain keeps the attributes its runs set, and a later upsert by the
-- successor replaces them there only.
INSERT INTO "go_search_attributes" (
  "namespace_id", "workflow_run_id", "name", "seq", "run_created_at",
  "keyword", "int", "float", "bool", "time"
)
SELECT sa."namespace_id", :next_id, sa."name", sa."seq", nr."created_at",
  sa."keyword", sa."int", sa."float", sa."bool", sa."time"
FROM "go_search_attributes" AS sa
JOIN "workflow_runs" AS nr ON nr."namespace_id" = sa."namespace_id" AND nr."id" = :next_id
WHERE sa."namespace_id" = :ns AND sa."workflow_run_id" = :run_id
