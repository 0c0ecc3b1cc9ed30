-- The record of JSON values Go stored escaped (see escapes.go and
-- docs/interop.md): PostgreSQL's jsonb cannot hold U+0000, so a value
-- holding it is stored with its strings escaped, and decoded on reading
-- only when this record says Go escaped exactly that value.

-- name: record_escapes
-- Records, for each escaped value a write sent ($1 namespaces, $2 tables,
-- $3 row ids, $4 columns, $5 values), that its column holds it, with the
-- digest of the column's text, if the column does hold it now: a write its
-- fence refused stores nothing and is recorded nothing. It runs last in
-- the write's transaction.
INSERT INTO {{schema}}."openworkflow_go_escaped_json" AS w
  ("namespace_id", "table_name", "row_id", "column_name", "digest")
SELECT e."ns", e."tbl", e."row_id", e."col", sha256(convert_to(s."val"::text, 'UTF8'))
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[]) AS e("ns", "tbl", "row_id", "col", "val")
CROSS JOIN LATERAL (
  SELECT to_jsonb(r) -> e."col" AS "val" FROM {{schema}}."workflow_runs" AS r
  WHERE e."tbl" = 'workflow_runs' AND r."namespace_id" = e."ns" AND r."id" = e."row_id"
  UNION ALL
  SELECT to_jsonb(r) -> e."col" FROM {{schema}}."step_attempts" AS r
  WHERE e."tbl" = 'step_attempts' AND r."namespace_id" = e."ns" AND r."id" = e."row_id"
  UNION ALL
  SELECT to_jsonb(r) -> e."col" FROM {{schema}}."workflow_signals" AS r
  WHERE e."tbl" = 'workflow_signals' AND r."namespace_id" = e."ns" AND r."id" = e."row_id"
) AS s
WHERE s."val" = e."val"
ON CONFLICT DO NOTHING

-- name: escaped_values
-- The positions (1-based) of the values read back ($2 tables, $3 row ids,
-- $4 columns, $5 SHA-256 of their text) that Go stored escaped in
-- namespace $1.
SELECT c."i"
FROM unnest($2::text[], $3::text[], $4::text[], $5::bytea[]) WITH ORDINALITY AS c("tbl", "row_id", "col", "digest", "i")
WHERE EXISTS (
  SELECT 1 FROM {{schema}}."openworkflow_go_escaped_json" AS w
  WHERE w."namespace_id" = $1 AND w."table_name" = c."tbl" AND w."row_id" = c."row_id"
    AND w."column_name" = c."col" AND w."digest" = c."digest"
)
