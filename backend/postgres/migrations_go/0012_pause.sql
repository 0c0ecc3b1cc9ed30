-- go 12 · pausing a run (issue 21: pause and resume). A paused run keeps
-- OpenWorkflow's status (pause is a state of ours, derived from these
-- columns, so status filters keep their meaning: temporalio/api#653) and
-- has available_at NULL, so that no claim takes it, OpenWorkflow's
-- TypeScript claim (available_at <= now) included, as a run waiting for
-- admission. Three columns of this SDK's own on workflow_runs, NULL on
-- every run never paused, which the TypeScript SDK never writes:
--   - go_paused_at: when the run was paused; NULL when it is not;
--   - go_pause_reason: the reason given (may be NULL);
--   - go_paused_due_at: the run's due time saved while it is paused (its
--     available_at, its go_queued_at when it waited for admission, its
--     lease while a worker still executes it), moved earlier by the
--     wake-ups that come while it is paused and restored by resume.
-- Columns rather than a table: every write that sets available_at (park,
-- reschedule, heartbeat, wake-ups) must redirect it while the run is
-- paused, in the same statement and row; a table would cost a join there.
-- The partial index lists the paused runs (few) without indexing the rest.
ALTER TABLE {{schema}}."workflow_runs" ADD COLUMN IF NOT EXISTS "go_paused_at" TIMESTAMPTZ;
ALTER TABLE {{schema}}."workflow_runs" ADD COLUMN IF NOT EXISTS "go_pause_reason" TEXT;
ALTER TABLE {{schema}}."workflow_runs" ADD COLUMN IF NOT EXISTS "go_paused_due_at" TIMESTAMPTZ;

CREATE INDEX IF NOT EXISTS "workflow_runs_go_paused_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "go_paused_at")
WHERE "go_paused_at" IS NOT NULL;

-- Writers that know nothing of the pause (a TypeScript worker parking or
-- heartbeating a run it executed when the pause came, OpenWorkflow's
-- signal wake-ups) set available_at as before: this trigger moves any
-- available_at written on a paused run to go_paused_due_at, so that no
-- claim sees it. This SDK's own statements write NULL there themselves
-- (fragments due, paused_due, paused_wake in sql/pause.sql), so for them
-- the trigger's condition is false. The WHEN condition is evaluated
-- without calling the function, so an update of a run that is not paused
-- pays a test of two columns, and only when it sets available_at.
CREATE OR REPLACE FUNCTION {{schema}}."go_hold_paused_run"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW."go_paused_due_at" := NEW."available_at";
  NEW."available_at" := NULL;
  RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS "workflow_runs_go_paused_hold" ON {{schema}}."workflow_runs";
CREATE TRIGGER "workflow_runs_go_paused_hold"
BEFORE UPDATE OF "available_at" ON {{schema}}."workflow_runs"
FOR EACH ROW WHEN (NEW."go_paused_at" IS NOT NULL AND NEW."available_at" IS NOT NULL)
EXECUTE FUNCTION {{schema}}."go_hold_paused_run"();

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (12)
ON CONFLICT DO NOTHING;
