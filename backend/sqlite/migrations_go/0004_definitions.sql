-- go 4 · stored definitions (backend.DefinitionStore), as PostgreSQL's go
-- migration 4: documents that are data rather than code, such as DAG
-- workflows (kind 'dag'), read by every worker and client of the file. The
-- primary key is the lookup and gives List its (kind, name) order. Times
-- are ISO-8601 text with milliseconds, as in OpenWorkflow's SQLite tables.
CREATE TABLE IF NOT EXISTS "workflow_definitions" (
  "namespace_id" TEXT NOT NULL,
  "kind" TEXT NOT NULL,
  "name" TEXT NOT NULL,
  "body" TEXT NOT NULL,
  "created_at" TEXT NOT NULL,
  "updated_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "kind", "name")
);

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (4);
