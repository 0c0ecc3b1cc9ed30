-- go 20 · debounce and batching, as PostgreSQL's go migration 20
-- (backend/postgres/migrations_go/0020_debounce_batches.sql says why each
-- part is so). Times are ISO-8601 text with milliseconds.
ALTER TABLE "workflow_runs" ADD COLUMN "go_debounce_key" TEXT;
ALTER TABLE "workflow_runs" ADD COLUMN "go_debounce_deadline" TEXT;

CREATE UNIQUE INDEX IF NOT EXISTS "workflow_runs_go_debounce_idx"
ON "workflow_runs" ("namespace_id", "workflow_name", "go_debounce_key")
WHERE "status" = 'pending' AND "attempts" = 0 AND "go_debounce_key" IS NOT NULL;

CREATE TABLE IF NOT EXISTS "go_batches" (
  "namespace_id" TEXT NOT NULL,
  "workflow_name" TEXT NOT NULL,
  "batch_key" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "version" TEXT,
  "count" INTEGER NOT NULL,
  "bytes" INTEGER NOT NULL,
  "max_size" INTEGER NOT NULL,
  "max_bytes" INTEGER NOT NULL,
  "first_at" TEXT NOT NULL,
  "flush_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "workflow_name", "batch_key")
);

CREATE INDEX IF NOT EXISTS "go_batches_flush_idx"
ON "go_batches" ("namespace_id", "flush_at");

CREATE TABLE IF NOT EXISTS "go_batch_items" (
  "seq" INTEGER PRIMARY KEY AUTOINCREMENT,
  "namespace_id" TEXT NOT NULL,
  "batch_id" TEXT NOT NULL,
  "payload" TEXT NOT NULL,
  "created_at" TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS "go_batch_items_batch_idx"
ON "go_batch_items" ("namespace_id", "batch_id", "seq");

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (20);
