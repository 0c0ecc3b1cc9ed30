-- go 3 · the record of the JSON values this SDK stored escaped.
--
-- jsonb cannot hold U+0000, so the Go SDK stores a value holding it with
-- each such string escaped (see jsonnul.go). Every escaped form is a string
-- jsonb accepts, hence one the TypeScript SDK could write too: no rule on
-- the value alone can tell the two apart. So whenever the Go SDK stores an
-- escaped value it records here, in the same transaction, which column of
-- which row holds it and the SHA-256 of its text as PostgreSQL renders it
-- (jsonb::text); a value read back is unescaped only when this table holds
-- exactly that digest for exactly that column, so a string the TypeScript
-- SDK wrote — over a Go value or not — is read back as it wrote it. Values
-- without U+0000, nearly all, are stored as given and never recorded here.
--
-- table_name is workflow_runs, step_attempts or workflow_signals;
-- column_name a JSON column of it; row_id the row's id in namespace_id. A
-- column rewritten with several escaped values keeps a row per value, so a
-- reader holding an older value still finds its record. Records are
-- removed with their rows by a prune (backend.RunPruner, sql/retention.sql);
-- the record of a row deleted by hand is inert (ids are never reused), a
-- few bytes per escaped value.
CREATE TABLE IF NOT EXISTS {{schema}}."openworkflow_go_escaped_json" (
  "namespace_id" TEXT NOT NULL,
  "table_name" TEXT NOT NULL,
  "row_id" TEXT NOT NULL,
  "column_name" TEXT NOT NULL,
  "digest" BYTEA NOT NULL,
  "created_at" TIMESTAMPTZ NOT NULL DEFAULT NOW(),
  PRIMARY KEY ("namespace_id", "table_name", "row_id", "column_name", "digest")
);

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (3)
ON CONFLICT DO NOTHING;
