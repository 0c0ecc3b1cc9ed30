-- go 0 · this SDK's own migration line. OpenWorkflow's table
-- openworkflow_migrations must hold exactly OpenWorkflow's versions (0–5 and
-- whatever the TypeScript SDK adds later), so what only the Go SDK needs is
-- recorded here, in a second version table, and applied after OpenWorkflow's
-- line under the same advisory lock. Same shape: each script inserts its own
-- version, the current version is MAX(version).
CREATE TABLE IF NOT EXISTS {{schema}}."openworkflow_go_migrations" (
  "version" BIGINT NOT NULL PRIMARY KEY
);

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (0)
ON CONFLICT DO NOTHING;
