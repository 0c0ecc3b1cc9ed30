-- The definition store (backend.DefinitionStore, definitions.go): named
-- documents such as DAG workflows, in workflow_definitions (go migration
-- 4). The primary key (namespace_id, kind, name) is the one lookup and
-- gives the list its order. Bodies are text, kept byte for byte.

-- fragment: definition_columns
-- The workflow_definitions columns, in the order scanDefinition reads them.
"namespace_id", "kind", "name", "body", "created_at", "updated_at"

-- name: put_definition
-- Creates definition (:kind, :name) with :body, or replaces its body;
-- created_at stays the first write's.
INSERT INTO "workflow_definitions" ({{definition_columns}})
VALUES (:ns, :kind, :name, :body, :now, :now)
ON CONFLICT ("namespace_id", "kind", "name")
DO UPDATE SET "body" = excluded."body", "updated_at" = excluded."updated_at"
RETURNING {{definition_columns}}

-- name: get_definition
SELECT {{definition_columns}} FROM "workflow_definitions"
WHERE "namespace_id" = :ns AND "kind" = :kind AND "name" = :name

-- name: list_definitions
-- One page in (kind, name) order: :kind filters when not NULL,
-- (:after_kind, :after_name) is the After cursor when not NULL, :limit is
-- one more than the caller's page, to know whether another follows.
SELECT {{definition_columns}} FROM "workflow_definitions"
WHERE "namespace_id" = :ns
  AND (:kind IS NULL OR "kind" = :kind)
  AND (:after_kind IS NULL OR ("kind", "name") > (:after_kind, :after_name))
ORDER BY "kind", "name"
LIMIT :limit
