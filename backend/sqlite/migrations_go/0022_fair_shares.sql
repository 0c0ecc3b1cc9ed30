-- go 22 · fair shares between keys, as PostgreSQL's go migration 22
-- (backend/postgres/migrations_go/0022_fair_shares.sql says why each part
-- is so). Four columns of this SDK's own on workflow_runs, NULL on every
-- run started without fairness; go_fair_due_at is ISO-8601 text with
-- milliseconds. SQLite's write lock serializes every enqueue and claim.
ALTER TABLE "workflow_runs" ADD COLUMN "go_fair_key" TEXT;
ALTER TABLE "workflow_runs" ADD COLUMN "go_fair_weight" REAL;
ALTER TABLE "workflow_runs" ADD COLUMN "go_fair_pass" INTEGER;
ALTER TABLE "workflow_runs" ADD COLUMN "go_fair_due_at" TEXT;

-- The claim's fair candidates in claim order (priority, then pass).
CREATE INDEX IF NOT EXISTS "workflow_runs_go_fair_idx"
ON "workflow_runs" ("namespace_id", "go_priority" DESC, "go_fair_pass", "created_at", "id", "go_fair_due_at")
WHERE "status" = 'pending' AND "go_fair_due_at" IS NOT NULL AND "available_at" IS NULL AND "go_paused_at" IS NULL;

-- The runs of each key not finished: the per-key page's counts.
CREATE INDEX IF NOT EXISTS "workflow_runs_go_fair_key_idx"
ON "workflow_runs" ("namespace_id", "go_fair_key", "status")
WHERE "go_fair_key" IS NOT NULL AND "status" IN ('pending', 'running', 'sleeping');

-- Per namespace and key: the last pass given and the weight it was given
-- with.
CREATE TABLE IF NOT EXISTS "workflow_fair_keys" (
  "namespace_id" TEXT NOT NULL,
  "fair_key" TEXT NOT NULL,
  "weight" REAL NOT NULL,
  "last_pass" INTEGER NOT NULL,
  "updated_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "fair_key")
);

-- Per namespace: vtime, the highest pass a claim took.
CREATE TABLE IF NOT EXISTS "workflow_fair_clock" (
  "namespace_id" TEXT PRIMARY KEY,
  "vtime" INTEGER NOT NULL
);

-- Enqueue: a fair run written pending, due and without a worker gets its
-- pass from its key's row and waits in the fair queue (available_at NULL,
-- its due time in go_fair_due_at). An AFTER trigger updating the row, as
-- migration 12's pause hold (SQLite's triggers cannot change NEW); its
-- own update sets available_at NULL, so it does not fire again.
CREATE TRIGGER IF NOT EXISTS "workflow_runs_go_fair_enqueue"
AFTER UPDATE OF "go_fair_key", "status", "available_at", "worker_id" ON "workflow_runs"
FOR EACH ROW WHEN NEW."go_fair_key" IS NOT NULL AND NEW."status" = 'pending' AND NEW."worker_id" IS NULL
  AND NEW."available_at" IS NOT NULL AND NEW."go_paused_at" IS NULL AND NEW."go_singleton_held_at" IS NULL
BEGIN
  INSERT OR IGNORE INTO "workflow_fair_keys" ("namespace_id", "fair_key", "weight", "last_pass", "updated_at")
  VALUES (NEW."namespace_id", NEW."go_fair_key", 1, 0, NEW."updated_at");
  UPDATE "workflow_fair_keys"
  SET "last_pass" = max(COALESCE((SELECT c."vtime" FROM "workflow_fair_clock" AS c WHERE c."namespace_id" = NEW."namespace_id"), 0), "last_pass")
                    + (SELECT CAST(r AS INTEGER) + (r > CAST(r AS INTEGER)) -- ceil(1000 / weight)
                       FROM (SELECT 1000.0 / max(min(COALESCE(NEW."go_fair_weight", 1), 1000), 0.001) AS r)),
      "weight" = COALESCE(NEW."go_fair_weight", 1),
      "updated_at" = NEW."updated_at"
  WHERE "namespace_id" = NEW."namespace_id" AND "fair_key" = NEW."go_fair_key";
  UPDATE "workflow_runs"
  SET "go_fair_pass" = (SELECT k."last_pass" FROM "workflow_fair_keys" AS k
                        WHERE k."namespace_id" = NEW."namespace_id" AND k."fair_key" = NEW."go_fair_key"),
      "go_fair_due_at" = NEW."available_at",
      "available_at" = NULL
  WHERE "namespace_id" = NEW."namespace_id" AND "id" = NEW."id";
END;

-- Claim: a claim that takes a run from the fair queue moves vtime forward
-- to its pass (never back). Runs that did not wait in the fair queue pay
-- the WHEN's test.
CREATE TRIGGER IF NOT EXISTS "workflow_runs_go_fair_claim"
AFTER UPDATE OF "status" ON "workflow_runs"
FOR EACH ROW WHEN NEW."go_fair_key" IS NOT NULL AND OLD."status" = 'pending' AND NEW."status" = 'running'
  AND OLD."available_at" IS NULL AND OLD."go_fair_due_at" IS NOT NULL AND NEW."go_fair_pass" IS NOT NULL
BEGIN
  INSERT OR IGNORE INTO "workflow_fair_clock" ("namespace_id", "vtime") VALUES (NEW."namespace_id", 0);
  UPDATE "workflow_fair_clock" SET "vtime" = NEW."go_fair_pass"
  WHERE "namespace_id" = NEW."namespace_id" AND "vtime" < NEW."go_fair_pass";
END;

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (22);
