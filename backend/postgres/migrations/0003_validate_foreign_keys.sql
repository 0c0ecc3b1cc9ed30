-- 3 · validate the foreign keys added NOT VALID by migration 2. Validation
-- scans the tables but takes only a SHARE UPDATE EXCLUSIVE lock, so writes
-- continue meanwhile.
ALTER TABLE {{schema}}."step_attempts"
VALIDATE CONSTRAINT "step_attempts_workflow_run_fk";

ALTER TABLE {{schema}}."workflow_runs"
VALIDATE CONSTRAINT "workflow_runs_parent_step_attempt_fk";

ALTER TABLE {{schema}}."step_attempts"
VALIDATE CONSTRAINT "step_attempts_child_workflow_run_fk";

INSERT INTO {{schema}}."openworkflow_migrations" ("version")
VALUES (3)
ON CONFLICT DO NOTHING;
