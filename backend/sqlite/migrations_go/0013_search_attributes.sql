-- go 13 · search attributes (issue 21): the tables of
-- backend/postgres/migrations_go/0013_search_attributes.sql, which says
-- why each is there. Times are TEXT in backend.TimeLayout (UTC,
-- milliseconds), booleans 0/1, as elsewhere in this backend.
CREATE TABLE IF NOT EXISTS "go_search_attribute_types" (
  "namespace_id" TEXT NOT NULL,
  "name" TEXT NOT NULL,
  "type" TEXT NOT NULL,
  "created_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "name")
);

CREATE TABLE IF NOT EXISTS "go_search_attributes" (
  "namespace_id" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "name" TEXT NOT NULL,
  "seq" INTEGER NOT NULL,
  "run_created_at" TEXT NOT NULL,
  "keyword" TEXT,
  "int" INTEGER,
  "float" REAL,
  "bool" INTEGER,
  "time" TEXT,
  PRIMARY KEY ("namespace_id", "workflow_run_id", "name", "seq"),
  CONSTRAINT "go_search_attributes_run_fk" FOREIGN KEY ("namespace_id", "workflow_run_id")
    REFERENCES "workflow_runs" ("namespace_id", "id") ON DELETE CASCADE
);

CREATE INDEX IF NOT EXISTS "go_search_attributes_keyword_idx"
ON "go_search_attributes" ("namespace_id", "name", "keyword", "run_created_at" DESC, "workflow_run_id" DESC)
WHERE "keyword" IS NOT NULL;

CREATE INDEX IF NOT EXISTS "go_search_attributes_int_idx"
ON "go_search_attributes" ("namespace_id", "name", "int", "run_created_at" DESC, "workflow_run_id" DESC)
WHERE "int" IS NOT NULL;

CREATE INDEX IF NOT EXISTS "go_search_attributes_float_idx"
ON "go_search_attributes" ("namespace_id", "name", "float", "run_created_at" DESC, "workflow_run_id" DESC)
WHERE "float" IS NOT NULL;

CREATE INDEX IF NOT EXISTS "go_search_attributes_bool_idx"
ON "go_search_attributes" ("namespace_id", "name", "bool", "run_created_at" DESC, "workflow_run_id" DESC)
WHERE "bool" IS NOT NULL;

CREATE INDEX IF NOT EXISTS "go_search_attributes_time_idx"
ON "go_search_attributes" ("namespace_id", "name", "time", "run_created_at" DESC, "workflow_run_id" DESC)
WHERE "time" IS NOT NULL;

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (13);
