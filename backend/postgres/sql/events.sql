-- Events, the event declarations of workflows and what each event did
-- (backend.EventStore, events.go), in go_events, go_event_triggers and
-- go_event_effects (go migration 18).

-- fragment: event_columns
-- The go_events columns, in the order scanEvent reads them.
e."namespace_id", e."id", e."seq", e."name", e."data", e."key",
  e."idempotency_key", e."created_at"

-- name: lock_event_key
-- Serializes publishes of one idempotency key ($1: lockText of namespace and key)
-- for the rest of the transaction.
SELECT pg_advisory_xact_lock(hashtextextended('go_events' || $1, 0))

-- name: event_by_idempotency_key
-- The event of namespace $1 holding idempotency key $2, and whether it was
-- published within the dedup window ($3 milliseconds before now).
SELECT e."id", e."created_at" > {{now($4)}} - make_interval(secs => $3::bigint / 1000.0)
FROM {{schema}}."go_events" AS e
WHERE e."namespace_id" = $1 AND e."idempotency_key" = $2

-- name: clear_event_idempotency_key
-- Frees idempotency key $2 of namespace $1, held by an event older than
-- the dedup window, for a new event.
UPDATE {{schema}}."go_events" SET "idempotency_key" = NULL
WHERE "namespace_id" = $1 AND "idempotency_key" = $2

-- name: insert_event
-- Inserts one event; its seq and time come back.
INSERT INTO {{schema}}."go_events" AS e
  ("namespace_id", "id", "name", "data", "key", "idempotency_key", "created_at")
VALUES ($1, $2, $3, $4, $5, $6, {{now($7)}})
RETURNING e."seq", e."created_at"

-- name: insert_events
-- Inserts the events of arrays $2 (ids), $3 (names), $4 (data), $5 (keys),
-- without idempotency keys, in array order; their seqs and times come back
-- in that order.
INSERT INTO {{schema}}."go_events" AS e
  ("namespace_id", "id", "name", "data", "key", "created_at")
SELECT $1, u."id", u."name", u."data", u."key", {{now($6)}}
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS u("id", "name", "data", "key", "n")
ORDER BY u."n"
RETURNING e."id", e."seq", e."created_at"

-- name: insert_unobserved_events
-- Inserts the events of arrays $2 (ids), $3 (names), $4 (data), $5 (keys),
-- without idempotency keys, in array order, in one statement, only if no
-- declaration (go_event_triggers_event_idx) and no open wait
-- (go_event_waits_open_idx) is on any of their names: one probe of each
-- per distinct name. Then nothing reacts to them, so the insert is the
-- whole publish (one round trip, its own implicit transaction). The rows
-- are the inserted events' ids, seqs and times; or one row of NULLs when a
-- name is observed, and nothing is inserted: the caller publishes them in
-- a transaction that reacts (insert_events, then the declarations and
-- waits). A declaration or wait committed after this statement's snapshot
-- misses the events, as it would miss them after that transaction's
-- reads. The probes are LATERAL subqueries with LIMIT 1, not two EXISTS
-- joined by OR: PostgreSQL turns the OR's EXISTS into hashed subplans that
-- read every open wait of the namespace (4 ms a publish with 10,000 runs
-- waiting; TestEventWaitLookupsReadFewPagesHoweverManyWaits).
WITH "observed" AS MATERIALIZED (
  SELECT EXISTS (
    SELECT 1
    FROM (SELECT DISTINCT n."name" FROM unnest($3::text[]) AS n("name")) AS n,
      LATERAL (
        (SELECT 1 FROM {{schema}}."go_event_triggers" AS t
         WHERE t."namespace_id" = $1 AND t."event_name" = n."name" LIMIT 1)
        UNION ALL
        (SELECT 1 FROM {{schema}}."go_event_waits" AS ew
         WHERE ew."namespace_id" = $1 AND ew."event_name" = n."name"
           AND ew."event_id" IS NULL AND ew."closed_at" IS NULL LIMIT 1)
      ) AS o
  ) AS "yes"
), "ins" AS (
  INSERT INTO {{schema}}."go_events" AS e
    ("namespace_id", "id", "name", "data", "key", "created_at")
  SELECT $1, u."id", u."name", u."data", u."key", {{now($6)}}
  FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS u("id", "name", "data", "key", "n"),
    "observed"
  WHERE NOT "observed"."yes"
  ORDER BY u."n"
  RETURNING e."id", e."seq", e."created_at"
)
SELECT "ins"."id", "ins"."seq", "ins"."created_at" FROM "ins"
UNION ALL
SELECT NULL, NULL, NULL FROM "observed" WHERE "observed"."yes"

-- name: event_triggers_by_name
-- The declarations of namespace $1 on event names $2, by workflow, kind
-- and position (go_event_triggers_event_idx).
SELECT t."workflow_name", t."version", t."kind", t."event_name", t."condition", t."flow"
FROM {{schema}}."go_event_triggers" AS t
WHERE t."namespace_id" = $1 AND t."event_name" = ANY($2::text[])
ORDER BY t."workflow_name", t."kind", t."position"

-- name: active_runs_of_workflow
-- The oldest $3 runs of workflow $2 of namespace $1 not finished, which a
-- cancelOn declaration of that workflow without an input equality
-- evaluates (backend.MaxUnindexedCancelRunsPerPublish; OpenWorkflow's
-- (namespace_id, workflow_name, ...) reads are not indexed for this: the
-- status index narrows it to unfinished runs).
SELECT {{run_columns}}
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1 AND wr."workflow_name" = $2
  AND wr."status" IN ('pending', 'running', 'sleeping')
ORDER BY wr."created_at", wr."id"
LIMIT $3

-- name: active_runs_of_workflow_by_input
-- The runs of workflow $2 of namespace $1 not finished whose input holds
-- JSON value $4 at path $3 (jsonb equality: 5 = 5.0), the candidates of a
-- cancelOn condition with the equality event.<path> == input.<$3>
-- (backend.CancelOnLookup): the condition is evaluated on these only.
-- A run whose input was stored escaped (openworkflow_go_escaped_json: a
-- string holding U+0000) is found only if the escape left the value at
-- the path as it is.
SELECT {{run_columns}}
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1 AND wr."workflow_name" = $2
  AND wr."status" IN ('pending', 'running', 'sleeping')
  AND wr."input" #> $3::text[] = $4::jsonb
ORDER BY wr."created_at", wr."id"

-- name: insert_event_effects
-- Records what the events did: arrays $2 (event ids), $3 (seq within the
-- event), $4 (kinds), $5 (workflow names), $6 (run ids), $7 (messages).
INSERT INTO {{schema}}."go_event_effects"
  ("namespace_id", "event_id", "seq", "kind", "workflow_name", "workflow_run_id", "message", "created_at")
SELECT $1, u."event_id", u."seq", u."kind", u."workflow_name", u."run_id", u."message", {{now($8)}}
FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[])
  AS u("event_id", "seq", "kind", "workflow_name", "run_id", "message")

-- name: get_event
-- Event $2 of namespace $1.
SELECT {{event_columns}}
FROM {{schema}}."go_events" AS e
WHERE e."namespace_id" = $1 AND e."id" = $2

-- name: event_effects
-- What event $2 of namespace $1 did, in order.
SELECT f."kind", f."workflow_name", f."workflow_run_id", f."message", f."created_at"
FROM {{schema}}."go_event_effects" AS f
WHERE f."namespace_id" = $1 AND f."event_id" = $2
ORDER BY f."seq"

-- name: list_events
-- One page of namespace $1's events, newest first: $2 filters by name when
-- not NULL, $3 is the seq to list below (NULL: from the newest), $4 the
-- page size (one more than the caller's).
SELECT {{event_columns}}
FROM {{schema}}."go_events" AS e
WHERE e."namespace_id" = $1
  AND ($2::text IS NULL OR e."name" = $2)
  AND ($3::bigint IS NULL OR e."seq" < $3)
ORDER BY e."seq" DESC
LIMIT $4

-- name: lock_event_triggers
-- Serializes the replacement of workflow $1's declarations (namespace in
-- the text) for the rest of the transaction.
SELECT pg_advisory_xact_lock(hashtextextended('go_event_triggers' || $1, 0))

-- name: list_event_triggers
-- The declarations of namespace $1, of workflow $2 when not NULL.
SELECT t."workflow_name", t."version", t."kind", t."event_name", t."condition",
  t."declared_by", t."updated_at", t."flow"
FROM {{schema}}."go_event_triggers" AS t
WHERE t."namespace_id" = $1 AND ($2::text IS NULL OR t."workflow_name" = $2)
ORDER BY t."workflow_name", t."kind", t."position"

-- name: delete_event_triggers
-- Removes workflow $2's declarations of namespace $1.
DELETE FROM {{schema}}."go_event_triggers"
WHERE "namespace_id" = $1 AND "workflow_name" = $2

-- name: insert_event_triggers
-- Inserts workflow $2's declarations: arrays $3 (kinds), $4 (positions),
-- $5 (event names), $6 (conditions), $7 (flow controls, NULL for none);
-- version $8, declarer $9.
INSERT INTO {{schema}}."go_event_triggers"
  ("namespace_id", "workflow_name", "kind", "position", "event_name", "condition", "flow", "version", "declared_by", "updated_at")
SELECT $1, $2, u."kind", u."position", u."event_name", u."condition", u."flow", $8, $9, {{now($10)}}
FROM unnest($3::text[], $4::int[], $5::text[], $6::text[], $7::text[]) AS u("kind", "position", "event_name", "condition", "flow")

-- name: prune_events
-- Deletes up to $3 events of namespace $1 created before $2, oldest
-- first, with their effects; returns how many events.
WITH gone AS (
  DELETE FROM {{schema}}."go_events" AS e
  WHERE e."namespace_id" = $1 AND e."id" IN (
    SELECT o."id" FROM {{schema}}."go_events" AS o
    WHERE o."namespace_id" = $1 AND o."created_at" < $2
    ORDER BY o."created_at"
    LIMIT $3
    FOR UPDATE SKIP LOCKED)
  RETURNING e."id"
), effects AS (
  DELETE FROM {{schema}}."go_event_effects" AS f
  USING gone
  WHERE f."namespace_id" = $1 AND f."event_id" = gone."id"
)
SELECT count(*) FROM gone
