-- Fragments the statements of the other files share (see package
-- internal/sqlset for the format). The backend gives no values at load.
--
-- Conventions of every statement:
--
-- Parameters are named: :ns is always the backend's namespace, :now the
-- injected clock's time (Options.Now) in backend.TimeLayout; no statement
-- reads SQLite's own clock, so that tests move time by injecting theirs.
--
-- Timestamps are TEXT in that fixed-width layout, so <, <= and > compare
-- them chronologically.
--
-- Every write runs in a BEGIN IMMEDIATE transaction holding SQLite's one
-- write lock, so nothing here locks rows; a worker-side write is fenced on
-- the run's ownership instead (owned_run, owned_step), and matches no row
-- once the run's lease has moved.

-- fragment: run_columns
-- The workflow_runs columns, in the order scanRun reads them.
"namespace_id", "id", "workflow_name", "version", "status",
  "idempotency_key", "config", "context", "input", "output", "error",
  "attempts", "parent_step_attempt_namespace_id", "parent_step_attempt_id",
  "worker_id", "available_at", "deadline_at", "started_at", "finished_at",
  "created_at", "updated_at",
  "go_priority", "go_concurrency_key", "go_queued_at", "go_admitted_at",
  "go_paused_at", "go_pause_reason"

-- fragment: step_columns
-- The step_attempts columns, in the order scanStep reads them.
"namespace_id", "id", "workflow_run_id", "step_name",
  "kind", "status", "config", "context", "output", "error",
  "child_workflow_run_namespace_id", "child_workflow_run_id", "started_at",
  "finished_at", "created_at", "updated_at"

-- fragment: run_summary_columns
-- run_columns with NULL for input and output, for lists that leave them
-- out: scanRun reads them as absent.
"namespace_id", "id", "workflow_name", "version", "status",
  "idempotency_key", "config", "context", NULL AS "input", NULL AS "output", "error",
  "attempts", "parent_step_attempt_namespace_id", "parent_step_attempt_id",
  "worker_id", "available_at", "deadline_at", "started_at", "finished_at",
  "created_at", "updated_at",
  "go_priority", "go_concurrency_key", "go_queued_at", "go_admitted_at",
  "go_paused_at", "go_pause_reason"

-- fragment: step_summary_columns
-- step_columns with NULL for output.
"namespace_id", "id", "workflow_run_id", "step_name",
  "kind", "status", "config", "context", NULL AS "output", "error",
  "child_workflow_run_namespace_id", "child_workflow_run_id", "started_at",
  "finished_at", "created_at", "updated_at"

-- fragment: parent_link
-- What a write that finishes a run returns: the run's key and its parent
-- link, the columns scanParentLink reads (for wakeParent).
"namespace_id", "id", "parent_step_attempt_namespace_id", "parent_step_attempt_id"

-- fragment: limited
-- Whether the workflow of the run being updated has stored limits (one
-- primary-key probe of workflow_limits), so that it waits for admission.
EXISTS (SELECT 1 FROM "workflow_limits" AS l
          WHERE l."namespace_id" = "workflow_runs"."namespace_id" AND l."workflow_name" = "workflow_runs"."workflow_name")

-- fragment: non_terminal_statuses
-- The statuses a run can still leave, legacy "sleeping" included.
('pending', 'running', 'sleeping')

-- fragment: owned_run
-- Matches the run :run_id while it is running and leased by :worker_id:
-- the fence of every worker-side write of a run.
"namespace_id" = :ns
  AND "id" = :run_id
  AND "status" = 'running'
  AND "worker_id" = :worker_id

-- fragment: owned_step
-- Matches the attempt :step_id of run :run_id while that run is running
-- and leased by :worker_id: the fence of every step write.
"namespace_id" = :ns
  AND "workflow_run_id" = :run_id
  AND "id" = :step_id
  AND EXISTS (
    SELECT 1 FROM "workflow_runs" wr
    WHERE wr."namespace_id" = :ns
      AND wr."id" = :run_id
      AND wr."status" = 'running'
      AND wr."worker_id" = :worker_id
  )

-- fragment: past_deadline
-- True for a run whose deadline has passed: its completion (complete_run)
-- fails it instead, as the claim's deadline sweep (fail_expired_runs)
-- would.
("deadline_at" IS NOT NULL AND "deadline_at" <= :now)

-- fragment: wake_now
-- The available_at of a parked run woken by a child's end or a signal:
-- now, unless it was already due earlier.
CASE
      WHEN "available_at" IS NULL OR "available_at" > :now THEN :now
      ELSE "available_at"
    END

-- fragment: hook_wait_after(sa)
-- The afterSeq of hook-wait attempt {{sa}}: the sequence number of the
-- payload it waits after (0 when the context holds no number).
CASE
              WHEN json_type({{sa}}."context", '$.afterSeq') IN ('integer', 'real')
                THEN json_extract({{sa}}."context", '$.afterSeq')
              ELSE 0
            END
