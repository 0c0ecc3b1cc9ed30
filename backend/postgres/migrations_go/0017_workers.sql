-- go 17 · the registry of workers (issue 21, item 7: the dashboard knew a
-- worker only by the runs it held, so an idle worker was invisible).
-- backend.WorkerRegistry, workers.go: every Go worker upserts its row at
-- start, on a timer of its own (WorkerOptions.RegistryInterval, 10 s)
-- and when it stops; a running or draining row silent for 3 of its
-- intervals is read as gone, and a row silent for 24 h is deleted by the
-- namespace's next put.
--   - Advisory only: the claim never reads this table, so it adds nothing
--     to the claim or the per-step path (one small upsert per worker per
--     interval).
--   - workflows is the JSON text of what the worker registered (name,
--     version, input example): read whole, never queried inside.
--   - The index on last_heartbeat_at serves the put's deletion of
--     forgotten rows and the list's cut-off.
-- This SDK's own table; TypeScript workers do not write it, and nothing of
-- OpenWorkflow's changes.
CREATE TABLE IF NOT EXISTS {{schema}}."go_workers" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "host" TEXT NOT NULL,
  "pid" BIGINT NOT NULL,
  "sdk" TEXT NOT NULL,
  "sdk_version" TEXT NOT NULL,
  "state" TEXT NOT NULL,
  "concurrency" INTEGER NOT NULL,
  "in_use" INTEGER NOT NULL,
  "heartbeat_interval_ms" BIGINT NOT NULL,
  "workflows" TEXT NOT NULL,
  "started_at" TIMESTAMPTZ NOT NULL,
  "last_heartbeat_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "id")
);

CREATE INDEX IF NOT EXISTS "go_workers_last_heartbeat_idx"
ON {{schema}}."go_workers" ("namespace_id", "last_heartbeat_at");

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (17)
ON CONFLICT DO NOTHING;
