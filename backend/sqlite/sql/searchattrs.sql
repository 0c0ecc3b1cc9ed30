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

-- name: declare_search_attribute
-- Declares :name with :type unless declared already: the first use of a
-- name fixes its type.
INSERT OR IGNORE INTO "go_search_attribute_types" ("namespace_id", "name", "type", "created_at")
VALUES (:ns, :name, :type, :now)

-- name: list_search_attribute_types
-- Every declared name of the namespace and its type.
SELECT "name", "type"
FROM "go_search_attribute_types"
WHERE "namespace_id" = :ns
ORDER BY "name"

-- name: run_created_at
-- The run's created_at (an upsert runs in the write transaction, which
-- serializes upserts).
SELECT "created_at"
FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "id" = :id

-- name: delete_search_attributes
-- Removes run :id's values of the names in :names (a JSON array).
DELETE FROM "go_search_attributes"
WHERE "namespace_id" = :ns AND "workflow_run_id" = :id
  AND "name" IN (SELECT "value" FROM json_each(:names))

-- name: insert_search_attribute
-- Inserts one value (one member of a keyword list) of run :id.
INSERT INTO "go_search_attributes"
  ("namespace_id", "workflow_run_id", "name", "seq", "run_created_at", "keyword", "int", "float", "bool", "time")
VALUES (:ns, :id, :name, :seq, :run_created_at, :keyword, :int, :float, :bool, :time)

-- name: search_attribute_totals
-- How many names run :id has and the bytes its values count against the
-- limits (a keyword's length in bytes, 8 for any other value).
SELECT COUNT(DISTINCT "name"), COALESCE(SUM(COALESCE(length(CAST("keyword" AS BLOB)), 8)), 0)
FROM "go_search_attributes"
WHERE "namespace_id" = :ns AND "workflow_run_id" = :id

-- name: search_attributes_of
-- The values of the runs in :ids (a JSON array), with each name's
-- declared type (which tells a keyword list from a keyword), members in
-- order.
SELECT a."workflow_run_id", a."name", t."type", a."keyword", a."int", a."float", a."bool", a."time"
FROM "go_search_attributes" AS a
JOIN "go_search_attribute_types" AS t
  ON t."namespace_id" = a."namespace_id" AND t."name" = a."name"
WHERE a."namespace_id" = :ns AND a."workflow_run_id" IN (SELECT "value" FROM json_each(:ids))
ORDER BY a."workflow_run_id", a."name", a."seq"

-- name: list_runs_by_attribute
-- A page of a list whose query requires attrs.x = v (:da_name, :da_value;
-- __value__ is replaced by the value column of x's type, from a fixed
-- table): the value's index range, in list order (run_created_at DESC,
-- workflow_run_id DESC), joined to the runs; listPage completes it with
-- the other conditions, the cursor and the order on da's columns, so the
-- page reads the value's runs newest first and stops at its end, however
-- common the value. da's columns are renamed so that the run columns
-- stay unambiguous.
SELECT {{run_columns}}
FROM (SELECT sa."workflow_run_id" AS "da_run", sa."run_created_at" AS "da_created"
      FROM "go_search_attributes" AS sa
      WHERE sa."namespace_id" = :ns AND sa."name" = :da_name AND sa."__value__" = :da_value) AS da
JOIN "workflow_runs" ON "workflow_runs"."namespace_id" = :ns AND "workflow_runs"."id" = da."da_run"
WHERE "namespace_id" = :ns

-- name: list_runs_summary_by_attribute
-- list_runs_by_attribute without input and output.
SELECT {{run_summary_columns}}
FROM (SELECT sa."workflow_run_id" AS "da_run", sa."run_created_at" AS "da_created"
      FROM "go_search_attributes" AS sa
      WHERE sa."namespace_id" = :ns AND sa."name" = :da_name AND sa."__value__" = :da_value) AS da
JOIN "workflow_runs" ON "workflow_runs"."namespace_id" = :ns AND "workflow_runs"."id" = da."da_run"
WHERE "namespace_id" = :ns
