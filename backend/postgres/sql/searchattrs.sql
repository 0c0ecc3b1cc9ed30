-- Search attributes (go migration 13): their declared types, and the
-- values of runs (see the migration for the tables).

-- name: search_attribute_types
-- The declared types of the names $2 (a text[]) in namespace $1.
SELECT "name", "type"
FROM {{schema}}."go_search_attribute_types"
WHERE "namespace_id" = $1 AND "name" = ANY($2::text[])

-- name: count_matching_runs
-- Completed by CountMatchingRuns with the conditions of a list's filters
-- and query (matchConditions).
SELECT COUNT(*)
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1
