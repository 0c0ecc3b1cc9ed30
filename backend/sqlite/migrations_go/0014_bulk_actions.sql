-- go 14 · durable bulk actions, as PostgreSQL's go migration 14
-- (backend/postgres/migrations_go/0014_bulk_actions.sql says why): one
-- row per action, its cursor and counts advanced with each page in the
-- page's transaction, and the lease of the driver holding it.
CREATE TABLE IF NOT EXISTS "go_bulk_actions" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "operation" TEXT NOT NULL,
  "query" TEXT NOT NULL,
  "reason" TEXT NOT NULL DEFAULT '',
  "requested_by" TEXT NOT NULL DEFAULT '',
  "state" TEXT NOT NULL,
  "max_per_second" INTEGER NOT NULL DEFAULT 0,
  "matched" INTEGER NOT NULL DEFAULT 0,
  "acted" INTEGER NOT NULL DEFAULT 0,
  "skipped" INTEGER NOT NULL DEFAULT 0,
  "failed" INTEGER NOT NULL DEFAULT 0,
  "pages" INTEGER NOT NULL DEFAULT 0,
  "cursor" TEXT NOT NULL DEFAULT '',
  "last_error" TEXT NOT NULL DEFAULT '',
  "lease_owner" TEXT,
  "lease_expires_at" TEXT,
  "created_at" TEXT NOT NULL,
  "updated_at" TEXT NOT NULL,
  "started_at" TEXT,
  "finished_at" TEXT,
  PRIMARY KEY ("namespace_id", "id")
);

CREATE INDEX IF NOT EXISTS "go_bulk_actions_created_idx"
ON "go_bulk_actions" ("namespace_id", "created_at" DESC, "id" DESC);

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (14);
