-- go 4 · stored definitions (backend.DefinitionStore): documents that are
-- data rather than code, such as DAG workflows (kind 'dag'), so that every
-- worker, client and the dashboard of a namespace read the same ones. A
-- table of this SDK's own line: OpenWorkflow has no such table, and the
-- TypeScript SDK never reads it.
--
--   - The primary key (namespace_id, kind, name) is the one lookup (Get,
--     and Put's upsert) and gives List its order (kind, name) within a
--     namespace as an index range.
--   - body is text, not jsonb: a definition is a document kept as given, byte
--     for byte (jsonb would reorder keys and refuse U+0000, which the escape
--     record of go migration 3 exists to work around in the tables the
--     TypeScript SDK shares; nobody queries inside a definition).
--
-- Version 3 of this line belongs to another change; the line applies every
-- version it has not recorded, so the two may land in either order.
CREATE TABLE IF NOT EXISTS {{schema}}."workflow_definitions" (
  "namespace_id" TEXT NOT NULL,
  "kind" TEXT NOT NULL,
  "name" TEXT NOT NULL,
  "body" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ NOT NULL,
  "updated_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "kind", "name")
);

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (4)
ON CONFLICT DO NOTHING;
