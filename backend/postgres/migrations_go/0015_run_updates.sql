-- go 15 · updates of runs (issue 21, item 5): Client.UpdateRun's
-- synchronous request into a running workflow, as Temporal's workflow
-- update, but admitted durably (Temporal keeps admitted updates in memory
-- and loses them when its registry is cleared). One row per update of a
-- run: admitted by the client, then settled by the worker that runs the
-- run at its next wait point — rejected (validator, unknown name), completed
-- or failed (the handler's result or error). This SDK's own table; nothing
-- of OpenWorkflow's changes (the accepted update's handler is an ordinary
-- step attempt named update:<name>:<id>).
--   - the primary key (namespace, run, id) makes the update id the
--     caller's idempotency key within its run;
--   - seq orders one run's updates in admission order (assigned under the
--     run's row lock);
--   - input, result and error are JSON text as given (TEXT holds any JSON,
--     so no escapes are needed).
CREATE TABLE IF NOT EXISTS {{schema}}."go_run_updates" (
  "namespace_id" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "name" TEXT NOT NULL,
  "seq" BIGINT NOT NULL,
  "input" TEXT,
  "state" TEXT NOT NULL,
  "result" TEXT,
  "error" TEXT,
  "created_at" TIMESTAMPTZ NOT NULL,
  "settled_at" TIMESTAMPTZ,
  PRIMARY KEY ("namespace_id", "workflow_run_id", "id")
);

-- A worker reads its run's admitted updates in seq order at each wait
-- point of a workflow that declares handlers: a partial index keeps that
-- read to the few rows still waiting.
CREATE INDEX IF NOT EXISTS "go_run_updates_admitted_idx"
ON {{schema}}."go_run_updates" ("namespace_id", "workflow_run_id", "seq")
WHERE "state" = 'admitted';

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (15)
ON CONFLICT DO NOTHING;
