-- The migrations' bookkeeping. The migration scripts themselves are in
-- migrations/ (OpenWorkflow's line) and migrations_go/ (this SDK's).

-- name: migration_lock
-- Serializes migrations of one schema across processes: a session lock,
-- held on the migrating connection until released.
SELECT pg_advisory_lock(hashtextextended($1, 0))

-- name: migration_unlock
SELECT pg_advisory_unlock(hashtextextended($1, 0))

-- name: migrations_table_exists
SELECT EXISTS (
  SELECT 1 FROM information_schema.tables
  WHERE table_schema = $1 AND table_name = $2
)

-- name: openworkflow_migration_version
-- The version of OpenWorkflow's line, shared with the TypeScript SDK.
SELECT MAX("version") FROM {{schema}}."openworkflow_migrations"

-- name: go_migration_version
-- The version of this SDK's own line.
SELECT MAX("version") FROM {{schema}}."openworkflow_go_migrations"
