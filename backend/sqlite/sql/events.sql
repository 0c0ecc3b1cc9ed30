-- Events, the event declarations of workflows and what each event did
-- (backend.EventStore, events.go), in go_events, go_event_triggers and
-- go_event_effects (go migration 18). A publish is one BEGIN IMMEDIATE
-- transaction, which excludes every other writer: no lock of its own.

-- fragment: event_columns
-- The go_events columns, in the order scanEvent reads them.
"namespace_id", "id", "seq", "name", "data", "key", "idempotency_key",
  "created_at"

-- name: event_by_idempotency_key
-- The event of namespace :ns holding idempotency key :key, and whether it
-- was published at or after :since.
SELECT "id", "created_at" > :since FROM "go_events"
WHERE "namespace_id" = :ns AND "idempotency_key" = :key

-- name: clear_event_idempotency_key
-- Frees idempotency key :key of namespace :ns, held by an event older than
-- the dedup window, for a new event.
UPDATE "go_events" SET "idempotency_key" = NULL
WHERE "namespace_id" = :ns AND "idempotency_key" = :key

-- name: insert_event
-- Inserts one event; its seq comes back.
INSERT INTO "go_events" ("namespace_id", "id", "name", "data", "key", "idempotency_key", "created_at")
VALUES (:ns, :id, :name, :data, :key, :idempotency_key, :now)
RETURNING "seq"

-- name: event_triggers_by_name
-- The declarations of namespace :ns on event name :name, by workflow,
-- kind and position (go_event_triggers_event_idx).
SELECT "workflow_name", "version", "kind", "event_name", "condition", "flow"
FROM "go_event_triggers"
WHERE "namespace_id" = :ns AND "event_name" = :name
ORDER BY "workflow_name", "kind", "position"

-- name: active_runs_of_workflow
-- The oldest :limit runs of workflow :workflow_name of namespace :ns not
-- finished, which a cancelOn declaration of that workflow without an
-- input equality evaluates (backend.MaxUnindexedCancelRunsPerPublish).
SELECT {{run_columns}} FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name
  AND "status" IN ('pending', 'running', 'sleeping')
ORDER BY "created_at", "id"
LIMIT :limit

-- name: active_runs_of_workflow_by_input
-- The runs of workflow :workflow_name of namespace :ns not finished whose
-- input holds :value at JSON path :path (json_extract's SQL value: a
-- string as text, a number as a number, so 5 = 5.0; a bool as 1 or 0),
-- the candidates of a cancelOn condition with an equality
-- event.<path> == input.<path> (backend.CancelOnLookup).
SELECT {{run_columns}} FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name
  AND "status" IN ('pending', 'running', 'sleeping')
  AND json_extract("input", :path) = :value
ORDER BY "created_at", "id"

-- name: insert_event_effect
-- Records one thing event :event_id did.
INSERT INTO "go_event_effects"
  ("namespace_id", "event_id", "seq", "kind", "workflow_name", "workflow_run_id", "message", "created_at")
VALUES (:ns, :event_id, :seq, :kind, :workflow_name, :run_id, :message, :now)

-- name: get_event
-- Event :id of namespace :ns.
SELECT {{event_columns}} FROM "go_events"
WHERE "namespace_id" = :ns AND "id" = :id

-- name: event_effects
-- What event :id of namespace :ns did, in order.
SELECT "kind", "workflow_name", "workflow_run_id", "message", "created_at"
FROM "go_event_effects"
WHERE "namespace_id" = :ns AND "event_id" = :id
ORDER BY "seq"

-- name: list_events
-- One page of namespace :ns's events, newest first: :name filters by name
-- when not NULL, :below is the seq to list below (NULL: from the newest),
-- :limit the page size (one more than the caller's).
SELECT {{event_columns}} FROM "go_events"
WHERE "namespace_id" = :ns
  AND (:name IS NULL OR "name" = :name)
  AND (:below IS NULL OR "seq" < :below)
ORDER BY "seq" DESC
LIMIT :limit

-- name: list_event_triggers
-- The declarations of namespace :ns, of workflow :workflow_name when not
-- NULL.
SELECT "workflow_name", "version", "kind", "event_name", "condition",
  "declared_by", "updated_at", "flow"
FROM "go_event_triggers"
WHERE "namespace_id" = :ns AND (:workflow_name IS NULL OR "workflow_name" = :workflow_name)
ORDER BY "workflow_name", "kind", "position"

-- name: delete_event_triggers
-- Removes workflow :workflow_name's declarations of namespace :ns.
DELETE FROM "go_event_triggers"
WHERE "namespace_id" = :ns AND "workflow_name" = :workflow_name

-- name: insert_event_trigger
-- Inserts one declaration of workflow :workflow_name (:flow its flow
-- control's JSON, NULL for none).
INSERT INTO "go_event_triggers"
  ("namespace_id", "workflow_name", "kind", "position", "event_name", "condition", "flow", "version", "declared_by", "updated_at")
VALUES (:ns, :workflow_name, :kind, :position, :event_name, :condition, :flow, :version, :declared_by, :now)

-- name: prune_event_effects
-- Deletes the effects of the up to :limit events of namespace :ns created
-- before :cutoff that prune_events deletes next.
DELETE FROM "go_event_effects"
WHERE "namespace_id" = :ns AND "event_id" IN (
  SELECT "id" FROM "go_events"
  WHERE "namespace_id" = :ns AND "created_at" < :cutoff
  ORDER BY "created_at" LIMIT :limit)

-- name: prune_events
-- Deletes up to :limit events of namespace :ns created before :cutoff,
-- oldest first.
DELETE FROM "go_events"
WHERE "namespace_id" = :ns AND "id" IN (
  SELECT "id" FROM "go_events"
  WHERE "namespace_id" = :ns AND "created_at" < :cutoff
  ORDER BY "created_at" LIMIT :limit)
