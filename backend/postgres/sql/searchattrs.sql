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

-- name: declare_search_attributes
-- Declares the names $2 with the types $3 (parallel text[]) unless
-- declared already: the first use of a name fixes its type. $4 is the
-- clock.
INSERT INTO {{schema}}."go_search_attribute_types" ("namespace_id", "name", "type", "created_at")
SELECT $1, d."name", d."type", COALESCE($4::timestamptz, NOW())
FROM unnest($2::text[], $3::text[]) AS d("name", "type")
ON CONFLICT ("namespace_id", "name") DO NOTHING

-- name: list_search_attribute_types
-- Every declared name of namespace $1 and its type.
SELECT "name", "type"
FROM {{schema}}."go_search_attribute_types"
WHERE "namespace_id" = $1
ORDER BY "name"

-- name: lock_run_for_search_attributes
-- The run's created_at, locking the run so that upserts of one run's
-- attributes are serialized.
SELECT "created_at"
FROM {{schema}}."workflow_runs"
WHERE "namespace_id" = $1 AND "id" = $2
FOR NO KEY UPDATE

-- name: delete_search_attributes
-- Removes the run $2's values of the names $3 (before an upsert writes
-- them again, or to unset them).
DELETE FROM {{schema}}."go_search_attributes"
WHERE "namespace_id" = $1 AND "workflow_run_id" = $2 AND "name" = ANY($3::text[])

-- name: insert_search_attributes
-- Inserts the values of run $2 (created at $3), one row per element of
-- the parallel arrays $4…$10.
INSERT INTO {{schema}}."go_search_attributes"
  ("namespace_id", "workflow_run_id", "name", "seq", "run_created_at", "keyword", "int", "float", "bool", "time")
SELECT $1, $2, v."name", v."seq", $3, v."keyword", v."int", v."float", v."bool", v."time"
FROM unnest($4::text[], $5::int[], $6::text[], $7::bigint[], $8::double precision[], $9::boolean[], $10::timestamptz[])
  AS v("name", "seq", "keyword", "int", "float", "bool", "time")

-- name: search_attribute_totals
-- How many names run $2 has and the bytes its values count against the
-- limits (a keyword's length, 8 for any other value).
SELECT COUNT(DISTINCT "name"), COALESCE(SUM(COALESCE(octet_length("keyword"), 8)), 0)
FROM {{schema}}."go_search_attributes"
WHERE "namespace_id" = $1 AND "workflow_run_id" = $2

-- name: search_attributes_of
-- The values of the runs $2, with each name's declared type (which tells
-- a keyword list from a keyword), members in order.
SELECT a."workflow_run_id", a."name", t."type", a."keyword", a."int", a."float", a."bool", a."time"
FROM {{schema}}."go_search_attributes" AS a
JOIN {{schema}}."go_search_attribute_types" AS t
  ON t."namespace_id" = a."namespace_id" AND t."name" = a."name"
WHERE a."namespace_id" = $1 AND a."workflow_run_id" = ANY($2::text[])
ORDER BY a."workflow_run_id", a."name", a."seq"

-- name: list_runs_by_attribute
-- A page of a list whose query requires attrs.x = v: completed by
-- listRunsByAttribute with da's name and value, the other conditions, the
-- cursor on (run_created_at, workflow_run_id) and the order. The value
-- index (namespace_id, name, value, run_created_at DESC, workflow_run_id
-- DESC) lists the value's runs in list order, so the page reads them
-- newest first and stops at its end, whether the value is rare or common.
SELECT {{run_columns}}
FROM {{schema}}."go_search_attributes" AS da
JOIN {{schema}}."workflow_runs" AS wr
  ON wr."namespace_id" = da."namespace_id" AND wr."id" = da."workflow_run_id"
WHERE da."namespace_id" = $1

-- name: list_runs_summary_by_attribute
-- list_runs_by_attribute without input and output.
SELECT {{run_summary_columns}}
FROM {{schema}}."go_search_attributes" AS da
JOIN {{schema}}."workflow_runs" AS wr
  ON wr."namespace_id" = da."namespace_id" AND wr."id" = da."workflow_run_id"
WHERE da."namespace_id" = $1
