-- 2 · foreign keys between runs and attempts, added NOT VALID so that adding
-- them to a large existing database takes only a brief lock and does not scan
-- the tables; migration 3 validates them separately.
--   - deleting a run deletes its attempts (CASCADE);
--   - deleting a parent's attempt, or a child run, only unlinks (SET NULL).
ALTER TABLE {{schema}}."step_attempts"
ADD CONSTRAINT "step_attempts_workflow_run_fk"
FOREIGN KEY ("namespace_id", "workflow_run_id")
REFERENCES {{schema}}."workflow_runs" ("namespace_id", "id")
ON DELETE CASCADE
NOT VALID;

ALTER TABLE {{schema}}."workflow_runs"
ADD CONSTRAINT "workflow_runs_parent_step_attempt_fk"
FOREIGN KEY ("parent_step_attempt_namespace_id", "parent_step_attempt_id")
REFERENCES {{schema}}."step_attempts" ("namespace_id", "id")
ON DELETE SET NULL
NOT VALID;

ALTER TABLE {{schema}}."step_attempts"
ADD CONSTRAINT "step_attempts_child_workflow_run_fk"
FOREIGN KEY ("child_workflow_run_namespace_id", "child_workflow_run_id")
REFERENCES {{schema}}."workflow_runs" ("namespace_id", "id")
ON DELETE SET NULL
NOT VALID;

INSERT INTO {{schema}}."openworkflow_migrations" ("version")
VALUES (2)
ON CONFLICT DO NOTHING;
