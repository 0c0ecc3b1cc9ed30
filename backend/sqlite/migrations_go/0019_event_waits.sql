-- go 19 · the open waits of ow.WaitForEvent, as PostgreSQL's go migration
-- 19 (backend/postgres/migrations_go/0019_event_waits.sql says why): one
-- row per event-wait step attempt, indexed by (event name, index path,
-- index value) while open, delivered one event at most.
CREATE TABLE IF NOT EXISTS "go_event_waits" (
  "namespace_id" TEXT NOT NULL,
  "step_attempt_id" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "workflow_name" TEXT NOT NULL,
  "step_name" TEXT NOT NULL,
  "event_name" TEXT NOT NULL,
  "match" TEXT NOT NULL,
  "input" TEXT,
  "index_path" TEXT,
  "index_value" TEXT,
  "after_seq" INTEGER NOT NULL,
  "since_at" TEXT,
  "timeout_at" TEXT NOT NULL,
  "created_at" TEXT NOT NULL,
  "event_id" TEXT,
  "event" TEXT,
  "delivered_at" TEXT,
  "closed_at" TEXT,
  "last_error" TEXT,
  PRIMARY KEY ("namespace_id", "step_attempt_id")
);

CREATE INDEX IF NOT EXISTS "go_event_waits_open_idx"
ON "go_event_waits" ("namespace_id", "event_name", "index_path", "index_value", "step_attempt_id")
WHERE "event_id" IS NULL AND "closed_at" IS NULL;

CREATE INDEX IF NOT EXISTS "go_event_waits_unindexed_idx"
ON "go_event_waits" ("namespace_id", "event_name", "step_attempt_id")
WHERE "index_path" IS NULL AND "event_id" IS NULL AND "closed_at" IS NULL;

CREATE INDEX IF NOT EXISTS "go_event_waits_run_idx"
ON "go_event_waits" ("namespace_id", "workflow_run_id");

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (19);
