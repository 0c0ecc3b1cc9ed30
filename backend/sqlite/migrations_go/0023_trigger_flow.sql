-- go 23 · flow control of event triggers, as PostgreSQL's go migration 23
-- (backend/postgres/migrations_go/0023_trigger_flow.sql says why): the JSON
-- text of a start declaration's singleton or batch, NULL for an ordinary
-- trigger.
ALTER TABLE "go_event_triggers" ADD COLUMN "flow" TEXT;

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (23);
