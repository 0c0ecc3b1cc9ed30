-- Migration 4: the indexes behind the hot queries, as in OpenWorkflow.

-- The claim: runs of a namespace by status whose available_at has come,
-- oldest first.
CREATE INDEX IF NOT EXISTS "workflow_runs_status_available_at_created_at_idx"
ON "workflow_runs" ("namespace_id", "status", "available_at", "created_at");

-- Idempotent create: the oldest run with this key in the 24 h window.
CREATE INDEX IF NOT EXISTS "workflow_runs_workflow_name_idempotency_key_created_at_idx"
ON "workflow_runs" ("namespace_id", "workflow_name", "idempotency_key", "created_at");

-- Children of a step; partial because most runs have no parent.
CREATE INDEX IF NOT EXISTS "workflow_runs_parent_step_idx"
ON "workflow_runs" ("parent_step_attempt_namespace_id", "parent_step_attempt_id")
WHERE parent_step_attempt_namespace_id IS NOT NULL AND parent_step_attempt_id IS NOT NULL;

-- Run lists, newest first, unfiltered / by status / by workflow and status.
CREATE INDEX IF NOT EXISTS "workflow_runs_created_at_desc_idx"
ON "workflow_runs" ("namespace_id", "created_at" DESC);

CREATE INDEX IF NOT EXISTS "workflow_runs_status_created_at_desc_idx"
ON "workflow_runs" ("namespace_id", "status", "created_at" DESC);

CREATE INDEX IF NOT EXISTS "workflow_runs_workflow_name_status_created_at_desc_idx"
ON "workflow_runs" ("namespace_id", "workflow_name", "status", "created_at" DESC);

-- A run's history, loaded once per claim, oldest first.
CREATE INDEX IF NOT EXISTS "step_attempts_workflow_run_created_at_idx"
ON "step_attempts" ("namespace_id", "workflow_run_id", "created_at");

-- Failed attempts of one step name (step retry budget).
CREATE INDEX IF NOT EXISTS "step_attempts_workflow_run_step_name_created_at_idx"
ON "step_attempts" ("namespace_id", "workflow_run_id", "step_name", "created_at");

-- The step that spawned a child; partial because most steps have none.
CREATE INDEX IF NOT EXISTS "step_attempts_child_workflow_run_idx"
ON "step_attempts" ("child_workflow_run_namespace_id", "child_workflow_run_id")
WHERE child_workflow_run_namespace_id IS NOT NULL AND child_workflow_run_id IS NOT NULL;

INSERT OR IGNORE INTO "openworkflow_migrations" ("version") VALUES (4);
