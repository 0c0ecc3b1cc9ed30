-- Statements of the engine's first ANALYZE (statistics.go).

-- name: has_statistics
-- Whether table $1 of the backend's schema has planner statistics: a row
-- of pg_stats (the readable view of pg_statistic, which only a superuser
-- reads). A table without any was never analyzed, by autovacuum or
-- anyone, and the planner guesses every condition's selectivity.
SELECT EXISTS (
  SELECT 1 FROM pg_catalog.pg_stats AS s
  WHERE s."schemaname" = {{schema_literal}} AND s."tablename" = $1
)

-- name: analyze_runs
-- The first ANALYZE of workflow_runs, when has_statistics said none.
ANALYZE {{schema}}."workflow_runs"

-- name: analyze_steps
-- The first ANALYZE of step_attempts, likewise.
ANALYZE {{schema}}."step_attempts"
