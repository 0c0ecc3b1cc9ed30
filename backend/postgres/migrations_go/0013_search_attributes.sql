-- go 13 · search attributes (issue 21): typed key/value metadata on runs,
-- set at start and upserted by workflow code, that run queries
-- (package runquery, attrs.<name>) filter on. This SDK's own tables: the
-- TypeScript SDK neither reads nor writes them, and nothing of
-- OpenWorkflow's workflow_runs changes.
--
-- go_search_attribute_types: the type of each attribute name in a
-- namespace (keyword, keyword_list, int, float, bool, time), fixed by the
-- first run that sets the name (or a declaration); a later value of
-- another type is refused (backend.ErrInvalidSearchAttribute).
CREATE TABLE IF NOT EXISTS {{schema}}."go_search_attribute_types" (
  "namespace_id" TEXT NOT NULL,
  "name" TEXT NOT NULL,
  "type" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "name")
);

-- go_search_attributes: one row per (run, attribute) — one per member for
-- a keyword list, numbered by seq from 0 in the list's order — with the
-- value in the column of its type and the others NULL.
--   - run_created_at copies the run's created_at (which never changes) so
--     that the value indexes below list a value's runs in the runs' list
--     order (created_at DESC, id DESC): a query on an attribute and status
--     reads the attribute's matching runs newest first and stops at the
--     page's end, instead of sorting every match.
--   - The foreign key deletes a run's attributes with it (retention,
--     deletes by hand); the primary key serves the cascade, the run's
--     display and an upsert's delete.
--   - One partial index per value column, only over the rows of that
--     type: an attribute's rows are all of its declared type.
CREATE TABLE IF NOT EXISTS {{schema}}."go_search_attributes" (
  "namespace_id" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "name" TEXT NOT NULL,
  "seq" INTEGER NOT NULL,
  "run_created_at" TIMESTAMPTZ NOT NULL,
  "keyword" TEXT,
  "int" BIGINT,
  "float" DOUBLE PRECISION,
  "bool" BOOLEAN,
  "time" TIMESTAMPTZ,
  PRIMARY KEY ("namespace_id", "workflow_run_id", "name", "seq"),
  CONSTRAINT "go_search_attributes_run_fk" FOREIGN KEY ("namespace_id", "workflow_run_id")
    REFERENCES {{schema}}."workflow_runs" ("namespace_id", "id") ON DELETE CASCADE
);

CREATE INDEX IF NOT EXISTS "go_search_attributes_keyword_idx"
ON {{schema}}."go_search_attributes" ("namespace_id", "name", "keyword", "run_created_at" DESC, "workflow_run_id" DESC)
WHERE "keyword" IS NOT NULL;

CREATE INDEX IF NOT EXISTS "go_search_attributes_int_idx"
ON {{schema}}."go_search_attributes" ("namespace_id", "name", "int", "run_created_at" DESC, "workflow_run_id" DESC)
WHERE "int" IS NOT NULL;

CREATE INDEX IF NOT EXISTS "go_search_attributes_float_idx"
ON {{schema}}."go_search_attributes" ("namespace_id", "name", "float", "run_created_at" DESC, "workflow_run_id" DESC)
WHERE "float" IS NOT NULL;

CREATE INDEX IF NOT EXISTS "go_search_attributes_bool_idx"
ON {{schema}}."go_search_attributes" ("namespace_id", "name", "bool", "run_created_at" DESC, "workflow_run_id" DESC)
WHERE "bool" IS NOT NULL;

CREATE INDEX IF NOT EXISTS "go_search_attributes_time_idx"
ON {{schema}}."go_search_attributes" ("namespace_id", "name", "time", "run_created_at" DESC, "workflow_run_id" DESC)
WHERE "time" IS NOT NULL;

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (13)
ON CONFLICT DO NOTHING;
