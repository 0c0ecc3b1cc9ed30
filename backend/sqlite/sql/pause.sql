-- Pausing and resuming runs (RunPauser, go migration 12), as PostgreSQL's
-- sql/pause.sql: a paused run keeps its status, has available_at and
-- go_queued_at NULL (no claim or admission takes it) and its due time in
-- go_paused_due_at. Go migration 12's trigger moves any available_at
-- written on a paused run there.

-- name: pause_run
-- Pauses non-terminal run :run_id with :reason (NULL: none), unless it is
-- paused already; its due time is saved (available_at, or go_queued_at
-- for a run waiting for admission).
UPDATE "workflow_runs"
SET "go_paused_at" = :now,
    "go_pause_reason" = :reason,
    "go_paused_due_at" = COALESCE("available_at", "go_queued_at"),
    "available_at" = NULL,
    "go_queued_at" = NULL,
    "updated_at" = :now
WHERE "namespace_id" = :ns
  AND "id" = :run_id
  AND "status" IN {{non_terminal_statuses}}
  AND "go_paused_at" IS NULL
RETURNING {{run_columns}}

-- name: resume_paused_run
-- Unpauses non-terminal run :run_id: its saved due time (:now when none)
-- goes back to available_at, or to go_queued_at when the run has not
-- started under its workflow's limits (see PostgreSQL's
-- resume_paused_run). The trigger of go migration 12 sees the new row's
-- go_paused_at NULL and leaves the restored available_at alone.
UPDATE "workflow_runs"
SET "available_at" = CASE WHEN {{queue_again}} THEN NULL ELSE COALESCE("go_paused_due_at", :now) END,
    "go_queued_at" = CASE WHEN {{queue_again}} THEN COALESCE("go_paused_due_at", :now) END,
    "go_concurrency_key" = CASE WHEN {{queue_again}} THEN COALESCE("go_concurrency_key", '') ELSE "go_concurrency_key" END,
    "go_paused_at" = NULL,
    "go_pause_reason" = NULL,
    "go_paused_due_at" = NULL,
    "updated_at" = :now
WHERE "namespace_id" = :ns
  AND "id" = :run_id
  AND "status" IN {{non_terminal_statuses}}
  AND "go_paused_at" IS NOT NULL
RETURNING {{run_columns}}

-- fragment: queue_again
-- Whether the run being resumed waits for admission: its workflow has
-- limits and it never started under them (pending, never admitted, no
-- worker).
({{limited}} AND "status" = 'pending' AND "go_admitted_at" IS NULL AND "worker_id" IS NULL)

-- name: resume_canceled_run
-- Resumes canceled run :run_id in place (see PostgreSQL's
-- resume_canceled_run): pending and due now, or waiting for admission
-- when its workflow has limits; a run whose deadline has passed does not
-- match. insert_resume_mark follows in the same transaction.
UPDATE "workflow_runs"
SET "status" = 'pending',
    "available_at" = CASE WHEN {{limited}} THEN NULL ELSE :now END,
    "error" = NULL,
    "finished_at" = NULL,
    "worker_id" = NULL,
    "updated_at" = :now,
    "go_queued_at" = CASE WHEN {{limited}} THEN :now END,
    "go_admitted_at" = NULL,
    "go_concurrency_key" = CASE WHEN {{limited}} THEN COALESCE("go_concurrency_key", '') ELSE "go_concurrency_key" END,
    "go_paused_at" = NULL,
    "go_pause_reason" = NULL,
    "go_paused_due_at" = NULL
WHERE "namespace_id" = :ns
  AND "id" = :run_id
  AND "status" = 'canceled'
  AND ("deadline_at" IS NULL OR "deadline_at" > :now)
RETURNING {{run_columns}}

-- name: insert_resume_mark
-- The mark of a canceled run's resume in its history: a completed attempt
-- :step_id of kind 'retry' named '__resume:' || :step_id with output
-- {"attempts": :attempts}, as insert_retry_mark's.
INSERT INTO "step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status",
  "config", "context", "output", "error",
  "child_workflow_run_namespace_id", "child_workflow_run_id",
  "started_at", "finished_at", "created_at", "updated_at"
)
VALUES (
  :ns, :step_id, :run_id, '__resume:' || :step_id, 'retry', 'completed',
  '{}', NULL, json_object('attempts', :attempts), NULL,
  NULL, NULL,
  :now, :now, :now, :now
)
