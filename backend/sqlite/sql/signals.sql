-- Signals. A send is one BEGIN IMMEDIATE transaction: the repeat check
-- (signal_deliveries_by_key), the waiters (signal_waiters), one
-- insert_signal_delivery per waiter and one wake_run (runs.sql) per run
-- delivered to. See fragments.sql for the conventions.

-- name: signal_deliveries_by_key
-- The runs a keyed send already delivered to.
SELECT DISTINCT "workflow_run_id"
FROM "workflow_signals"
WHERE "namespace_id" = :ns
  AND "signal" = :signal
  AND "sender_idempotency_key" = :idempotency_key
ORDER BY "workflow_run_id"

-- name: signal_waiters
-- The running signal-wait attempts on :signal (served by
-- step_attempts_signal_wait_idx), whatever the status of their run:
-- OpenWorkflow 0.10.1's sendSignal selects them so, and both SDKs must
-- agree on who received a signal and when a sender's key is used up. Only
-- the wake-up (wake_run) looks at the run's status. (PostgreSQL's
-- lock_signal_waiters also locks them; here the transaction's write lock
-- serializes sends.)
SELECT sa."id", sa."workflow_run_id"
FROM "step_attempts" sa
WHERE sa."namespace_id" = :ns
  AND sa."kind" = 'signal-wait'
  AND sa."status" = 'running'
  AND json_extract(sa."context", '$.signal') = :signal
ORDER BY sa."created_at", sa."id"

-- name: insert_signal_delivery
-- Records one delivery; the unique index on (namespace_id,
-- step_attempt_id) makes a second delivery a no-op.
INSERT INTO "workflow_signals" (
  "namespace_id", "id", "signal", "data", "sender_idempotency_key",
  "workflow_run_id", "step_attempt_id", "created_at"
)
VALUES (:ns, :id, :signal, :data, :idempotency_key, :run_id, :step_id, :now)
ON CONFLICT ("namespace_id", "step_attempt_id") DO NOTHING

-- name: get_signal_delivery
-- The data delivered to a signal-wait attempt.
SELECT "data"
FROM "workflow_signals"
WHERE "namespace_id" = :ns AND "step_attempt_id" = :step_id
LIMIT 1
