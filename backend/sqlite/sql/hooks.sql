-- Hooks (backend.HookStore, hooks.go), in workflow_hooks and
-- workflow_hook_payloads (go migration 5). A hook is live while its run is
-- not terminal, read from workflow_runs. CreateHook and ResumeHook are one
-- BEGIN IMMEDIATE transaction each: the file's write lock serializes them
-- with every park, claim and run end, and with each other (what
-- PostgreSQL's run-row and advisory locks do). See fragments.sql for the
-- conventions.

-- fragment: hook_columns
-- The workflow_hooks columns, read as "h" beside its run "wr" (NULL when
-- the run is gone), in the order scanHook reads them; the last one is
-- whether the hook is live.
h."namespace_id", h."id", h."token", h."workflow_run_id", h."step_name",
  h."step_attempt_id", h."metadata", h."payloads", h."created_at",
  {{hook_live}}

-- fragment: hook_live
-- Whether run "wr" (of hook "h") is not terminal, so its hooks are live;
-- a missing run (LEFT JOIN) is not.
COALESCE(wr."status" IN {{non_terminal_statuses}}, 0)

-- name: owned_run_claim
-- The fence of CreateHook and AppendChunk: the run's attempts (its claim
-- count) while it is running under :worker_id; no row otherwise.
SELECT "attempts"
FROM "workflow_runs"
WHERE {{owned_run}}

-- name: get_hook_by_step
-- The hook run :run_id created at step :step_name, if any: CreateHook's
-- idempotency (workflow_hooks_run_step_idx).
SELECT {{hook_columns}}
FROM "workflow_hooks" h
LEFT JOIN "workflow_runs" wr
  ON wr."namespace_id" = h."namespace_id" AND wr."id" = h."workflow_run_id"
WHERE h."namespace_id" = :ns AND h."workflow_run_id" = :run_id AND h."step_name" = :step_name

-- name: get_hook_by_token
-- The live hook holding :token, the newest should two be live (a failed
-- run retried after another took its hook's token); the rows of one
-- token come from workflow_hooks_token_idx.
SELECT {{hook_columns}}
FROM "workflow_hooks" h
JOIN "workflow_runs" wr
  ON wr."namespace_id" = h."namespace_id" AND wr."id" = h."workflow_run_id"
WHERE h."namespace_id" = :ns AND h."token" = :token
  AND wr."status" IN {{non_terminal_statuses}}
ORDER BY h."created_at" DESC, h."id" DESC
LIMIT 1

-- name: insert_hook
-- Creates a hook; the caller checked the fence and that no live hook
-- holds the token, in the same transaction.
INSERT INTO "workflow_hooks" (
  "namespace_id", "id", "token", "workflow_run_id", "step_name", "step_attempt_id",
  "metadata", "payloads", "created_at", "updated_at"
)
VALUES (:ns, :id, :token, :run_id, :step_name, :step_id, :metadata, 0, :now, :now)

-- name: bump_hook_payloads
-- Numbers the next payload of hook :hook_id.
UPDATE "workflow_hooks"
SET "payloads" = "payloads" + 1,
    "updated_at" = :now
WHERE "namespace_id" = :ns AND "id" = :hook_id
RETURNING "payloads"

-- name: insert_hook_payload
INSERT INTO "workflow_hook_payloads" ("namespace_id", "hook_id", "seq", "data", "created_at")
VALUES (:ns, :hook_id, :seq, :data, :now)

-- name: wake_hook_waiter
-- Makes run :run_id due now if it is parked (running or sleeping, no
-- worker) in a running hook-wait attempt on hook :hook_id. A run still
-- executing finds the payload when it parks (park_run).
UPDATE "workflow_runs"
SET "available_at" = {{wake_now}},
    "updated_at" = :now
WHERE "namespace_id" = :ns
  AND "id" = :run_id
  AND "status" IN ('running', 'sleeping')
  AND "worker_id" IS NULL
  AND EXISTS (
    SELECT 1
    FROM "step_attempts" sa
    WHERE sa."namespace_id" = "workflow_runs"."namespace_id"
      AND sa."workflow_run_id" = "workflow_runs"."id"
      AND sa."kind" = 'hook-wait'
      AND sa."status" = 'running'
      AND json_extract(sa."context", '$.hookId') = :hook_id
  )
RETURNING "id"

-- name: next_hook_payload
-- The first payload of hook :hook_id numbered above :after_seq.
SELECT "hook_id", "seq", "data", "created_at"
FROM "workflow_hook_payloads"
WHERE "namespace_id" = :ns AND "hook_id" = :hook_id AND "seq" > :after_seq
ORDER BY "seq"
LIMIT 1

-- name: list_hooks
-- The hooks of run :run_id, oldest first.
SELECT {{hook_columns}}
FROM "workflow_hooks" h
LEFT JOIN "workflow_runs" wr
  ON wr."namespace_id" = h."namespace_id" AND wr."id" = h."workflow_run_id"
WHERE h."namespace_id" = :ns AND h."workflow_run_id" = :run_id
ORDER BY h."created_at", h."id"
