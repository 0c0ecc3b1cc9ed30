-- Retention (backend.RunPruner, retention.go): one batch of a prune is
-- prune_candidates, then the deletes below, in one READ COMMITTED
-- transaction of a few milliseconds; no lock outlives it.

-- name: prune_candidates
-- The next batch of finished runs of namespace $1 that finished before
-- $2, oldest first by (created_at, id) after the cursor ($3, $4; from the
-- start, a time before every run and ''), at most $5 of them, leaving out
-- the workflows of $6; each with its stored status once its row is
-- locked, or NULL when the run is in use, another transaction holds its
-- row (SKIP LOCKED: the batch never waits), or it is no longer terminal.
--
-- Each stored terminal status is its own branch, one index range of
-- OpenWorkflow's (namespace_id, status, created_at DESC) index read in
-- order from the cursor to the cutoff (a run finishes after it is
-- created, so created_at < $2 bounds it without an index on finished_at,
-- which every completion would pay for: go migration 2 says what an index
-- of workflow_runs costs) and stopped after $5 rows and those tied with
-- the last; the branches merge in order. So a batch reads about $5 rows
-- per branch, plus those finished after the cutoff, however many runs the
-- namespace holds. The cursor is always given, never NULL-tested, so that
-- no plan has to leave the range open.
--
-- In use, and kept (the cursor passes it; a later prune sees it again): a
-- child whose parent still waits in a running workflow step (the step the
-- child names, or one linked to it), since that step reads the child's
-- output from the child's row when it resumes. Those tests are made in
-- lock_candidates, per candidate, where they are index probes (the
-- primary key of step_attempts, OpenWorkflow's partial child index). In
-- the ranges themselves, at a million finished runs, the planner read all
-- 3,000,000 step attempts once per batch for the few running ones (an
-- anti join or a hashed subplan: 0.4–0.7 s), or the whole table, counting
-- on the scan to pass every run of the range rather than stop at $5.
WITH candidates AS MATERIALIZED (
  {{prune_branch('completed', TRUE)}}
  UNION ALL
  {{prune_branch('succeeded', TRUE)}}
  UNION ALL
  {{prune_branch('failed', TRUE)}}
  UNION ALL
  {{prune_branch('canceled', TRUE)}}
  ORDER BY "created_at", "id"
  LIMIT $5
)
{{lock_candidates}}

-- name: prune_candidates_of_workflow
-- prune_candidates for the runs of workflow $7 only, each branch a range
-- of OpenWorkflow's (namespace_id, workflow_name, status, created_at DESC)
-- index.
WITH candidates AS MATERIALIZED (
  {{prune_branch('completed', wr."workflow_name" = $7)}}
  UNION ALL
  {{prune_branch('succeeded', wr."workflow_name" = $7)}}
  UNION ALL
  {{prune_branch('failed', wr."workflow_name" = $7)}}
  UNION ALL
  {{prune_branch('canceled', wr."workflow_name" = $7)}}
  ORDER BY "created_at", "id"
  LIMIT $5
)
{{lock_candidates}}

-- fragment: lock_candidates
-- The candidates in order, each locked by primary key (SKIP LOCKED) with
-- its status re-read under the lock, unless it is in use. The LATERAL
-- subquery locks rows, so PostgreSQL runs it per candidate, and the
-- in-use tests within it are probes for that one run.
SELECT c."id", c."created_at", locked."status"
FROM candidates AS c
LEFT JOIN LATERAL (
  SELECT wr."status"
  FROM {{schema}}."workflow_runs" AS wr
  WHERE wr."namespace_id" = c."namespace_id" AND wr."id" = c."id"
    AND (wr."status" IN ('completed', 'succeeded', 'failed', 'canceled')) IS TRUE
    AND NOT EXISTS (
      SELECT 1 FROM {{schema}}."step_attempts" AS parent_step
      WHERE parent_step."namespace_id" = wr."parent_step_attempt_namespace_id"
        AND parent_step."id" = wr."parent_step_attempt_id"
        AND parent_step."status" = 'running'
    )
    AND NOT EXISTS (
      SELECT 1 FROM {{schema}}."step_attempts" AS waiting
      WHERE waiting."child_workflow_run_namespace_id" = wr."namespace_id"
        AND waiting."child_workflow_run_id" = wr."id"
        AND waiting."status" = 'running'
    )
  FOR UPDATE OF wr SKIP LOCKED
) AS locked ON TRUE
ORDER BY c."created_at", c."id"

-- fragment: prune_branch(status, workflow)
-- One stored status's candidates for prune_candidates, in index order.
(SELECT wr."namespace_id", wr."id", wr."created_at"
  FROM {{schema}}."workflow_runs" AS wr
  WHERE wr."namespace_id" = $1 AND wr."status" = {{status}}
    AND {{workflow}}
    AND wr."created_at" >= $3 AND (wr."created_at", wr."id") > ($3, $4::text)
    AND wr."created_at" < $2
    AND COALESCE(wr."finished_at", wr."updated_at") < $2
    AND wr."workflow_name" <> ALL($6::text[])
  ORDER BY wr."created_at"
  FETCH FIRST $5 ROWS WITH TIES)

-- name: prune_escapes
-- The records of the escaped JSON values of runs $2 (and of their step
-- attempts and the signals delivered to them): they name rows that are
-- about to go. First, while those rows still exist. Each part is a range
-- of the record's primary key.
DELETE FROM {{schema}}."openworkflow_go_escaped_json" AS e
WHERE e."namespace_id" = $1
  AND (
    (e."table_name" = 'workflow_runs' AND e."row_id" = ANY($2::text[]))
    OR (e."table_name" = 'step_attempts' AND e."row_id" IN (
      SELECT sa."id" FROM {{schema}}."step_attempts" AS sa
      WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = ANY($2::text[])))
    OR (e."table_name" = 'workflow_signals' AND e."row_id" IN (
      SELECT ws."id"
      FROM {{schema}}."step_attempts" AS sa
      JOIN {{schema}}."workflow_signals" AS ws ON ws."namespace_id" = sa."namespace_id" AND ws."step_attempt_id" = sa."id"
      WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = ANY($2::text[])))
  )

-- name: prune_signals
-- The signals delivered to the step attempts of runs $2: workflow_signals
-- has no foreign key (as OpenWorkflow's), so nothing cascades to it. Found
-- through the attempts, by the unique (namespace_id, step_attempt_id)
-- index.
DELETE FROM {{schema}}."workflow_signals" AS ws
USING {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = ANY($2::text[])
  AND ws."namespace_id" = sa."namespace_id" AND ws."step_attempt_id" = sa."id"

-- name: prune_run_signals
-- The signals sent to runs $2 with SignalRun (go_run_signals), received
-- or not, by the (namespace_id, workflow_run_id, ...) index.
DELETE FROM {{schema}}."go_run_signals" AS rs
WHERE rs."namespace_id" = $1 AND rs."workflow_run_id" = ANY($2::text[])

-- name: prune_run_updates
-- The updates of runs $2 (go_run_updates), by its primary key's
-- (namespace_id, workflow_run_id) prefix.
DELETE FROM {{schema}}."go_run_updates" AS ru
WHERE ru."namespace_id" = $1 AND ru."workflow_run_id" = ANY($2::text[])

-- name: prune_chunks
-- The stream chunks of runs $2, set-based (the foreign keys would cascade
-- from the streams row by row).
DELETE FROM {{schema}}."workflow_stream_chunks" AS c
WHERE c."namespace_id" = $1 AND c."workflow_run_id" = ANY($2::text[])

-- name: prune_streams
DELETE FROM {{schema}}."workflow_streams" AS s
WHERE s."namespace_id" = $1 AND s."workflow_run_id" = ANY($2::text[])

-- name: prune_hook_payloads
-- The payloads of the hooks of runs $2, found by the hooks' (namespace_id,
-- workflow_run_id, step_name) index.
DELETE FROM {{schema}}."workflow_hook_payloads" AS p
USING {{schema}}."workflow_hooks" AS h
WHERE h."namespace_id" = $1 AND h."workflow_run_id" = ANY($2::text[])
  AND p."namespace_id" = h."namespace_id" AND p."hook_id" = h."id"

-- name: prune_hooks
DELETE FROM {{schema}}."workflow_hooks" AS h
WHERE h."namespace_id" = $1 AND h."workflow_run_id" = ANY($2::text[])

-- name: prune_steps
-- The step attempts of runs $2. A child started by one of them is
-- unlinked (its parent_step_attempt_* set NULL by OpenWorkflow's foreign
-- key), not deleted.
DELETE FROM {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = ANY($2::text[])

-- name: prune_runs
-- The runs $2 themselves, last; a step of another run linked to one of
-- them as its child is unlinked by OpenWorkflow's foreign key. Returns the
-- deleted runs' stored statuses, which the counts are made of.
DELETE FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = ANY($2::text[])
RETURNING wr."status"
