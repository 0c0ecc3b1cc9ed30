-- go 18 · events, triggers and cancelOn declarations, and what each event
-- did, as PostgreSQL's go migration 18 (backend/postgres/migrations_go/
-- 0018_events.sql says why each table and index is so). seq is the
-- rowid's alias; times are ISO-8601 text with milliseconds.
CREATE TABLE IF NOT EXISTS "go_events" (
  "seq" INTEGER PRIMARY KEY AUTOINCREMENT,
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "name" TEXT NOT NULL,
  "data" TEXT NOT NULL,
  "key" TEXT,
  "idempotency_key" TEXT,
  "created_at" TEXT NOT NULL
);

CREATE UNIQUE INDEX IF NOT EXISTS "go_events_id_idx"
ON "go_events" ("namespace_id", "id");

CREATE INDEX IF NOT EXISTS "go_events_ns_seq_idx"
ON "go_events" ("namespace_id", "seq");

CREATE INDEX IF NOT EXISTS "go_events_name_seq_idx"
ON "go_events" ("namespace_id", "name", "seq");

CREATE UNIQUE INDEX IF NOT EXISTS "go_events_idempotency_idx"
ON "go_events" ("namespace_id", "idempotency_key")
WHERE "idempotency_key" IS NOT NULL;

CREATE INDEX IF NOT EXISTS "go_events_created_idx"
ON "go_events" ("namespace_id", "created_at");

CREATE TABLE IF NOT EXISTS "go_event_triggers" (
  "namespace_id" TEXT NOT NULL,
  "workflow_name" TEXT NOT NULL,
  "kind" TEXT NOT NULL,
  "position" INTEGER NOT NULL,
  "event_name" TEXT NOT NULL,
  "condition" TEXT NOT NULL,
  "version" TEXT,
  "declared_by" TEXT NOT NULL,
  "updated_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "workflow_name", "kind", "position")
);

CREATE INDEX IF NOT EXISTS "go_event_triggers_event_idx"
ON "go_event_triggers" ("namespace_id", "event_name");

CREATE TABLE IF NOT EXISTS "go_event_effects" (
  "namespace_id" TEXT NOT NULL,
  "event_id" TEXT NOT NULL,
  "seq" INTEGER NOT NULL,
  "kind" TEXT NOT NULL,
  "workflow_name" TEXT NOT NULL,
  "workflow_run_id" TEXT,
  "message" TEXT,
  "created_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "event_id", "seq")
);

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (18);
