-- Fragments the statements of the other files share. Placeholders (see
-- package internal/sqlset): {{schema}} is the quoted schema name and
-- {{schema_literal}} the schema name as a string literal, both given by
-- the backend when it loads these files.
--
-- Conventions of every statement:
--
-- Time. Every timestamp written is {{now(at)}}, or a parameter truncated to
-- milliseconds in Go, so cursors and ISO strings round-trip; every
-- comparison with the present reads {{clock(at)}}. Each statement takes
-- the backend's injected clock as its last parameter ($at): NULL (the
-- default) means the database's NOW(), a time means that time, so that
-- tests move time on PostgreSQL as they do on SQLite.
--
-- Notifications. Writes that notify do so from a RETURNING clause of a
-- data-modifying statement, which PostgreSQL always runs to completion,
-- so the notification is sent exactly when the row changed, and delivered
-- at commit.
--
-- Lookups by id. Statements that find runs by id are written so that the
-- only plan is a primary-key probe per id, whatever the statistics say. A
-- fresh database has none until autovacuum's first ANALYZE, and the
-- planner then guesses that "namespace_id" = $1 or "status" = 'running'
-- matches a row or two; it walked an index over the namespace's every
-- run, or every running run, once per id (10–45 ms statements with 1,000
-- runs parked in W4). So: the status of a run found by id is tested as
-- (wr."status" …) IS TRUE, which cannot be an index condition; a
-- multi-row lookup joins on "namespace_id" and "id" both taken from its
-- input (a MATERIALIZED CTE, or the claim's candidates), so no condition
-- on the namespace alone exists; the step writes' fence probes in a
-- LATERAL subquery (owned_runs); and a lookup's namespace is given as
-- {{by_id_ns(ns)}}, which the planner cannot read (see there). One case
-- the shapes cannot hold: a small table with no statistics at all (a
-- thousand runs, never analyzed), where the guessed share of the
-- namespace makes an index over the namespace look as cheap as the
-- primary key even with by_id_ns; the backend analyzes such a table once
-- itself (statistics.go).

-- fragment: by_id_ns(ns)
-- The namespace of a lookup by id (or by hook token): {{ns}} as an
-- uncorrelated subquery (an InitPlan), still an index condition of the
-- primary key, but one whose value the planner does not see, so it
-- estimates "namespace_id" = {{ns}} as an average namespace's share of
-- the rows (1 / its distinct values) rather than from the statistics.
-- Given as a constant, a namespace that ANALYZE did not meet (one made
-- since, or too small for its sample) beside one it did is estimated at
-- one row when the statistics say the other is every row; every index
-- that starts with "namespace_id" then looks as good as the primary key,
-- and the planner took one that walks every run of the namespace once
-- per probe (workflow_runs_workflow_name_status_created_at_desc_idx): with
-- 10,000,000 runs in one namespace, every step write and completion of
-- W1 in a namespace of its own read all of its 5,000 runs, and W1 ran at
-- 0.70 of an empty database's speed (docs/scale.md).
(SELECT {{ns}}::text)

-- fragment: unestimated(cond)
-- {{cond}}, a test of a run's status (or lease) in a multi-row write that
-- joins its input on the primary key, hidden from the statistics as well as
-- from the indexes: PostgreSQL estimates a CASE it has no statistics for
-- at one half. As (cond) IS TRUE it was estimated from the statistics,
-- which in a queue table describe one moment's statuses: analyzed while
-- every run was pending (or completed), "status" = 'running' was one row
-- of workflow_runs, and the planner scanned the table in a loop over the
-- input rows (TestMultiRowRunWritesIgnoreStaleStatusStatistics).
(CASE WHEN {{cond}} THEN TRUE END) IS TRUE

-- fragment: clock(at)
-- The statement's present: the injected clock $at, or the database's.
COALESCE({{at}}::timestamptz, NOW())

-- fragment: now(at)
-- The present truncated to milliseconds, as every timestamp is stored.
date_trunc('milliseconds', {{clock({{at}})}})

-- fragment: stamp(at)
-- now(at), read from the database's clock when the row is written
-- (clock_timestamp()) rather than at the transaction's start (NOW()): the
-- times that prove a limit, a run's admission (go_admitted_at, and its row
-- of workflow_limit_starts) and a run's end (finished_at, with its
-- updated_at). An admission is written by a statement whose snapshot was
-- taken after the admission lock, and it frees a slot only for a finish
-- that committed before that snapshot, so the admission's stamp is never
-- earlier than the finish's: an audit of the stored intervals sees the
-- limit kept. NOW() was the claim's start, before it waited for the lock:
-- admitted runs seemed to start up to 100 ms before the runs whose slots
-- they took had finished. The injected clock, when set, as everywhere.
date_trunc('milliseconds', COALESCE({{at}}::timestamptz, clock_timestamp()))

-- fragment: run_columns
-- The workflow_runs columns, read as "wr", in the order scanRun reads them.
wr."namespace_id", wr."id", wr."workflow_name", wr."version", wr."status",
  wr."idempotency_key", wr."config", wr."context", wr."input", wr."output", wr."error",
  wr."attempts", wr."parent_step_attempt_namespace_id", wr."parent_step_attempt_id",
  wr."worker_id", wr."available_at", wr."deadline_at", wr."started_at", wr."finished_at",
  wr."created_at", wr."updated_at",
  wr."go_priority", wr."go_concurrency_key", wr."go_queued_at", wr."go_admitted_at",
  wr."go_paused_at", wr."go_pause_reason"

-- fragment: step_columns
-- The step_attempts columns, read as "sa", in the order scanStep reads them.
sa."namespace_id", sa."id", sa."workflow_run_id", sa."step_name", sa."kind",
  sa."status", sa."config", sa."context", sa."output", sa."error",
  sa."child_workflow_run_namespace_id", sa."child_workflow_run_id", sa."started_at",
  sa."finished_at", sa."created_at", sa."updated_at"

-- fragment: run_summary_columns
-- run_columns with NULL for input and output, for lists that leave them
-- out: scanRun reads them as absent.
wr."namespace_id", wr."id", wr."workflow_name", wr."version", wr."status",
  wr."idempotency_key", wr."config", wr."context", NULL::jsonb AS "input", NULL::jsonb AS "output", wr."error",
  wr."attempts", wr."parent_step_attempt_namespace_id", wr."parent_step_attempt_id",
  wr."worker_id", wr."available_at", wr."deadline_at", wr."started_at", wr."finished_at",
  wr."created_at", wr."updated_at",
  wr."go_priority", wr."go_concurrency_key", wr."go_queued_at", wr."go_admitted_at",
  wr."go_paused_at", wr."go_pause_reason"

-- fragment: step_summary_columns
-- step_columns with NULL for output.
sa."namespace_id", sa."id", sa."workflow_run_id", sa."step_name", sa."kind",
  sa."status", sa."config", sa."context", NULL::jsonb AS "output", sa."error",
  sa."child_workflow_run_namespace_id", sa."child_workflow_run_id", sa."started_at",
  sa."finished_at", sa."created_at", sa."updated_at"

-- fragment: limited(ns, name)
-- Whether workflow {{name}} of namespace {{ns}} has stored limits, so that
-- a run started of it waits for admission: one primary-key probe of
-- workflow_limits (a table of a few rows).
EXISTS (SELECT 1 FROM {{schema}}."workflow_limits" AS l
        WHERE l."namespace_id" = {{ns}} AND l."workflow_name" = {{name}})

-- fragment: notify(kind)
-- pg_notify on the backend's channel announcing run "wr": kind 'work' (it
-- became claimable) or 'finished' (it reached a terminal status). The
-- payload says which schema, namespace and run it is about.
pg_notify('openworkflow', json_build_object(
  'schema', {{schema_literal}}, 'ns', wr."namespace_id", 'kind', {{kind}}, 'id', wr."id")::text)

-- fragment: owned_run(ns, run, worker)
-- The fence every step write of one run starts with: a row only while
-- run {{run}} of namespace {{ns}} is running and leased to worker
-- {{worker}}, locked FOR NO KEY UPDATE so that a claim moving the lease
-- serializes with the write.
owned_run AS (
  SELECT 1
  FROM {{schema}}."workflow_runs" AS wr
  WHERE wr."namespace_id" = {{by_id_ns({{ns}})}} AND wr."id" = {{run}}
    AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = {{worker}}
  FOR NO KEY UPDATE
)

-- fragment: owned_runs(ns, rows)
-- owned_run for a multi-row step write: the runs of the {{rows}} rows
-- ("run_id", "worker_id") that are running and leased to the row's worker
-- id, locked FOR NO KEY UPDATE. Each run is looked up by primary key in a
-- LATERAL subquery, which PostgreSQL cannot flatten (it locks rows), so
-- the cost is one index probe per input row whatever the statistics say;
-- as a join, with a fresh table's default estimates, the planner scanned
-- every running run once per input row.
owned_run AS (
  SELECT r."id", r."worker_id"
  FROM (SELECT DISTINCT i."run_id", i."worker_id" FROM {{rows}} AS i) AS i
  CROSS JOIN LATERAL (
    SELECT wr."id", wr."worker_id"
    FROM {{schema}}."workflow_runs" AS wr
    WHERE wr."namespace_id" = {{by_id_ns({{ns}})}} AND wr."id" = i."run_id"
      AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = i."worker_id"
    FOR NO KEY UPDATE
  ) AS r
)

-- fragment: past_deadline(at)
-- True for run "wr" whose deadline has passed, by the statement's clock
-- (as the claim's deadline sweep reads it).
(wr."deadline_at" IS NOT NULL AND wr."deadline_at" <= {{clock({{at}})}})

-- fragment: deadline_error
-- The error of a run failed because its deadline passed, as in
-- OpenWorkflow (backend.DeadlineExceededError).
'{"message":"Workflow run deadline exceeded"}'::jsonb

-- fragment: complete_or_expire(output, at)
-- The SET list of a run completion: run "wr" completes with {{output}}
-- (worker_id kept), or, when its deadline has passed, fails with the
-- deadline error exactly as the claim's deadline sweep would, so that no
-- run completes past its deadline whichever of the two comes first.
"status" = CASE WHEN {{past_deadline({{at}})}} THEN 'failed' ELSE 'completed' END,
    "output" = CASE WHEN {{past_deadline({{at}})}} THEN NULL ELSE {{output}} END,
    "error" = CASE WHEN {{past_deadline({{at}})}} THEN {{deadline_error}} ELSE NULL END,
    "worker_id" = CASE WHEN {{past_deadline({{at}})}} THEN NULL ELSE wr."worker_id" END,
    "available_at" = NULL,
    "finished_at" = {{stamp({{at}})}},
    "updated_at" = {{stamp({{at}})}}

-- fragment: wake_now(at)
-- The available_at of a parked run woken by a child's end, a signal or a
-- reconciliation: now, unless it was already due earlier; NULL while the
-- run is paused (the statement sets go_paused_due_at with paused_wake).
CASE
      WHEN wr."go_paused_at" IS NOT NULL THEN NULL
      WHEN wr."available_at" IS NULL OR wr."available_at" > {{clock({{at}})}} THEN {{now({{at}})}}
      ELSE wr."available_at"
    END

-- fragment: hook_wait_after(sa)
-- The afterSeq of hook-wait attempt {{sa}}: the sequence number of the
-- payload it waits after (0 when the context holds no number, so that a
-- malformed context never makes the statement fail).
CASE
          WHEN jsonb_typeof({{sa}}."context"->'afterSeq') = 'number' THEN ({{sa}}."context"->>'afterSeq')::numeric
          ELSE 0
        END
