-- go 11 · signals addressed to one run (issue 20, item 9: `ow signal send`
-- reached only runs waiting at that moment, so a signal sent before the
-- run's wait was dropped). Client.SignalRun stores one row per signal here
-- until the run's wait for that name receives it; the wait's delivery is
-- then an ordinary workflow_signals row (with no sender key, so
-- OpenWorkflow's keyed name sends never see it), and step_attempt_id
-- records which wait received the signal. This SDK's own table; nothing of
-- OpenWorkflow's changes.
--   - seq orders one run's signals in send order (assigned under the run's
--     row lock, so sends to one run are serialized);
--   - data is the JSON text as sent (TEXT holds any JSON, so no escapes);
--   - idempotency_key dedupes a repeated send to the same run and signal.
CREATE TABLE IF NOT EXISTS {{schema}}."go_run_signals" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "signal" TEXT NOT NULL,
  "seq" BIGINT NOT NULL,
  "data" TEXT,
  "idempotency_key" TEXT,
  "step_attempt_id" TEXT,
  "created_at" TIMESTAMPTZ NOT NULL,
  "received_at" TIMESTAMPTZ,
  PRIMARY KEY ("namespace_id", "id")
);

CREATE UNIQUE INDEX IF NOT EXISTS "go_run_signals_seq_idx"
ON {{schema}}."go_run_signals" ("namespace_id", "workflow_run_id", "signal", "seq");

CREATE UNIQUE INDEX IF NOT EXISTS "go_run_signals_idempotency_idx"
ON {{schema}}."go_run_signals" ("namespace_id", "workflow_run_id", "signal", "idempotency_key")
WHERE "idempotency_key" IS NOT NULL;

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (11)
ON CONFLICT DO NOTHING;
