-- Signals. The delivery's last parameter is the injected clock (see
-- fragments.sql).

-- name: lock_signal_key
-- Serializes keyed sends of one (namespace, signal, key) so a concurrent
-- repeat sees the first send's deliveries.
SELECT pg_advisory_xact_lock(hashtextextended($1, 0))

-- name: signal_deliveries_by_key
-- The runs a keyed send already reached.
SELECT DISTINCT ws."workflow_run_id"
FROM {{schema}}."workflow_signals" AS ws
WHERE ws."namespace_id" = $1 AND ws."signal" = $2 AND ws."sender_idempotency_key" = $3

-- name: lock_signal_waiters
-- Locks every running signal-wait attempt on signal $2, and their runs, in
-- a fixed order so concurrent senders do not deadlock. Locking the run
-- serializes with a park, so the wake-up below or the park's
-- reconciliation sees the delivery. The run's status is not a condition:
-- OpenWorkflow 0.10.1's sendSignal selects the attempts so (a finished
-- run's open wait receives the signal too, and counts as received for the
-- sender's idempotency key), and both SDKs must agree on who received a
-- signal. Only the wake-up (deliver_signal) looks at the run's status.
SELECT sa."id", sa."workflow_run_id"
FROM {{schema}}."step_attempts" AS sa
JOIN {{schema}}."workflow_runs" AS wr
  ON wr."namespace_id" = sa."namespace_id" AND wr."id" = sa."workflow_run_id"
WHERE sa."namespace_id" = $1
  AND sa."kind" = 'signal-wait'
  AND sa."status" = 'running'
  AND sa."context"->>'signal' = $2
ORDER BY sa."workflow_run_id", sa."id"
FOR UPDATE OF wr, sa

-- name: deliver_signal
-- Inserts one delivery per wait ($4 ids, $5 runs, $6 attempts; at most one
-- per attempt), wakes the unowned runs delivered to, announcing them, and
-- returns the runs delivered to.
WITH delivered AS (
  INSERT INTO {{schema}}."workflow_signals" AS ws (
    "namespace_id", "id", "signal", "data", "sender_idempotency_key",
    "workflow_run_id", "step_attempt_id", "created_at"
  )
  SELECT $1, d."id", $2, $3, $7, d."workflow_run_id", d."step_attempt_id", {{now($8)}}
  FROM unnest($4::text[], $5::text[], $6::text[]) AS d("id", "workflow_run_id", "step_attempt_id")
  ON CONFLICT ("namespace_id", "step_attempt_id") DO NOTHING
  RETURNING ws."workflow_run_id"
),
woken AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "available_at" = {{wake_now($8)}},
      "updated_at" = {{now($8)}}
  WHERE wr."namespace_id" = $1
    AND wr."id" IN (SELECT "workflow_run_id" FROM delivered)
    AND (wr."status" IN ('pending', 'running', 'sleeping')) IS TRUE
    AND wr."worker_id" IS NULL
  RETURNING {{notify('work')}} AS notified
)
SELECT DISTINCT "workflow_run_id" FROM delivered ORDER BY 1

-- name: get_signal_delivery
-- The data delivered to a signal-wait attempt.
SELECT ws."id", ws."data"
FROM {{schema}}."workflow_signals" AS ws
WHERE ws."namespace_id" = $1 AND ws."step_attempt_id" = $2
LIMIT 1
