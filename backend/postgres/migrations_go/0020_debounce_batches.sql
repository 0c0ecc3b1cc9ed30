-- go 20 · debounce and batching (issue 22; docs/debounce-and-batching.md).
--
-- Debounce: a debounced run is an ordinary pending run of OpenWorkflow's
-- table whose available_at is in the future, so no claim, the TypeScript
-- SDK's included (available_at <= NOW()), takes it early. Two columns of
-- this SDK's own, NULL on every other run, which the TypeScript SDK never
-- writes (it names its columns in every insert and update):
--   - go_debounce_key: the key of the burst the run collects;
--   - go_debounce_deadline: the first start + the max delay, fixed when
--     the run is created: no later start moves the run past it.
-- The unique index holds the key while the run is pending and was never
-- claimed (attempts = 0): the claim that starts it, by either SDK, sets
-- status running and attempts 1, which takes it out of the index and
-- frees the key with no further write. attempts = 0 also keeps a run that
-- a failed step rescheduled (pending again, attempts > 0) out of it.
ALTER TABLE {{schema}}."workflow_runs"
  ADD COLUMN IF NOT EXISTS "go_debounce_key" TEXT,
  ADD COLUMN IF NOT EXISTS "go_debounce_deadline" TIMESTAMPTZ;

CREATE UNIQUE INDEX IF NOT EXISTS "workflow_runs_go_debounce_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "workflow_name", "go_debounce_key")
WHERE "status" = 'pending' AND "attempts" = 0 AND "go_debounce_key" IS NOT NULL;

-- Batching: one row per open batch (workflow, key), locked by every append
-- to it, and its items in arrival order (seq). A flush is one transaction
-- that creates the run with the items as input and deletes both.
-- flush_at (first item + timeout) is read by the workers' batch loop and
-- by NextDueAt. Items are kept as the JSON text given (the run's input is
-- built from them and stored through the run's own path).
CREATE TABLE IF NOT EXISTS {{schema}}."go_batches" (
  "namespace_id" TEXT NOT NULL,
  "workflow_name" TEXT NOT NULL,
  "batch_key" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "version" TEXT,
  "count" INTEGER NOT NULL,
  "bytes" BIGINT NOT NULL,
  "max_size" INTEGER NOT NULL,
  "max_bytes" BIGINT NOT NULL,
  "first_at" TIMESTAMPTZ NOT NULL,
  "flush_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "workflow_name", "batch_key")
);

CREATE INDEX IF NOT EXISTS "go_batches_flush_idx"
ON {{schema}}."go_batches" ("namespace_id", "flush_at");

CREATE TABLE IF NOT EXISTS {{schema}}."go_batch_items" (
  "namespace_id" TEXT NOT NULL,
  "batch_id" TEXT NOT NULL,
  "seq" BIGINT GENERATED ALWAYS AS IDENTITY,
  "payload" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "batch_id", "seq")
);

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (20)
ON CONFLICT DO NOTHING;
