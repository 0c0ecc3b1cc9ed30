-- 5 · name-addressed signals (OpenWorkflow 0.9): one workflow_signals row per
-- delivery to a waiting signal-wait attempt. No foreign keys, as upstream.
--   - step_attempt_idx is UNIQUE: at most one delivery per wait, which is what
--     makes concurrent sends safe (INSERT ... ON CONFLICT DO NOTHING);
--   - idempotency_idx (partial, only keyed sends): deduping a repeated send;
--   - step_attempts signal_wait_idx (partial, only running waits, a small
--     set): finding the waits a signal name addresses.
CREATE TABLE IF NOT EXISTS {{schema}}."workflow_signals" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  --
  "signal" TEXT NOT NULL,
  "data" JSONB,
  "sender_idempotency_key" TEXT,
  "workflow_run_id" TEXT NOT NULL,
  "step_attempt_id" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ NOT NULL DEFAULT NOW(),
  PRIMARY KEY ("namespace_id", "id")
);

CREATE UNIQUE INDEX IF NOT EXISTS "workflow_signals_step_attempt_idx"
ON {{schema}}."workflow_signals" ("namespace_id", "step_attempt_id");

CREATE INDEX IF NOT EXISTS "workflow_signals_idempotency_idx"
ON {{schema}}."workflow_signals" ("namespace_id", "signal", "sender_idempotency_key")
WHERE sender_idempotency_key IS NOT NULL;

CREATE INDEX IF NOT EXISTS "step_attempts_signal_wait_idx"
ON {{schema}}."step_attempts" ("namespace_id", ("context"->>'signal'))
WHERE kind = 'signal-wait' AND status = 'running';

INSERT INTO {{schema}}."openworkflow_migrations" ("version")
VALUES (5)
ON CONFLICT DO NOTHING;
