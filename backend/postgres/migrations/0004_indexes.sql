-- 4 · indexes, one per access path:
--   - status_available_at_created_at: the claim query (status, then due time,
--     then age);
--   - workflow_name_idempotency_key_created_at: keyed creates looking for the
--     oldest run with the same key within 24 h;
--   - parent_step (partial, only runs that have a parent): waking a parent;
--   - created_at_desc, status_created_at_desc, workflow_name_status_created_at_desc:
--     listing runs newest first, unfiltered or filtered;
--   - step_attempts workflow_run_created_at: loading a run's history in order;
--   - step_attempts workflow_run_step_name_created_at: attempts of one step;
--   - step_attempts child_workflow_run (partial, only workflow steps): finding
--     the attempt that waits on a child.
CREATE INDEX IF NOT EXISTS "workflow_runs_status_available_at_created_at_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "status", "available_at", "created_at");

CREATE INDEX IF NOT EXISTS "workflow_runs_workflow_name_idempotency_key_created_at_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "workflow_name", "idempotency_key", "created_at");

CREATE INDEX IF NOT EXISTS "workflow_runs_parent_step_idx"
ON {{schema}}."workflow_runs" ("parent_step_attempt_namespace_id", "parent_step_attempt_id")
WHERE parent_step_attempt_namespace_id IS NOT NULL AND parent_step_attempt_id IS NOT NULL;

CREATE INDEX IF NOT EXISTS "workflow_runs_created_at_desc_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "created_at" DESC);

CREATE INDEX IF NOT EXISTS "workflow_runs_status_created_at_desc_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "status", "created_at" DESC);

CREATE INDEX IF NOT EXISTS "workflow_runs_workflow_name_status_created_at_desc_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "workflow_name", "status", "created_at" DESC);

CREATE INDEX IF NOT EXISTS "step_attempts_workflow_run_created_at_idx"
ON {{schema}}."step_attempts" ("namespace_id", "workflow_run_id", "created_at");

CREATE INDEX IF NOT EXISTS "step_attempts_workflow_run_step_name_created_at_idx"
ON {{schema}}."step_attempts" ("namespace_id", "workflow_run_id", "step_name", "created_at");

CREATE INDEX IF NOT EXISTS "step_attempts_child_workflow_run_idx"
ON {{schema}}."step_attempts" ("child_workflow_run_namespace_id", "child_workflow_run_id")
WHERE child_workflow_run_namespace_id IS NOT NULL AND child_workflow_run_id IS NOT NULL;

INSERT INTO {{schema}}."openworkflow_migrations" ("version")
VALUES (4)
ON CONFLICT DO NOTHING;
