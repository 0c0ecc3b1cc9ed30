-- go 0 · this SDK's own migration line. OpenWorkflow's table
-- openworkflow_migrations must hold exactly OpenWorkflow's versions (0–5 and
-- whatever the TypeScript SDK adds later), so the tables only the Go SDK
-- needs are recorded here, in a second version table, and applied after
-- OpenWorkflow's line in the same BEGIN IMMEDIATE transaction. Versions
-- share their numbers with the PostgreSQL backend's line
-- (backend/postgres/migrations_go) when they make the same change; numbers
-- without a SQLite counterpart are skipped (PostgreSQL's 1 and 2 are indexes
-- the SQLite backend creates at open instead), and every version not
-- recorded is applied, so gaps are harmless. Each script inserts its own
-- version.
CREATE TABLE IF NOT EXISTS "openworkflow_go_migrations" (
  "version" INTEGER NOT NULL PRIMARY KEY
);

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (0);
