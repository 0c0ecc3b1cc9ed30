-- Runs: creation, reads, cancellation, and the wake-ups that follow a
-- run's end. Every statement's last parameter is the injected clock (see
-- fragments.sql).

-- name: lock_idempotency_key
-- Serializes keyed creates of one (namespace, workflow name, key) for the
-- rest of the transaction. $1 is the JSON text
-- {"namespaceId","workflowName","idempotencyKey"} as OpenWorkflow builds
-- it, so both SDKs take the same lock.
SELECT pg_advisory_xact_lock(hashtextextended($1, 0))

-- name: get_run_by_idempotency_key
-- The oldest run with the key created within the idempotency period ($4,
-- in milliseconds), whatever its status.
SELECT {{run_columns}}
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1
  AND wr."workflow_name" = $2
  AND wr."idempotency_key" = $3
  AND wr."created_at" >= {{clock($5)}} - $4::bigint * INTERVAL '1 millisecond'
ORDER BY wr."created_at" ASC, wr."id" ASC
LIMIT 1

-- name: insert_run
-- Inserts a pending run; available_at NULL means now; $13 its priority,
-- $14 its concurrency key. A run of a workflow with stored limits (one
-- primary-key probe of workflow_limits) waits for admission instead: its
-- available_at is NULL, which no claim but an admitting one takes, and
-- go_queued_at holds the time it may be admitted from. With a worker id
-- $16 (backend.CreateClaim) a run that does not wait for admission is
-- inserted claimed, as claim_runs would lease it: running, attempts 1,
-- worker_id $16, a lease of $17 ms. A run claimable or admissible at once
-- and not claimed is announced.
WITH inserted AS (
  INSERT INTO {{schema}}."workflow_runs" AS wr (
    "namespace_id", "id", "workflow_name", "version", "status", "idempotency_key",
    "config", "context", "input", "attempts",
    "parent_step_attempt_namespace_id", "parent_step_attempt_id",
    "available_at", "deadline_at", "created_at", "updated_at",
    "go_priority", "go_concurrency_key", "go_queued_at", "worker_id", "started_at"
  )
  SELECT
    $1, $2, $3, $4, CASE WHEN lim."claimed" THEN 'running' ELSE 'pending' END, $5,
    $6, $7, $8, CASE WHEN lim."claimed" THEN 1 ELSE 0 END,
    $9, $10,
    CASE WHEN lim."limited" THEN NULL
         WHEN lim."claimed" THEN {{now($15)}} + $17::bigint * INTERVAL '1 millisecond'
         ELSE COALESCE($11::timestamptz, {{now($15)}}) END,
    $12, {{now($15)}}, {{now($15)}},
    $13, CASE WHEN lim."limited" THEN COALESCE($14::text, '') ELSE $14::text END,
    CASE WHEN lim."limited" THEN COALESCE($11::timestamptz, {{now($15)}}) END,
    CASE WHEN lim."claimed" THEN $16::text END,
    CASE WHEN lim."claimed" THEN {{now($15)}} END
  FROM (SELECT l."limited", $16::text IS NOT NULL AND NOT l."limited" AS "claimed"
        FROM (SELECT {{limited($1, $3)}} AS "limited") AS l) AS lim
  RETURNING wr.*, CASE WHEN wr."worker_id" IS NULL AND COALESCE(wr."available_at", wr."go_queued_at") <= {{clock($15)}}
                       THEN {{notify('work')}} END AS notified
)
SELECT {{run_columns}} FROM inserted AS wr

-- name: get_run
SELECT {{run_columns}}
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2

-- name: list_runs
-- Completed by listRunsQuery with the filters, the cursor condition, the
-- order and the limit.
SELECT {{run_columns}}
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1

-- name: list_runs_summary
-- list_runs without input and output (ListWorkflowRunsParams.OmitPayloads):
-- NULL in their place, so PostgreSQL neither detoasts nor sends them.
SELECT {{run_summary_columns}}
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1

-- name: count_runs
-- The runs of the namespace per stored status: the sums of the counters
-- the triggers of go migration 6 keep (one row per session that wrote and
-- status), read through their primary key, and how many counter rows were
-- summed (fold_run_counts folds them when they are many). Counting
-- workflow_runs itself took 0.1–0.8 s with a million finished runs.
SELECT c."status", SUM(c."n")::bigint, COUNT(*)::bigint
FROM {{schema}}."openworkflow_go_run_counts" AS c
WHERE c."namespace_id" = $1
GROUP BY c."status"

-- name: fold_run_counts
-- Folds the counter rows of the namespace's ended sessions (a slot is a
-- backend process id: see go migration 6) into slot 0, so the rows stay
-- one per live session and status. One folder at a time (a transaction
-- advisory lock, tried, not awaited): two folders deleting the same rows
-- in different orders could deadlock. Sums are unchanged, so a count read
-- at any moment is exact.
WITH folder AS (
  SELECT pg_try_advisory_xact_lock(hashtextextended({{schema_literal}} || '.openworkflow_go_run_counts', 0)) AS "held"
),
gone AS (
  DELETE FROM {{schema}}."openworkflow_go_run_counts" AS c
  WHERE (SELECT f."held" FROM folder AS f)
    AND c."namespace_id" = $1 AND c."slot" <> 0
    AND NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a WHERE a."pid" = c."slot")
  RETURNING c."status", c."n"
)
INSERT INTO {{schema}}."openworkflow_go_run_counts" AS c ("namespace_id", "status", "slot", "n")
SELECT $1, g."status", 0, SUM(g."n")
FROM gone AS g
GROUP BY g."status"
ON CONFLICT ("namespace_id", "status", "slot") DO UPDATE SET "n" = c."n" + EXCLUDED."n"

-- name: cancel_run
-- Cancels a non-terminal run, whoever holds it.
WITH canceled AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'canceled',
      "worker_id" = NULL,
      "available_at" = NULL,
      "finished_at" = {{stamp($3)}},
      "updated_at" = {{stamp($3)}},
      "go_queued_at" = NULL
  WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
    AND (wr."status" IN ('pending', 'running', 'sleeping')) IS TRUE
  RETURNING wr.*, {{notify('finished')}} AS notified
)
SELECT {{run_columns}} FROM canceled AS wr

-- name: retry_run
-- Retries failed run $2 (RetryWorkflowRun) in one statement: the run
-- becomes pending and due now, without error, finish time or worker, with
-- deadline $4; and a completed attempt $3 of kind 'retry' named
-- '__retry:' || $3 is inserted with output {"attempts": <the run's
-- attempts>}, the mark from which a worker's history resets the retry
-- budgets (internal/history). Only a failed run matches: of two
-- concurrent retries the second waits for the first's row lock, then
-- re-reads the row, now pending, and matches nothing. The run is
-- announced as work. A run of a workflow with stored limits waits for
-- admission again, as a new one does: its failure ended its hold on a
-- slot, and it must not take one back without a claim counting it.
WITH retried AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'pending',
      "available_at" = CASE WHEN lim."limited" THEN NULL ELSE {{now($5)}} END,
      "error" = NULL,
      "finished_at" = NULL,
      "worker_id" = NULL,
      "deadline_at" = $4,
      "updated_at" = {{now($5)}},
      "go_queued_at" = CASE WHEN lim."limited" THEN {{now($5)}} END,
      "go_admitted_at" = NULL,
      "go_concurrency_key" = CASE WHEN lim."limited" THEN COALESCE(wr."go_concurrency_key", '') ELSE wr."go_concurrency_key" END
  FROM (SELECT {{limited($1, (SELECT r."workflow_name" FROM {{schema}}."workflow_runs" AS r WHERE r."namespace_id" = {{by_id_ns($1)}} AND r."id" = $2))}} AS "limited") AS lim
  WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
    AND (wr."status" = 'failed') IS TRUE
    -- a run marked never to be retried forward (backend.NotRetryableStep)
    AND NOT EXISTS (
      SELECT 1 FROM {{schema}}."step_attempts" AS nr
      WHERE nr."namespace_id" = $1 AND nr."workflow_run_id" = $2
        AND nr."step_name" = '__not_retryable' AND nr."status" IN ('completed', 'succeeded')
    )
  RETURNING wr.*, {{notify('work')}} AS notified
),
mark AS (
  INSERT INTO {{schema}}."step_attempts" (
    "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status",
    "config", "context", "output", "error",
    "started_at", "finished_at", "created_at", "updated_at"
  )
  SELECT wr."namespace_id", $3::text, wr."id", '__retry:' || $3::text, 'retry', 'completed',
    '{}'::jsonb, NULL, jsonb_build_object('attempts', wr."attempts"), NULL,
    {{now($5)}}, {{now($5)}}, {{now($5)}}, {{now($5)}}
  FROM retried AS wr
)
SELECT {{run_columns}} FROM retried AS wr

-- name: wake_parent
-- Makes a parked parent due now when its child ($3, $4) finished: the
-- parent's workflow attempt ($1, $2) must still be running and linked to
-- that child, and the parent unowned (parked). It runs as its own
-- statement after the child's write committed (see reconcile_parked_runs).
UPDATE {{schema}}."workflow_runs" AS wr
SET "available_at" = {{wake_now($5)}},
    "go_paused_due_at" = {{paused_wake($5)}},
    "updated_at" = {{now($5)}}
FROM {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = {{by_id_ns($1)}} AND sa."id" = $2
  AND sa."kind" = 'workflow' AND sa."status" = 'running'
  AND sa."child_workflow_run_namespace_id" = $3 AND sa."child_workflow_run_id" = $4
  AND wr."namespace_id" = sa."namespace_id" AND wr."id" = sa."workflow_run_id"
  AND (wr."status" = 'sleeping' OR (wr."status" = 'running' AND wr."worker_id" IS NULL)) IS TRUE
RETURNING {{notify('work')}}

-- name: reconcile_parked_runs
-- Makes just-parked runs ($2, an array) due now if what they wait for
-- already happened: a running workflow step whose child is terminal, a
-- running signal-wait step with a delivery, a running hook-wait step
-- whose hook has a payload numbered above the wait's afterSeq, or a running
-- event-wait step whose go_event_waits row has its event (go migration 19). It runs as
-- its own statement after the park committed, so either it sees the
-- child's, signal's or payload's write, or that writer's wake-up saw the
-- park (deliver_hook_payload locks the run's row, as the park does).
UPDATE {{schema}}."workflow_runs" AS wr
SET "available_at" = {{wake_now($3)}},
    "go_paused_due_at" = {{paused_wake($3)}},
    "updated_at" = {{now($3)}}
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = ANY($2::text[])
  AND (wr."status" IN ('running', 'sleeping')) IS TRUE
  AND wr."worker_id" IS NULL
  AND (
    EXISTS (
      SELECT 1
      FROM {{schema}}."step_attempts" AS sa
      JOIN {{schema}}."workflow_runs" AS child
        ON child."namespace_id" = sa."child_workflow_run_namespace_id"
       AND child."id" = sa."child_workflow_run_id"
      WHERE sa."namespace_id" = wr."namespace_id"
        AND sa."workflow_run_id" = wr."id"
        AND sa."kind" = 'workflow'
        AND sa."status" = 'running'
        AND child."status" IN ('completed', 'succeeded', 'failed', 'canceled')
    )
    OR EXISTS (
      SELECT 1
      FROM {{schema}}."step_attempts" AS sa
      JOIN {{schema}}."workflow_signals" AS ws
        ON ws."namespace_id" = sa."namespace_id"
       AND ws."step_attempt_id" = sa."id"
      WHERE sa."namespace_id" = wr."namespace_id"
        AND sa."workflow_run_id" = wr."id"
        AND sa."kind" = 'signal-wait'
        AND sa."status" = 'running'
    )
    OR EXISTS (
      SELECT 1
      FROM {{schema}}."step_attempts" AS sa
      JOIN {{schema}}."workflow_hook_payloads" AS hp
        ON hp."namespace_id" = sa."namespace_id"
       AND hp."hook_id" = sa."context"->>'hookId'
       AND hp."seq" > {{hook_wait_after(sa)}}
      WHERE sa."namespace_id" = wr."namespace_id"
        AND sa."workflow_run_id" = wr."id"
        AND sa."kind" = 'hook-wait'
        AND sa."status" = 'running'
    )
    OR EXISTS (
      SELECT 1
      FROM {{schema}}."go_event_waits" AS ew
      JOIN {{schema}}."step_attempts" AS sa
        ON sa."namespace_id" = ew."namespace_id" AND sa."id" = ew."step_attempt_id"
      WHERE ew."namespace_id" = wr."namespace_id"
        AND ew."workflow_run_id" = wr."id"
        AND ew."event_id" IS NOT NULL
        AND sa."status" = 'running'
    )
  )
RETURNING {{notify('work')}}

-- name: run_ownership
-- What a refused fenced write needs to explain itself.
SELECT wr."status", wr."worker_id"
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
