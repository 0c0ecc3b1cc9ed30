-- go 23 · flow control of event triggers (issue 22; backend.EventTrigger's
-- Singleton and Batch, docs/events.md). One nullable column of this SDK's
-- own table: the JSON text of a start declaration's singleton
-- ({"key","mode"}) or batch ({"maxSize","timeoutMs","maxBytes"}), stored by
-- the worker that registers the workflow with its Spec.Singleton or
-- Spec.Batch, so that every publisher — the API server, the CLI, another
-- process — decides a triggered run's singleton admission, or appends the
-- event to the workflow's batch, in the publish's transaction. NULL: an
-- ordinary trigger, as before.
ALTER TABLE {{schema}}."go_event_triggers" ADD COLUMN IF NOT EXISTS "flow" TEXT;

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (23)
ON CONFLICT DO NOTHING;
