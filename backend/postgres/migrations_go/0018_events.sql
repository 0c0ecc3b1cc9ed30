-- go 18 · events, the triggers and cancelOn declarations of workflows, and
-- what each event did (issue 22: events and event-triggered workflows).
-- backend.EventStore, events.go:
--   - go_events: one row per published event. seq orders the namespace's
--     events (the list reads it newest first, its cursor is seq); the
--     idempotency key is unique per namespace while the row keeps it (a
--     publish with a key whose row is older than backend.EventDedupPeriod
--     clears that row's key first, so the window is 24 h, as Inngest's).
--   - go_event_triggers: the events that start (kind 'start') or cancel
--     (kind 'cancel') runs of a workflow, with the CEL condition, stored by
--     the workers that register the workflow so that any publisher sees
--     them; read by event name at each publish.
--   - go_event_effects: the runs an event started, woke or canceled, and
--     the conditions that failed to evaluate (kind 'error', with the
--     message), for the API's and dashboard's view of one event.
-- Retention deletes events (and their effects) older than the namespace's
-- retention. This SDK's own tables; nothing of OpenWorkflow's changes.
CREATE TABLE IF NOT EXISTS {{schema}}."go_events" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "seq" BIGSERIAL NOT NULL,
  "name" TEXT NOT NULL,
  "data" TEXT NOT NULL,
  "key" TEXT,
  "idempotency_key" TEXT,
  "created_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "id")
);

CREATE UNIQUE INDEX IF NOT EXISTS "go_events_seq_idx"
ON {{schema}}."go_events" ("namespace_id", "seq");

CREATE INDEX IF NOT EXISTS "go_events_name_seq_idx"
ON {{schema}}."go_events" ("namespace_id", "name", "seq");

CREATE UNIQUE INDEX IF NOT EXISTS "go_events_idempotency_idx"
ON {{schema}}."go_events" ("namespace_id", "idempotency_key")
WHERE "idempotency_key" IS NOT NULL;

CREATE INDEX IF NOT EXISTS "go_events_created_idx"
ON {{schema}}."go_events" ("namespace_id", "created_at");

CREATE TABLE IF NOT EXISTS {{schema}}."go_event_triggers" (
  "namespace_id" TEXT NOT NULL,
  "workflow_name" TEXT NOT NULL,
  "kind" TEXT NOT NULL,
  "position" INTEGER NOT NULL,
  "event_name" TEXT NOT NULL,
  "condition" TEXT NOT NULL,
  "version" TEXT,
  "declared_by" TEXT NOT NULL,
  "updated_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "workflow_name", "kind", "position")
);

CREATE INDEX IF NOT EXISTS "go_event_triggers_event_idx"
ON {{schema}}."go_event_triggers" ("namespace_id", "event_name");

CREATE TABLE IF NOT EXISTS {{schema}}."go_event_effects" (
  "namespace_id" TEXT NOT NULL,
  "event_id" TEXT NOT NULL,
  "seq" INTEGER NOT NULL,
  "kind" TEXT NOT NULL,
  "workflow_name" TEXT NOT NULL,
  "workflow_run_id" TEXT,
  "message" TEXT,
  "created_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "event_id", "seq")
);

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (18)
ON CONFLICT DO NOTHING;
