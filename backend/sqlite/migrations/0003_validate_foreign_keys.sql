-- Migration 3: a no-op kept for version parity with PostgreSQL, where it
-- validates the foreign keys. SQLite checks them on every write while
-- PRAGMA foreign_keys is on.
INSERT OR IGNORE INTO "openworkflow_migrations" ("version") VALUES (3);
