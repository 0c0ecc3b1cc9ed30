-- Migration 0: the bookkeeping table. Every later migration inserts its own
-- version here, and Open applies only the files numbered above MAX(version),
-- so a database shared with the TypeScript SDK migrates from wherever it is.
CREATE TABLE IF NOT EXISTS "openworkflow_migrations" (
  "version" INTEGER NOT NULL PRIMARY KEY
);

INSERT OR IGNORE INTO "openworkflow_migrations" ("version") VALUES (0);
