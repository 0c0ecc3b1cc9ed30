-- go 17 · the registry of workers, as PostgreSQL's go migration 17
-- (backend/postgres/migrations_go/0017_workers.sql says why): one row per
-- Go worker, upserted at start, on its heartbeat timer and at stop;
-- advisory only, the claim never reads it.
CREATE TABLE IF NOT EXISTS "go_workers" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "host" TEXT NOT NULL,
  "pid" INTEGER NOT NULL,
  "sdk" TEXT NOT NULL,
  "sdk_version" TEXT NOT NULL,
  "state" TEXT NOT NULL,
  "concurrency" INTEGER NOT NULL,
  "in_use" INTEGER NOT NULL,
  "heartbeat_interval_ms" INTEGER NOT NULL,
  "workflows" TEXT NOT NULL,
  "started_at" TEXT NOT NULL,
  "last_heartbeat_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "id")
);

CREATE INDEX IF NOT EXISTS "go_workers_last_heartbeat_idx"
ON "go_workers" ("namespace_id", "last_heartbeat_at");

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (17);
