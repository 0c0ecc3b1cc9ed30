-- Search attributes (go migration 13): their declared types, and the
-- values of runs (see the migration for the tables).

-- name: search_attribute_types
-- The declared types of the names in :names (a JSON array of strings).
SELECT "name", "type"
FROM "go_search_attribute_types"
WHERE "namespace_id" = :ns AND "name" IN (SELECT "value" FROM json_each(:names))

-- name: count_matching_runs
-- Completed by CountMatchingRuns with the conditions of a list's filters
-- and query (matchConditions).
SELECT COUNT(*)
FROM "workflow_runs"
WHERE "namespace_id" = :ns
