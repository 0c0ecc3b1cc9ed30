-- The group commit (ApplyWrites) and the batch start (CreateWorkflowRuns).
-- Every statement's last parameter is the injected clock (see
-- fragments.sql).
--
-- The transitions here do not pg_notify per row: ApplyWrites announces a
-- batch's runs after its commit, in a transaction of its own (see
-- announce in batch.go), since a NOTIFY holds a database-wide lock from
-- its commit until the commit's WAL flush.
--
-- Step inserts, run completions and parks come in two forms, one row and
-- many (unnest of one array per column), and a batch sends the one-row
-- form for a write it does not combine. Sending the multi-row form with
-- one-element arrays instead cost 1.2–1.3 ms per batch of one run's step
-- and completion, against 0.75–0.77 ms (BenchmarkApplyWrites/one-pass,
-- same hour): PostgreSQL's plan cache keeps planning a one-row use of the
-- unnest statements afresh on every execution (the generic plan's guess
-- of 100 array elements looks costlier than the custom one), and planning
-- those CTEs is most of the difference. A lone pass on an idle worker (W2)
-- pays it on every run.

-- name: insert_step
-- Inserts attempt $4 as the caller wrote it (status, output, error, child
-- link) on run $2 leased to worker $3, locking the run row (owned_run).
-- started_at defaults to now; finished_at to now for a terminal status.
WITH {{owned_run($1, $2, $3)}}
INSERT INTO {{schema}}."step_attempts" AS sa (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status",
  "config", "context", "output", "error",
  "child_workflow_run_namespace_id", "child_workflow_run_id",
  "started_at", "finished_at", "created_at", "updated_at"
)
SELECT $1, $4, $2, $5, $6, $7::text,
  $8, $9, $10, $11,
  $12, $13,
  COALESCE($14::timestamptz, {{now($16)}}),
  CASE WHEN $7::text IN ('completed', 'failed') THEN COALESCE($15::timestamptz, {{now($16)}}) ELSE $15::timestamptz END,
  {{now($16)}}, {{now($16)}}
FROM owned_run
RETURNING sa."id"

-- name: insert_steps
-- insert_step for many attempts in one statement ($2…$15: one array per
-- column, one element per attempt), so a group commit of many runs' fast
-- steps costs one statement, not one per step. Each attempt lands only if
-- its run is running and leased to its worker id, whose row is locked FOR
-- NO KEY UPDATE as in the one-row form; the ids of the attempts that
-- landed are returned.
WITH {{step_inserts($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)}},
{{owned_runs($1, input)}}
{{insert_step_rows($1, $16)}}

-- name: complete_steps
-- complete_step for many attempts in one statement ($2 run ids, $3 worker
-- ids, $4 attempt ids, $5 outputs as JSON text): each attempt completes
-- only if its run is running and leased to its worker id, whose row is
-- locked FOR NO KEY UPDATE as in the one-row form; the ids of the attempts
-- completed are returned.
WITH {{step_completions($2, $3, $4, $5)}},
{{owned_runs($1, finish)}}
{{complete_step_rows($1, $6)}}

-- name: write_steps
-- insert_steps and complete_steps in one statement ($2…$15 the inserts'
-- arrays, as insert_steps's; $16 run ids, $17 worker ids, $18 attempt ids
-- and $19 outputs of the completions, as complete_steps's $2…$5): a group
-- commit that both records and completes step attempts — a wave of runs
-- woken from their sleeps, each completing its sleep and recording its
-- next step — locks each run once and sends one statement, not two (W4's
-- wake-ups: 100 statements became 47, and 155 ms of the database 141; the
-- rows written are most of the cost).
-- The parts never write the same attempt: planStatements combines only
-- completions of attempts the batch writes once. Each part applies its
-- rows' fences as the separate statements do; the ids of the attempts
-- inserted and completed are returned.
WITH {{step_inserts($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)}},
{{step_completions($16, $17, $18, $19)}},
written AS (
  SELECT i."run_id", i."worker_id" FROM input AS i
  UNION ALL
  SELECT f."run_id", f."worker_id" FROM finish AS f
),
{{owned_runs($1, written)}},
inserted AS (
  {{insert_step_rows($1, $20)}}
),
completed AS (
  {{complete_step_rows($1, $20)}}
)
SELECT ins."id" FROM inserted AS ins
UNION ALL
SELECT cmp."id" FROM completed AS cmp

-- fragment: step_inserts(run, worker, id, name, kind, status, config, context, output, error, child_ns, child_id, started, finished)
-- The CTE "input": the attempts a multi-row step write inserts, one array
-- per column.
input AS (
  SELECT * FROM unnest({{run}}::text[], {{worker}}::text[], {{id}}::text[], {{name}}::text[], {{kind}}::text[], {{status}}::text[],
                       {{config}}::text[], {{context}}::text[], {{output}}::text[], {{error}}::text[], {{child_ns}}::text[], {{child_id}}::text[],
                       {{started}}::timestamptz[], {{finished}}::timestamptz[])
    AS i("run_id", "worker_id", "id", "step_name", "kind", "status", "config", "context", "output", "error",
         "child_ns", "child_id", "started_at", "finished_at")
)

-- fragment: insert_step_rows(ns, at)
-- Inserts the rows of "input" whose run is in "owned_run", as the caller
-- wrote them; started_at defaults to now, finished_at to now for a
-- terminal status. Returns the ids inserted.
INSERT INTO {{schema}}."step_attempts" AS sa (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status",
  "config", "context", "output", "error",
  "child_workflow_run_namespace_id", "child_workflow_run_id",
  "started_at", "finished_at", "created_at", "updated_at"
)
SELECT {{ns}}, i."id", i."run_id", i."step_name", i."kind", i."status",
  i."config"::jsonb, i."context"::jsonb, i."output"::jsonb, i."error"::jsonb,
  i."child_ns", i."child_id",
  COALESCE(i."started_at", {{now({{at}})}}),
  CASE WHEN i."status" IN ('completed', 'failed') THEN COALESCE(i."finished_at", {{now({{at}})}}) ELSE i."finished_at" END,
  {{now({{at}})}}, {{now({{at}})}}
FROM input AS i
JOIN owned_run AS o ON o."id" = i."run_id" AND o."worker_id" = i."worker_id"
RETURNING sa."id"

-- fragment: step_completions(run, worker, id, output)
-- The CTE "finish": the attempts a multi-row step write completes, with
-- their outputs as JSON text.
finish AS (
  SELECT * FROM unnest({{run}}::text[], {{worker}}::text[], {{id}}::text[], {{output}}::text[])
    AS i("run_id", "worker_id", "id", "output")
)

-- fragment: complete_step_rows(ns, at)
-- Completes the attempts of "finish" whose run is in "owned_run" (one
-- already completed keeps its output: a retried write). Returns the ids
-- completed.
UPDATE {{schema}}."step_attempts" AS sa
SET "status" = 'completed',
    "output" = CASE WHEN sa."status" = 'running' THEN i."output"::jsonb ELSE sa."output" END,
    "error" = NULL,
    "finished_at" = COALESCE(sa."finished_at", {{now({{at}})}}),
    "updated_at" = CASE WHEN sa."status" = 'running' THEN {{now({{at}})}} ELSE sa."updated_at" END
FROM finish AS i
JOIN owned_run AS o ON o."id" = i."run_id" AND o."worker_id" = i."worker_id"
WHERE sa."namespace_id" = {{ns}} AND sa."workflow_run_id" = i."run_id" AND sa."id" = i."id"
  AND sa."status" IN ('running', 'completed', 'succeeded')
RETURNING sa."id"

-- name: complete_run
-- Completes run $2 leased to worker $3 with output $4 (or fails it past
-- its deadline, see complete_or_expire); returns the parent link, and the
-- status, output and error it left (ApplyWrites hands them to this
-- process's subscribers: publishFinished).
UPDATE {{schema}}."workflow_runs" AS wr
SET {{complete_or_expire($4::jsonb, $5)}}
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
  AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
RETURNING wr."parent_step_attempt_namespace_id", wr."parent_step_attempt_id", wr."status", wr."output", wr."error"

-- name: complete_runs
-- complete_run for many runs in one statement ($2 run ids, $3 their worker
-- ids, $4 their outputs as JSON text), each with its own fence; it returns
-- the id, parent link, status, output and error of each run it completed.
WITH c AS MATERIALIZED (
  SELECT $1::text AS "namespace_id", u.*
  FROM unnest($2::text[], $3::text[], $4::text[]) AS u("id", "worker_id", "output")
)
UPDATE {{schema}}."workflow_runs" AS wr
SET {{complete_or_expire(c."output"::jsonb, $5)}}
FROM c
WHERE wr."namespace_id" = c."namespace_id" AND wr."id" = c."id"
  AND {{unestimated(wr."status" = 'running')}} AND wr."worker_id" = c."worker_id"
RETURNING wr."id", wr."parent_step_attempt_namespace_id", wr."parent_step_attempt_id", wr."status", wr."output", wr."error"

-- name: fail_run
-- Fails run $2 leased to worker $3 for good with error $4; returns the
-- parent link, status, output and error.
UPDATE {{schema}}."workflow_runs" AS wr
SET "status" = 'failed',
    "available_at" = NULL,
    "finished_at" = {{stamp($5)}},
    "error" = $4,
    "worker_id" = NULL,
    "started_at" = NULL,
    "updated_at" = {{stamp($5)}}
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
  AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
RETURNING wr."parent_step_attempt_namespace_id", wr."parent_step_attempt_id", wr."status", wr."output", wr."error"

-- name: park_run
-- Parks run $2 leased to worker $3 until $4. The reconciliation of waits
-- that already resolved follows the commit (reconcile_parked_runs).
UPDATE {{schema}}."workflow_runs" AS wr
SET "status" = 'running',
    "available_at" = {{due($4::timestamptz)}},
    "go_paused_due_at" = {{paused_due($4::timestamptz)}},
    "worker_id" = NULL,
    "updated_at" = {{now($5)}}
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
  AND wr."status" NOT IN ('completed', 'succeeded', 'failed', 'canceled')
  AND wr."worker_id" = $3
RETURNING wr."id"

-- name: park_runs
-- park_run for many runs in one statement ($2 run ids, $3 their worker
-- ids, $4 their wake-up times); it returns the id of each run it parked.
WITH p AS MATERIALIZED (
  SELECT $1::text AS "namespace_id", u.*
  FROM unnest($2::text[], $3::text[], $4::timestamptz[]) AS u("id", "worker_id", "available_at")
)
UPDATE {{schema}}."workflow_runs" AS wr
SET "status" = 'running',
    "available_at" = {{due(p."available_at")}},
    "go_paused_due_at" = {{paused_due(p."available_at")}},
    "worker_id" = NULL,
    "updated_at" = {{now($5)}}
FROM p
WHERE wr."namespace_id" = p."namespace_id" AND wr."id" = p."id"
  AND {{unestimated(wr."status" NOT IN ('completed', 'succeeded', 'failed', 'canceled'))}}
  AND wr."worker_id" = p."worker_id"
RETURNING wr."id"

-- name: reschedule_run
-- Sets run $2 leased to worker $3 pending at $4 with error $5 (a retry).
UPDATE {{schema}}."workflow_runs" AS wr
SET "status" = 'pending',
    "available_at" = {{due($4::timestamptz)}},
    "go_paused_due_at" = {{paused_due($4::timestamptz)}},
    "finished_at" = NULL,
    "error" = $5,
    "worker_id" = NULL,
    "started_at" = NULL,
    "updated_at" = {{now($6)}}
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
  AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
RETURNING wr."id"

-- name: send_notification
-- One notification on the backend's channel ($1: the payload).
SELECT pg_notify('openworkflow', $1)

-- name: notify_finished_inline
-- The finished notification of run $3 of namespace $2 ($1: the payload),
-- sent inside the transaction that ended it, if it did (a lone group's
-- batch: see ApplyWrites); delivered at that commit.
SELECT pg_notify('openworkflow', $1)
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $2 AND wr."id" = $3 AND wr."status" IN ('completed', 'failed')

-- name: async_commit
-- Makes the current (implicit) transaction commit without waiting for its
-- WAL flush; queued before writes whose loss in a crash is harmless
-- (notifications, which are hints).
SELECT set_config('synchronous_commit', 'off', true)

-- fragment: insert_runs(at)
-- Inserts pending runs from parallel arrays, one element per run ($2…$14;
-- JSON as text, NULL elements allowed), in one statement; a run of a
-- workflow with stored limits waits for admission (see insert_run). It
-- does not notify: CreateWorkflowRuns sends one notify_work_if_due for the
-- batch.
INSERT INTO {{schema}}."workflow_runs" AS wr (
    "namespace_id", "id", "workflow_name", "version", "status", "idempotency_key",
    "config", "context", "input", "attempts",
    "parent_step_attempt_namespace_id", "parent_step_attempt_id",
    "available_at", "deadline_at", "created_at", "updated_at",
    "go_priority", "go_concurrency_key", "go_queued_at"
  )
  SELECT $1, p."id", p."workflow_name", p."version", 'pending', p."idempotency_key",
    COALESCE(p."config", '{}')::jsonb, p."context"::jsonb, p."input"::jsonb, 0,
    p."parent_ns", p."parent_id",
    CASE WHEN lim."limited" THEN NULL ELSE COALESCE(p."available_at", {{now({{at}})}}) END,
    p."deadline_at", {{now({{at}})}}, {{now({{at}})}},
    p."priority", CASE WHEN lim."limited" THEN COALESCE(p."concurrency_key", '') ELSE p."concurrency_key" END,
    CASE WHEN lim."limited" THEN COALESCE(p."available_at", {{now({{at}})}}) END
  FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
              $9::text[], $10::text[], $11::timestamptz[], $12::timestamptz[], $13::int[], $14::text[])
       AS p("id", "workflow_name", "version", "idempotency_key", "config", "context", "input",
            "parent_ns", "parent_id", "available_at", "deadline_at", "priority", "concurrency_key")
  CROSS JOIN LATERAL (SELECT {{limited($1, p."workflow_name")}} AS "limited") AS lim

-- name: insert_runs_read_back
-- insert_runs returning the runs in input order (by position in $2).
WITH inserted AS (
  {{insert_runs($15)}}
  RETURNING wr.*
)
SELECT {{run_columns}}
FROM inserted AS wr
JOIN unnest($2::text[]) WITH ORDINALITY AS o("id", "n") ON o."id" = wr."id"
ORDER BY o."n"

-- name: insert_runs_unread
-- insert_runs returning only how many runs it inserted and the ids of
-- those that wait for admission (usually none): the batch start builds
-- the runs from its inputs and the clock notify_work_if_due returns.
-- Reading 1,000 new runs back (RETURNING, in input order) took about a
-- third of the statement's time.
WITH inserted AS (
  {{insert_runs($15)}}
  RETURNING wr."id", wr."go_queued_at" IS NOT NULL AS "queued"
)
SELECT count(*), COALESCE(array_agg(i."id") FILTER (WHERE i."queued"), '{}')
FROM inserted AS i

-- name: notify_work_if_due
-- Sends one "work" notification (without id) when new runs whose earliest
-- available_at is $2 (NULL: now) are claimable now, and returns now(): the
-- created_at and updated_at of every run insert_runs_unread inserted
-- before it in the same implicit transaction. The batch start computes $2
-- from its inputs; asking the table instead (available_at <= NOW() AND
-- id = ANY(the new ids)) filtered every due run of the namespace against
-- the new ids when the planner chose the claim index: 2 s for 5,000 new
-- runs among 100,000 due ones.
SELECT {{now($3)}} AS "clock",
  CASE WHEN COALESCE($2::timestamptz, {{clock($3)}}) <= {{clock($3)}} THEN pg_notify('openworkflow', json_build_object(
    'schema', {{schema_literal}}, 'ns', $1::text, 'kind', 'work', 'id', '')::text) END AS "notified"
