-- go 21 · singleton runs per key, as PostgreSQL's go migration 21
-- (backend/postgres/migrations_go/0021_singleton.sql says why each part is
-- so). Two columns of this SDK's own on workflow_runs, NULL on every run
-- started without a singleton; times are ISO-8601 text with milliseconds.
-- SQLite's write lock serializes every start, so no lock of our own is
-- needed.
ALTER TABLE "workflow_runs" ADD COLUMN "go_singleton_key" TEXT;
ALTER TABLE "workflow_runs" ADD COLUMN "go_singleton_held_at" TEXT;

CREATE INDEX IF NOT EXISTS "workflow_runs_go_singleton_idx"
ON "workflow_runs" ("namespace_id", "workflow_name", "go_singleton_key", "created_at", "id")
WHERE "go_singleton_key" IS NOT NULL AND "status" IN ('pending', 'running', 'sleeping');

-- Release: the end of a run with a singleton key releases the oldest held
-- run of its key, unless the key still has an active run that is not
-- held. (Its nested update fires the pause hold of go migration 12 when
-- the released run is paused.)
CREATE TRIGGER IF NOT EXISTS "workflow_runs_go_singleton_release"
AFTER UPDATE OF "status" ON "workflow_runs"
FOR EACH ROW WHEN NEW."go_singleton_key" IS NOT NULL
  AND OLD."status" IN ('pending', 'running', 'sleeping')
  AND NEW."status" NOT IN ('pending', 'running', 'sleeping')
BEGIN
  UPDATE "workflow_runs"
  SET "available_at" = CASE WHEN EXISTS (SELECT 1 FROM "workflow_limits" AS l
                                         WHERE l."namespace_id" = NEW."namespace_id" AND l."workflow_name" = NEW."workflow_name")
                            THEN NULL ELSE "go_singleton_held_at" END,
      "go_queued_at" = CASE WHEN EXISTS (SELECT 1 FROM "workflow_limits" AS l
                                         WHERE l."namespace_id" = NEW."namespace_id" AND l."workflow_name" = NEW."workflow_name")
                            THEN "go_singleton_held_at" END,
      "go_concurrency_key" = CASE WHEN EXISTS (SELECT 1 FROM "workflow_limits" AS l
                                               WHERE l."namespace_id" = NEW."namespace_id" AND l."workflow_name" = NEW."workflow_name")
                                  THEN COALESCE("go_concurrency_key", '') ELSE "go_concurrency_key" END,
      "go_singleton_held_at" = NULL
  WHERE "namespace_id" = NEW."namespace_id"
    AND "id" = (
      SELECT h."id" FROM "workflow_runs" AS h
      WHERE h."namespace_id" = NEW."namespace_id" AND h."workflow_name" = NEW."workflow_name"
        AND h."go_singleton_key" = NEW."go_singleton_key"
        AND h."status" IN ('pending', 'running', 'sleeping') AND h."go_singleton_held_at" IS NOT NULL
      ORDER BY h."created_at", h."id"
      LIMIT 1)
    AND NOT EXISTS (
      SELECT 1 FROM "workflow_runs" AS a
      WHERE a."namespace_id" = NEW."namespace_id" AND a."workflow_name" = NEW."workflow_name"
        AND a."go_singleton_key" = NEW."go_singleton_key"
        AND a."status" IN ('pending', 'running', 'sleeping') AND a."go_singleton_held_at" IS NULL);
END;

-- Hold: an available_at or go_queued_at written on a held run (a resume,
-- a wake-up) is moved to go_singleton_held_at, so that no claim takes the
-- run before its release.
CREATE TRIGGER IF NOT EXISTS "workflow_runs_go_singleton_hold"
AFTER UPDATE OF "available_at", "go_queued_at" ON "workflow_runs"
FOR EACH ROW WHEN NEW."go_singleton_held_at" IS NOT NULL AND (NEW."available_at" IS NOT NULL OR NEW."go_queued_at" IS NOT NULL)
BEGIN
  UPDATE "workflow_runs"
  SET "go_singleton_held_at" = COALESCE(NEW."available_at", NEW."go_queued_at", NEW."go_singleton_held_at"),
      "available_at" = NULL, "go_queued_at" = NULL
  WHERE "namespace_id" = NEW."namespace_id" AND "id" = NEW."id";
END;

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (21);
