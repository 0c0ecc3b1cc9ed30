-- Batching, as PostgreSQL's sql/batches.sql. Every append and flush runs
-- in a BEGIN IMMEDIATE transaction, which serializes them.

-- name: batch_open
-- The open batch of (:workflow_name, :key), created with :id and the
-- options of this item when there is none.
INSERT INTO "go_batches" (
  "namespace_id", "workflow_name", "batch_key", "id", "version",
  "count", "bytes", "max_size", "max_bytes", "first_at", "flush_at"
) VALUES (:ns, :workflow_name, :key, :id, :version, 0, 0, :max_size, :max_bytes, :now, :flush_at)
ON CONFLICT ("namespace_id", "workflow_name", "batch_key") DO UPDATE SET "count" = "count"
RETURNING "id", "version", "count", "bytes", "max_size", "max_bytes"

-- name: batch_add_item
INSERT INTO "go_batch_items" ("namespace_id", "batch_id", "payload", "created_at")
VALUES (:ns, :id, :payload, :now)
RETURNING "seq"

-- name: batch_count_item
UPDATE "go_batches"
SET "count" = "count" + 1, "bytes" = "bytes" + :bytes
WHERE "namespace_id" = :ns AND "id" = :id
RETURNING "count", "bytes"

-- name: batch_items
SELECT "payload" FROM "go_batch_items"
WHERE "namespace_id" = :ns AND "batch_id" = :id
ORDER BY "seq"

-- name: batch_delete_items
DELETE FROM "go_batch_items" WHERE "namespace_id" = :ns AND "batch_id" = :id

-- name: batch_close
DELETE FROM "go_batches" WHERE "namespace_id" = :ns AND "id" = :id

-- name: batch_due
-- One open batch due (its flush_at passed).
SELECT "workflow_name", "batch_key", "id", "version"
FROM "go_batches"
WHERE "namespace_id" = :ns AND "flush_at" <= :now
ORDER BY "flush_at"
LIMIT 1

-- name: batch_next_due
SELECT min("flush_at") FROM "go_batches" WHERE "namespace_id" = :ns

-- name: list_batches
SELECT "workflow_name", "version", "batch_key", "count", "bytes",
  "max_size", "max_bytes", "first_at", "flush_at"
FROM "go_batches"
WHERE "namespace_id" = :ns
ORDER BY "flush_at", "workflow_name", "batch_key"
LIMIT :limit
