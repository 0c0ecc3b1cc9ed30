-- go 21 · singleton runs per key (issue 22; backend.Singleton,
-- docs/flow-control.md). Two columns of this SDK's own on workflow_runs,
-- NULL on every run started without a singleton (every run of the
-- TypeScript SDK, whose inserts take the defaults):
--   - go_singleton_key: the run's singleton key. With the workflow name it
--     names the key whose active runs (status pending, running or
--     sleeping: parked, paused and held runs included) a singleton start
--     looks up, under pg_advisory_xact_lock of (schema, namespace,
--     workflow, key).
--   - go_singleton_held_at: set while a run started in mode queue waits
--     for its key's active run to end: the time it would have been due.
--     Its available_at is NULL meanwhile (and go_queued_at, for a workflow
--     with limits), so that no claim takes it, OpenWorkflow's TypeScript
--     claim (available_at <= now) included.
ALTER TABLE {{schema}}."workflow_runs" ADD COLUMN IF NOT EXISTS "go_singleton_key" TEXT;
ALTER TABLE {{schema}}."workflow_runs" ADD COLUMN IF NOT EXISTS "go_singleton_held_at" TIMESTAMPTZ;

-- The active runs of one key in creation order: the start's lookup and the
-- release's (one index range each). Runs without a key have no entry.
CREATE INDEX IF NOT EXISTS "workflow_runs_go_singleton_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "workflow_name", "go_singleton_key", "created_at", "id")
WHERE "go_singleton_key" IS NOT NULL AND "status" IN ('pending', 'running', 'sleeping');

-- Release: when a run with a singleton key ends (any terminal status,
-- written by any SDK: a TypeScript worker completing a run included), the
-- oldest held run of its key is released, unless the key still has an
-- active run that is not held. The released run becomes due at the time it
-- was held for (it keeps its place in the claim's FIFO), or waits for
-- admission if its workflow has limits, and is announced as work.
--
-- No lost release: a queue start locks the key's active runs (FOR UPDATE)
-- after its advisory lock, so an end that commits first is seen by the
-- start (which then inserts the run due), and an end that comes after
-- waits for the start's commit and this function's UPDATE (a new snapshot
-- per statement, READ COMMITTED) sees the held run.
CREATE OR REPLACE FUNCTION {{schema}}."go_release_singleton"() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  released text;
BEGIN
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "available_at" = CASE WHEN lim."limited" THEN NULL ELSE wr."go_singleton_held_at" END,
      "go_queued_at" = CASE WHEN lim."limited" THEN wr."go_singleton_held_at" END,
      "go_concurrency_key" = CASE WHEN lim."limited" THEN COALESCE(wr."go_concurrency_key", '') ELSE wr."go_concurrency_key" END,
      "go_singleton_held_at" = NULL
  FROM (SELECT EXISTS (SELECT 1 FROM {{schema}}."workflow_limits" AS l
                       WHERE l."namespace_id" = NEW."namespace_id" AND l."workflow_name" = NEW."workflow_name") AS "limited") AS lim
  WHERE wr."namespace_id" = NEW."namespace_id"
    AND wr."id" = (
      SELECT h."id" FROM {{schema}}."workflow_runs" AS h
      WHERE h."namespace_id" = NEW."namespace_id" AND h."workflow_name" = NEW."workflow_name"
        AND h."go_singleton_key" = NEW."go_singleton_key"
        AND h."status" IN ('pending', 'running', 'sleeping') AND h."go_singleton_held_at" IS NOT NULL
      ORDER BY h."created_at", h."id"
      LIMIT 1)
    AND NOT EXISTS (
      SELECT 1 FROM {{schema}}."workflow_runs" AS a
      WHERE a."namespace_id" = NEW."namespace_id" AND a."workflow_name" = NEW."workflow_name"
        AND a."go_singleton_key" = NEW."go_singleton_key"
        AND a."status" IN ('pending', 'running', 'sleeping') AND a."go_singleton_held_at" IS NULL)
  RETURNING wr."id" INTO released;
  IF released IS NOT NULL THEN
    PERFORM pg_notify('openworkflow', json_build_object(
      'schema', TG_TABLE_SCHEMA, 'ns', NEW."namespace_id", 'kind', 'work', 'id', released)::text);
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS "workflow_runs_go_singleton_release" ON {{schema}}."workflow_runs";
CREATE TRIGGER "workflow_runs_go_singleton_release"
AFTER UPDATE OF "status" ON {{schema}}."workflow_runs"
FOR EACH ROW WHEN (NEW."go_singleton_key" IS NOT NULL
  AND OLD."status" IN ('pending', 'running', 'sleeping')
  AND NEW."status" NOT IN ('pending', 'running', 'sleeping'))
EXECUTE FUNCTION {{schema}}."go_release_singleton"();

-- Hold: a writer that knows nothing of singletons (a resume, a wake-up,
-- a TypeScript worker) may set available_at or go_queued_at on a held
-- run; this trigger moves that time to go_singleton_held_at so that no
-- claim takes the run before its release (as go migration 12 holds
-- paused runs). Runs that are not held pay a test of one column, and only
-- on updates that set those columns.
CREATE OR REPLACE FUNCTION {{schema}}."go_hold_singleton_run"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW."go_singleton_held_at" := COALESCE(NEW."available_at", NEW."go_queued_at", NEW."go_singleton_held_at");
  NEW."available_at" := NULL;
  NEW."go_queued_at" := NULL;
  RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS "workflow_runs_go_singleton_hold" ON {{schema}}."workflow_runs";
CREATE TRIGGER "workflow_runs_go_singleton_hold"
BEFORE UPDATE OF "available_at", "go_queued_at" ON {{schema}}."workflow_runs"
FOR EACH ROW WHEN (NEW."go_singleton_held_at" IS NOT NULL AND (NEW."available_at" IS NOT NULL OR NEW."go_queued_at" IS NOT NULL))
EXECUTE FUNCTION {{schema}}."go_hold_singleton_run"();

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (21)
ON CONFLICT DO NOTHING;
