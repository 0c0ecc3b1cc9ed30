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
      "go_paused_due_at" = {{paused_wake($8)}},
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

-- Signals addressed to one run (SignalRun; go migration 11's
-- go_run_signals). A send locks the run (lock_signaled_run), stores the
-- signal (insert_run_signal) and delivers the oldest stored one to the
-- run's open wait, if any (deliver_oldest_run_signal). A wait's receive
-- (ReceiveRunSignal) locks the run under the worker's fence
-- (lock_owned_run, hooks.sql) and delivers the oldest to its attempt. The
-- run's row lock serializes both, so seq is the send order and each signal
-- goes to one wait.

-- name: lock_signaled_run
-- The run's status, its row locked until the commit.
SELECT wr."status"
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
FOR NO KEY UPDATE

-- name: run_signal_by_key
-- An earlier send to run $2 of signal $3 with key $4.
SELECT rs."id", rs."step_attempt_id" IS NOT NULL
FROM {{schema}}."go_run_signals" AS rs
WHERE rs."namespace_id" = $1 AND rs."workflow_run_id" = $2 AND rs."signal" = $3 AND rs."idempotency_key" = $4

-- name: insert_run_signal
-- Stores a signal for run $3, next in its (run, signal) order.
INSERT INTO {{schema}}."go_run_signals" (
  "namespace_id", "id", "workflow_run_id", "signal", "seq", "data", "idempotency_key", "created_at"
)
SELECT $1, $2, $3, $4,
  COALESCE((SELECT MAX(rs."seq") FROM {{schema}}."go_run_signals" AS rs
            WHERE rs."namespace_id" = $1 AND rs."workflow_run_id" = $3 AND rs."signal" = $4), 0) + 1,
  $5, $6, {{now($7)}}

-- name: pending_run_signal
-- Whether run $2 has a stored signal $3 no wait has received.
SELECT EXISTS (
  SELECT 1 FROM {{schema}}."go_run_signals" AS rs
  WHERE rs."namespace_id" = $1 AND rs."workflow_run_id" = $2 AND rs."signal" = $3
    AND rs."step_attempt_id" IS NULL
)

-- name: open_signal_wait
-- Run $2's running wait for signal $3 that nothing was delivered to.
SELECT sa."id"
FROM {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = $2
  AND sa."kind" = 'signal-wait' AND sa."status" = 'running'
  AND sa."context"->>'signal' = $3
  AND NOT EXISTS (
    SELECT 1 FROM {{schema}}."workflow_signals" AS ws
    WHERE ws."namespace_id" = sa."namespace_id" AND ws."step_attempt_id" = sa."id"
  )
ORDER BY sa."created_at", sa."id"
LIMIT 1

-- name: oldest_run_signal
-- Run $2's first stored signal $3 no wait has received.
SELECT rs."id", rs."data"
FROM {{schema}}."go_run_signals" AS rs
WHERE rs."namespace_id" = $1 AND rs."workflow_run_id" = $2 AND rs."signal" = $3
  AND rs."step_attempt_id" IS NULL
ORDER BY rs."seq"
LIMIT 1

-- name: receive_run_signal
-- Records that attempt $3 received stored signal $2, and delivers it as
-- an ordinary workflow_signals row (same id; no sender key) for run $4's
-- signal $5 with data $6.
WITH received AS (
  UPDATE {{schema}}."go_run_signals" AS rs
  SET "step_attempt_id" = $3, "received_at" = {{now($7)}}
  WHERE rs."namespace_id" = $1 AND rs."id" = $2 AND rs."step_attempt_id" IS NULL
  RETURNING rs."id"
)
INSERT INTO {{schema}}."workflow_signals" (
  "namespace_id", "id", "signal", "data", "sender_idempotency_key",
  "workflow_run_id", "step_attempt_id", "created_at"
)
SELECT $1, received."id", $5, $6, NULL, $4, $3, {{now($7)}}
FROM received

-- name: wake_signaled_run
-- Makes run $2 claimable now if it is parked (unowned, not terminal), and
-- announces it.
UPDATE {{schema}}."workflow_runs" AS wr
SET "available_at" = {{wake_now($3)}},
    "go_paused_due_at" = {{paused_wake($3)}},
    "updated_at" = {{now($3)}}
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
  AND (wr."status" IN ('pending', 'running', 'sleeping')) IS TRUE
  AND wr."worker_id" IS NULL
RETURNING {{notify('work')}}
