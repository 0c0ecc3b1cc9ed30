-- go 11 · signals addressed to one run, as PostgreSQL's go migration 11
-- (backend/postgres/migrations_go/0011_run_signals.sql says why): one row
-- per Client.SignalRun send until the run's wait for that name receives
-- it (step_attempt_id). seq orders one run's signals in send order.
CREATE TABLE IF NOT EXISTS "go_run_signals" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "signal" TEXT NOT NULL,
  "seq" INTEGER NOT NULL,
  "data" TEXT,
  "idempotency_key" TEXT,
  "step_attempt_id" TEXT,
  "created_at" TEXT NOT NULL,
  "received_at" TEXT,
  PRIMARY KEY ("namespace_id", "id")
);

CREATE UNIQUE INDEX IF NOT EXISTS "go_run_signals_seq_idx"
ON "go_run_signals" ("namespace_id", "workflow_run_id", "signal", "seq");

CREATE UNIQUE INDEX IF NOT EXISTS "go_run_signals_idempotency_idx"
ON "go_run_signals" ("namespace_id", "workflow_run_id", "signal", "idempotency_key")
WHERE "idempotency_key" IS NOT NULL;

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (11);
