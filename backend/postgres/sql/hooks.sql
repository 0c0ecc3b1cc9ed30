-- Hooks (backend.HookStore, hooks.go), in workflow_hooks and
-- workflow_hook_payloads (go migration 5). A hook is live while its run is
-- not terminal: every statement reads that from workflow_runs (the run
-- joined by primary key from the hook's row), nothing stores it. Every
-- statement that reads or writes the present takes the injected clock as
-- its last parameter (see fragments.sql).
--
-- Locks, always in this order: the run's row (FOR NO KEY UPDATE: the
-- fence of CreateHook, and ResumeHook's serialization with a park), then
-- the token's advisory lock (CreateHook), then the hook's row (the payload
-- counter). A park, a claim and a run's end lock the run's row too, so
-- none of them interleaves with a delivery.

-- fragment: hook_columns
-- The workflow_hooks columns, read as "h" beside its run "wr" (NULL when
-- the run is gone), in the order scanHook reads them; the last one is
-- whether the hook is live.
h."namespace_id", h."id", h."token", h."workflow_run_id", h."step_name",
  h."step_attempt_id", h."metadata", h."payloads", h."created_at",
  {{hook_live}}

-- fragment: hook_live
-- Whether run "wr" (of hook "h") is not terminal, so its hooks are live.
-- Written IS TRUE (see "Lookups by id" in fragments.sql); a missing run
-- (LEFT JOIN) is not live.
(wr."status" IN ('pending', 'running', 'sleeping')) IS TRUE

-- name: lock_owned_run
-- The fence of CreateHook: a row only while run $2 of namespace $1 is
-- running and leased to worker $3, locked FOR NO KEY UPDATE until the
-- commit, so that a claim moving the lease, or the run's end, waits for
-- the hook's creation or comes first and refuses it.
SELECT wr."attempts"
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
  AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
FOR NO KEY UPDATE

-- name: get_hook_by_step
-- The hook run $2 created at step $3, if any: CreateHook's idempotency (a
-- replayed pass gets the hook its first pass created). One probe of
-- workflow_hooks_run_step_idx.
SELECT {{hook_columns}}
FROM {{schema}}."workflow_hooks" AS h
LEFT JOIN {{schema}}."workflow_runs" AS wr
  ON wr."namespace_id" = h."namespace_id" AND wr."id" = h."workflow_run_id"
WHERE h."namespace_id" = $1 AND h."workflow_run_id" = $2 AND h."step_name" = $3

-- name: lock_hook_token
-- Serializes CreateHook's check and insert of one (namespace, token) for
-- the rest of the transaction, so of concurrent creates of a token exactly
-- one finds no live holder. $1 is the JSON text {"hookNamespaceId",
-- "token"} (lock_signal_key's form, another key space).
SELECT pg_advisory_xact_lock(hashtextextended($1, 0))

-- name: get_hook_by_token
-- The live hook holding token $2: the newest, should two be live (a
-- failed run retried after another took its hook's token). The rows of
-- one token (finished runs' included) come from workflow_hooks_token_idx.
SELECT {{hook_columns}}
FROM {{schema}}."workflow_hooks" AS h
JOIN {{schema}}."workflow_runs" AS wr
  ON wr."namespace_id" = h."namespace_id" AND wr."id" = h."workflow_run_id"
WHERE h."namespace_id" = {{by_id_ns($1)}} AND h."token" = $2
  AND {{hook_live}}
ORDER BY h."created_at" DESC, h."id" DESC
LIMIT 1

-- name: insert_hook
-- Creates hook $2 with token $3 for run $4 at step $5 (attempt $6), with
-- metadata $7 (text, NULL for none). The caller holds the run (fence) and
-- the token's lock and found no live holder.
WITH h AS (
  INSERT INTO {{schema}}."workflow_hooks" AS h (
    "namespace_id", "id", "token", "workflow_run_id", "step_name", "step_attempt_id",
    "metadata", "payloads", "created_at", "updated_at"
  )
  VALUES ($1, $2, $3, $4, $5, $6, $7, 0, {{now($8)}}, {{now($8)}})
  RETURNING h.*
)
SELECT h."namespace_id", h."id", h."token", h."workflow_run_id", h."step_name",
  h."step_attempt_id", h."metadata", h."payloads", h."created_at", TRUE
FROM h

-- name: lock_live_hook
-- ResumeHook's first statement: the live hook holding token $2 (the
-- newest, as get_hook_by_token), its run's row locked FOR NO KEY UPDATE
-- until the commit. A run ending meanwhile is re-checked after the lock
-- and the hook is then not live: a payload is never stored for a disposed
-- hook. A park of the run waits for the delivery's commit, or came first
-- and deliver_hook_payload sees it.
SELECT {{hook_columns}}
FROM {{schema}}."workflow_hooks" AS h
JOIN {{schema}}."workflow_runs" AS wr
  ON wr."namespace_id" = h."namespace_id" AND wr."id" = h."workflow_run_id"
WHERE h."namespace_id" = {{by_id_ns($1)}} AND h."token" = $2
  AND {{hook_live}}
ORDER BY h."created_at" DESC, h."id" DESC
LIMIT 1
FOR NO KEY UPDATE OF wr

-- name: deliver_hook_payload
-- Stores payload $4 (JSON text) as the next of hook $2 of run $3: the
-- hook's counter is bumped under its row's lock, so concurrent deliveries
-- get consecutive numbers, in commit order. If the run is parked (running
-- or sleeping, no worker) in a running hook-wait attempt on this hook, it
-- is made due now and work is announced, as deliver_signal does; a run
-- still executing finds the payload when it parks (reconcile_parked_runs).
WITH bumped AS (
  UPDATE {{schema}}."workflow_hooks" AS h
  SET "payloads" = h."payloads" + 1,
      "updated_at" = {{now($5)}}
  WHERE h."namespace_id" = $1 AND h."id" = $2
  RETURNING h."payloads"
),
delivered AS (
  INSERT INTO {{schema}}."workflow_hook_payloads" AS hp ("namespace_id", "hook_id", "seq", "data", "created_at")
  SELECT $1, $2, b."payloads", $4, {{now($5)}}
  FROM bumped AS b
  RETURNING hp."seq", hp."created_at"
),
woken AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "available_at" = {{wake_now($5)}},
      "go_paused_due_at" = {{paused_wake($5)}},
      "updated_at" = {{now($5)}}
  WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $3
    AND EXISTS (SELECT 1 FROM delivered)
    AND (wr."status" IN ('running', 'sleeping')) IS TRUE
    AND wr."worker_id" IS NULL
    AND EXISTS (
      SELECT 1
      FROM {{schema}}."step_attempts" AS sa
      WHERE sa."namespace_id" = wr."namespace_id"
        AND sa."workflow_run_id" = wr."id"
        AND sa."kind" = 'hook-wait'
        AND sa."status" = 'running'
        AND sa."context"->>'hookId' = $2
    )
  RETURNING {{notify('work')}} AS notified
)
SELECT d."seq", d."created_at" FROM delivered AS d

-- name: next_hook_payload
-- The first payload of hook $2 numbered above $3: one range of the
-- primary key.
SELECT hp."hook_id", hp."seq", hp."data", hp."created_at"
FROM {{schema}}."workflow_hook_payloads" AS hp
WHERE hp."namespace_id" = $1 AND hp."hook_id" = $2 AND hp."seq" > $3
ORDER BY hp."seq"
LIMIT 1

-- name: list_hooks
-- The hooks of run $2, oldest first (a run has a few; they are sorted).
SELECT {{hook_columns}}
FROM {{schema}}."workflow_hooks" AS h
LEFT JOIN {{schema}}."workflow_runs" AS wr
  ON wr."namespace_id" = h."namespace_id" AND wr."id" = h."workflow_run_id"
WHERE h."namespace_id" = $1 AND h."workflow_run_id" = $2
ORDER BY h."created_at", h."id"
