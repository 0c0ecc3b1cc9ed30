-- Retention (backend.RunPruner, retention.go): one batch of a prune is
-- prune_candidates (or prune_candidates_of_workflow), then the deletes
-- below, in one BEGIN IMMEDIATE transaction of a few milliseconds. :ids is
-- the batch's run ids as a JSON array.

-- name: prune_candidates
-- The next batch of finished runs of the namespace that finished before
-- :cutoff, oldest first by (created_at, id) after the cursor (:after_at,
-- :after_id; '' and '' from the start), at most :limit, leaving out the
-- workflows of :except (a JSON array), with their stored statuses.
--
-- Each stored terminal status is its own part, one range of
-- OpenWorkflow's (namespace_id, status, created_at DESC) index from the
-- cursor to the cutoff (a run finishes after it is created, so
-- created_at < :cutoff bounds it), so that a batch reads about :limit
-- rows per part, plus those it passes, however many runs the file holds.
SELECT "id", "created_at", "status" FROM (
{{prune_part('completed', 1)}}
  UNION ALL
{{prune_part('succeeded', 1)}}
  UNION ALL
{{prune_part('failed', 1)}}
  UNION ALL
{{prune_part('canceled', 1)}})
ORDER BY "created_at", "id"
LIMIT :limit

-- name: prune_candidates_of_workflow
-- prune_candidates for the runs of workflow :workflow_name only, each part
-- a range of OpenWorkflow's (namespace_id, workflow_name, status,
-- created_at DESC) index.
SELECT "id", "created_at", "status" FROM (
{{prune_part('completed', "workflow_name" = :workflow_name)}}
  UNION ALL
{{prune_part('succeeded', "workflow_name" = :workflow_name)}}
  UNION ALL
{{prune_part('failed', "workflow_name" = :workflow_name)}}
  UNION ALL
{{prune_part('canceled', "workflow_name" = :workflow_name)}})
ORDER BY "created_at", "id"
LIMIT :limit

-- fragment: prune_part(status, workflow)
-- One stored status's candidates. Passed, as in use: a child whose parent
-- still waits in a running workflow step (the step the child names, or
-- one linked to it), since that step reads the child's output from the
-- child's row when it resumes; both probes are index lookups.
  SELECT * FROM (
    SELECT wr."id", wr."created_at", wr."status"
    FROM "workflow_runs" AS wr
    WHERE wr."namespace_id" = :ns
      AND wr."status" = {{status}}
      AND {{workflow}}
      AND wr."created_at" >= :after_at
      AND (wr."created_at", wr."id") > (:after_at, :after_id)
      AND wr."created_at" < :cutoff
      AND COALESCE(wr."finished_at", wr."updated_at") < :cutoff
      AND wr."workflow_name" NOT IN (SELECT value FROM json_each(:except))
      AND NOT EXISTS (
        SELECT 1 FROM "step_attempts" AS parent_step
        WHERE parent_step."namespace_id" = wr."parent_step_attempt_namespace_id"
          AND parent_step."id" = wr."parent_step_attempt_id"
          AND parent_step."status" = 'running')
      AND NOT EXISTS (
        SELECT 1 FROM "step_attempts" AS waiting
        WHERE waiting."child_workflow_run_namespace_id" = wr."namespace_id"
          AND waiting."child_workflow_run_id" = wr."id"
          AND waiting."status" = 'running')
    ORDER BY wr."created_at", wr."id"
    LIMIT :limit)

-- name: prune_run_signals
-- The signals sent to the runs :ids with SignalRun (go_run_signals),
-- received or not.
DELETE FROM "go_run_signals"
WHERE "namespace_id" = :ns AND "workflow_run_id" IN (SELECT value FROM json_each(:ids))

-- name: prune_run_updates
-- The updates of the runs :ids (go_run_updates).
DELETE FROM "go_run_updates"
WHERE "namespace_id" = :ns AND "workflow_run_id" IN (SELECT value FROM json_each(:ids))

-- name: prune_signals
-- The signals delivered to the step attempts of the runs :ids:
-- workflow_signals has no foreign key (as OpenWorkflow's), so nothing
-- cascades to it; found through the attempts, by the unique
-- (namespace_id, step_attempt_id) index.
DELETE FROM "workflow_signals"
WHERE "namespace_id" = :ns
  AND "step_attempt_id" IN (
    SELECT sa."id" FROM "step_attempts" AS sa
    WHERE sa."namespace_id" = :ns AND sa."workflow_run_id" IN (SELECT value FROM json_each(:ids)))

-- name: prune_chunks
-- The stream chunks of the runs, set-based rather than row by row through
-- the foreign keys' cascade.
DELETE FROM "workflow_stream_chunks"
WHERE "namespace_id" = :ns AND "workflow_run_id" IN (SELECT value FROM json_each(:ids))

-- name: prune_streams
DELETE FROM "workflow_streams"
WHERE "namespace_id" = :ns AND "workflow_run_id" IN (SELECT value FROM json_each(:ids))

-- name: prune_hook_payloads
DELETE FROM "workflow_hook_payloads"
WHERE "namespace_id" = :ns
  AND "hook_id" IN (
    SELECT h."id" FROM "workflow_hooks" AS h
    WHERE h."namespace_id" = :ns AND h."workflow_run_id" IN (SELECT value FROM json_each(:ids)))

-- name: prune_hooks
DELETE FROM "workflow_hooks"
WHERE "namespace_id" = :ns AND "workflow_run_id" IN (SELECT value FROM json_each(:ids))

-- name: prune_steps
-- A child started by one of these attempts is unlinked (its
-- parent_step_attempt_* set NULL by OpenWorkflow's foreign key), not
-- deleted.
DELETE FROM "step_attempts"
WHERE "namespace_id" = :ns AND "workflow_run_id" IN (SELECT value FROM json_each(:ids))

-- name: prune_runs
-- The runs themselves, last, if still terminal (the transaction holds the
-- write lock since the candidates were read, so they are); a step of
-- another run linked to one of them as its child is unlinked by
-- OpenWorkflow's foreign key. Returns the stored statuses.
DELETE FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "id" IN (SELECT value FROM json_each(:ids))
  AND "status" IN ('completed', 'succeeded', 'failed', 'canceled')
RETURNING "status"
