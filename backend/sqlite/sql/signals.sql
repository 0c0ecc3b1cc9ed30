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

-- Signals addressed to one run (SignalRun; go migration 11's
-- go_run_signals): a send stores the signal (insert_run_signal) and
-- delivers the oldest stored one to the run's open wait, if any
-- (open_signal_wait, oldest_run_signal, receive_run_signal,
-- insert_run_signal_delivery, then wake_run); a wait's receive
-- (ReceiveRunSignal) delivers the oldest to its attempt. The
-- transaction's write lock serializes both, so seq is the send order.

-- name: run_signal_by_key
-- An earlier send to run :run_id of :signal with :idempotency_key.
SELECT "id", "step_attempt_id" IS NOT NULL
FROM "go_run_signals"
WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id AND "signal" = :signal
  AND "idempotency_key" = :idempotency_key

-- name: insert_run_signal
-- Stores a signal for run :run_id, next in its (run, signal) order.
INSERT INTO "go_run_signals" (
  "namespace_id", "id", "workflow_run_id", "signal", "seq", "data", "idempotency_key", "created_at"
)
VALUES (:ns, :id, :run_id, :signal,
  COALESCE((SELECT MAX("seq") FROM "go_run_signals"
            WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id AND "signal" = :signal), 0) + 1,
  :data, :idempotency_key, :now)

-- name: pending_run_signal
-- Whether run :run_id has a stored :signal no wait has received.
SELECT EXISTS (
  SELECT 1 FROM "go_run_signals"
  WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id AND "signal" = :signal
    AND "step_attempt_id" IS NULL
)

-- name: open_signal_wait
-- Run :run_id's running wait for :signal that nothing was delivered to.
SELECT sa."id"
FROM "step_attempts" sa
WHERE sa."namespace_id" = :ns AND sa."workflow_run_id" = :run_id
  AND sa."kind" = 'signal-wait' AND sa."status" = 'running'
  AND json_extract(sa."context", '$.signal') = :signal
  AND NOT EXISTS (
    SELECT 1 FROM "workflow_signals" ws
    WHERE ws."namespace_id" = sa."namespace_id" AND ws."step_attempt_id" = sa."id"
  )
ORDER BY sa."created_at", sa."id"
LIMIT 1

-- name: oldest_run_signal
-- Run :run_id's first stored :signal no wait has received.
SELECT "id", "data"
FROM "go_run_signals"
WHERE "namespace_id" = :ns AND "workflow_run_id" = :run_id AND "signal" = :signal
  AND "step_attempt_id" IS NULL
ORDER BY "seq"
LIMIT 1

-- name: receive_run_signal
-- Records that attempt :step_id received stored signal :id.
UPDATE "go_run_signals"
SET "step_attempt_id" = :step_id, "received_at" = :now
WHERE "namespace_id" = :ns AND "id" = :id AND "step_attempt_id" IS NULL

-- name: insert_run_signal_delivery
-- Delivers stored signal :id to attempt :step_id as an ordinary
-- workflow_signals row (same id; no sender key, so keyed name sends never
-- see it).
INSERT INTO "workflow_signals" (
  "namespace_id", "id", "signal", "data", "sender_idempotency_key",
  "workflow_run_id", "step_attempt_id", "created_at"
)
VALUES (:ns, :id, :signal, :data, NULL, :run_id, :step_id, :now)
