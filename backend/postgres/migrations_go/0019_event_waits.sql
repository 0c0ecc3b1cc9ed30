-- go 19 · the open waits of ow.WaitForEvent (issue 22, part 2). One row
-- per event-wait step attempt, written when the wait starts and read by
-- every publish of its event name (in the publish's transaction) so that a
-- publish finds the waits an event may satisfy without reading them all:
--   - index_path/index_value: an equality conjunct of the match,
--     event.<path> == <expression over input>, with the right-hand side
--     evaluated once at the wait's start (eventexpr.IndexKey): a publish
--     reads the distinct open paths of its name (a loose index scan of
--     go_event_waits_open_idx), computes the event's value at each and
--     looks up only equal waits. NULL when the match has no such conjunct:
--     those waits are read by name (go_event_waits_unindexed_idx) and
--     evaluated one by one, at most 1,000 per publish (docs/wait-for-event.md).
--   - input is the run's input as JSON text (the match reads it), copied so
--     a publish need not join workflow_runs and its escapes.
--   - after_seq: the wait sees events numbered above it (events published
--     before the wait are not delivered, as Inngest), or, with a look-back,
--     also stored events since since_at (as Hatchet's consider_events_since).
--   - event_id/event: the one event delivered (set once: the delivery's
--     UPDATE requires event_id IS NULL AND closed_at IS NULL, so of
--     concurrent publishers one wins); closed_at: the wait timed out (set
--     under the same condition, so a wait is delivered or timed out, never
--     both).
--   - last_error: the last evaluation error of the match, for operators.
-- This SDK's own table; nothing of OpenWorkflow's changes.
CREATE TABLE IF NOT EXISTS {{schema}}."go_event_waits" (
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
  "after_seq" BIGINT NOT NULL,
  "since_at" TIMESTAMPTZ,
  "timeout_at" TIMESTAMPTZ NOT NULL,
  "created_at" TIMESTAMPTZ NOT NULL,
  "event_id" TEXT,
  "event" TEXT,
  "delivered_at" TIMESTAMPTZ,
  "closed_at" TIMESTAMPTZ,
  "last_error" TEXT,
  PRIMARY KEY ("namespace_id", "step_attempt_id")
);

CREATE INDEX IF NOT EXISTS "go_event_waits_open_idx"
ON {{schema}}."go_event_waits" ("namespace_id", "event_name", "index_path", "index_value", "step_attempt_id")
WHERE "event_id" IS NULL AND "closed_at" IS NULL;

CREATE INDEX IF NOT EXISTS "go_event_waits_unindexed_idx"
ON {{schema}}."go_event_waits" ("namespace_id", "event_name", "step_attempt_id")
WHERE "index_path" IS NULL AND "event_id" IS NULL AND "closed_at" IS NULL;

CREATE INDEX IF NOT EXISTS "go_event_waits_run_idx"
ON {{schema}}."go_event_waits" ("namespace_id", "workflow_run_id");

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (19)
ON CONFLICT DO NOTHING;
