-- Batching (go migration 20; docs/debounce-and-batching.md): the open
-- batch of a (workflow, key) is one row of go_batches, locked by each
-- append to it and by its flush, so that appends and the flush
-- serialize; its items are rows of go_batch_items in arrival order.

-- name: batch_open
-- The open batch of ($1, $2, key $3), created with id $4, version $5 and
-- its options (max size $6, max bytes $7, timeout $8 ms: due at first
-- item + timeout) when there is none; locked for the rest of the
-- transaction (ON CONFLICT DO UPDATE locks the row it finds). An open
-- batch keeps the options and version of its first item.
INSERT INTO {{schema}}."go_batches" AS gb (
  "namespace_id", "workflow_name", "batch_key", "id", "version",
  "count", "bytes", "max_size", "max_bytes", "first_at", "flush_at"
) VALUES ($1, $2, $3, $4, $5, 0, 0, $6, $7, {{now($9)}}, {{now($9)}} + $8::bigint * INTERVAL '1 millisecond')
ON CONFLICT ("namespace_id", "workflow_name", "batch_key") DO UPDATE SET "count" = gb."count"
RETURNING gb."id", gb."version", gb."count", gb."bytes", gb."max_size", gb."max_bytes"

-- name: batch_add_item
-- Appends item $3 (JSON text) to batch $2 and counts it in the open row.
WITH item AS (
  INSERT INTO {{schema}}."go_batch_items" ("namespace_id", "batch_id", "payload", "created_at")
  VALUES ($1, $2, $3, {{now($4)}})
  RETURNING "seq"
)
UPDATE {{schema}}."go_batches" AS gb
SET "count" = gb."count" + 1, "bytes" = gb."bytes" + octet_length($3)
FROM item
WHERE gb."namespace_id" = $1 AND gb."id" = $2
RETURNING item."seq", gb."count", gb."bytes"

-- name: batch_items
-- The items of batch $2, in arrival order.
SELECT "payload" FROM {{schema}}."go_batch_items"
WHERE "namespace_id" = $1 AND "batch_id" = $2
ORDER BY "seq"

-- name: batch_close
-- Deletes batch $2 and its items (its flush, in the transaction that
-- created its run).
WITH items AS (
  DELETE FROM {{schema}}."go_batch_items" WHERE "namespace_id" = $1 AND "batch_id" = $2
)
DELETE FROM {{schema}}."go_batches" WHERE "namespace_id" = $1 AND "id" = $2

-- name: batch_lock_due
-- One open batch due (flush_at passed), locked; batches another
-- transaction holds (an append, another worker's flush) are skipped.
SELECT gb."workflow_name", gb."batch_key", gb."id", gb."version"
FROM {{schema}}."go_batches" AS gb
WHERE gb."namespace_id" = $1 AND gb."flush_at" <= {{clock($2)}}
ORDER BY gb."flush_at"
LIMIT 1
FOR UPDATE SKIP LOCKED

-- name: batch_next_due
-- When the namespace's next open batch is due, and the statement's clock.
SELECT min(gb."flush_at"), {{clock($2)}} FROM {{schema}}."go_batches" AS gb
WHERE gb."namespace_id" = $1

-- name: list_batches
-- The open batches, soonest due first (at most $2).
SELECT gb."workflow_name", gb."version", gb."batch_key", gb."count", gb."bytes",
  gb."max_size", gb."max_bytes", gb."first_at", gb."flush_at"
FROM {{schema}}."go_batches" AS gb
WHERE gb."namespace_id" = $1
ORDER BY gb."flush_at", gb."workflow_name", gb."batch_key"
LIMIT $2
