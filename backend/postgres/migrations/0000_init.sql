-- 0 · init: the schema and the table recording which migrations ran.
-- Same as OpenWorkflow's migration 0 so that a database migrated by either SDK
-- is recognised by the other: each script inserts its own version, and the
-- current version is MAX(version).
CREATE SCHEMA IF NOT EXISTS {{schema}};

CREATE TABLE IF NOT EXISTS {{schema}}."openworkflow_migrations" (
  "version" BIGINT NOT NULL PRIMARY KEY
);

INSERT INTO {{schema}}."openworkflow_migrations" ("version")
VALUES (0)
ON CONFLICT DO NOTHING;
