-- Migration 2: a no-op kept for version parity with PostgreSQL, where it adds
-- the foreign keys NOT VALID. SQLite declares them with the tables in
-- migration 1.
INSERT OR IGNORE INTO "openworkflow_migrations" ("version") VALUES (2);
