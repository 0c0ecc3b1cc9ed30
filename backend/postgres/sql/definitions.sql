-- The definition store (backend.DefinitionStore, definitions.go): named
-- documents such as DAG workflows, in workflow_definitions (go migration
-- 4). The primary key (namespace_id, kind, name) is the one lookup and
-- gives the list its order. Bodies are text, kept byte for byte.

-- fragment: definition_columns
-- The workflow_definitions columns, read as "d", in the order
-- scanDefinition reads them.
d."namespace_id", d."kind", d."name", d."body", d."created_at", d."updated_at"

-- name: put_definition
-- Creates definition ($2 kind, $3 name) of namespace $1 with body $4, or
-- replaces its body; created_at stays the first write's.
INSERT INTO {{schema}}."workflow_definitions" AS d
  ("namespace_id", "kind", "name", "body", "created_at", "updated_at")
VALUES ($1, $2, $3, $4, {{now($5)}}, {{now($5)}})
ON CONFLICT ("namespace_id", "kind", "name")
DO UPDATE SET "body" = EXCLUDED."body", "updated_at" = EXCLUDED."updated_at"
RETURNING {{definition_columns}}

-- name: get_definition
-- The definition ($2 kind, $3 name) of namespace $1.
SELECT {{definition_columns}}
FROM {{schema}}."workflow_definitions" AS d
WHERE d."namespace_id" = $1 AND d."kind" = $2 AND d."name" = $3

-- name: list_definitions
-- One page of the definitions of namespace $1 in (kind, name) order: $2
-- filters by kind when not NULL, ($3, $4) is the After cursor when not
-- NULL, $5 the page size (one more than the caller's, to know whether
-- another page follows). One range of the primary key.
SELECT {{definition_columns}}
FROM {{schema}}."workflow_definitions" AS d
WHERE d."namespace_id" = $1
  AND ($2::text IS NULL OR d."kind" = $2)
  AND ($3::text IS NULL OR (d."kind", d."name") > ($3, $4::text))
ORDER BY d."kind", d."name"
LIMIT $5
