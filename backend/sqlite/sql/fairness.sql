-- Fair shares between keys (go migration 22; docs/flow-control.md, "Fair
-- shares"), as PostgreSQL's sql/fairness.sql.

-- name: set_fairness
-- Puts run :run_id, just inserted, under fair shares with key :key and
-- weight :weight (normalized): go migration 22's enqueue trigger gives it
-- its pass and holds it out of OpenWorkflow's claim (a run waiting for
-- admission or held by a singleton queue is only marked).
UPDATE "workflow_runs"
SET "go_fair_key" = :key,
    "go_fair_weight" = :weight
WHERE "namespace_id" = :ns AND "id" = :run_id

-- name: list_fair_queues
-- A page of the namespace's fairness keys after :after, :limit of them,
-- with per key its runs waiting in the fair queue (the lowest pass, the
-- oldest due time) and its runs started and not finished: ranges of
-- workflow_runs_go_fair_key_idx.
SELECT k."fair_key", k."weight", k."last_pass", k."updated_at",
  (SELECT count(*) FROM "workflow_runs" AS r
   WHERE r."namespace_id" = :ns AND r."go_fair_key" = k."fair_key" AND r."status" = 'pending'
     AND r."available_at" IS NULL AND r."go_fair_due_at" IS NOT NULL),
  (SELECT min(r."go_fair_pass") FROM "workflow_runs" AS r
   WHERE r."namespace_id" = :ns AND r."go_fair_key" = k."fair_key" AND r."status" = 'pending'
     AND r."available_at" IS NULL AND r."go_fair_due_at" IS NOT NULL),
  (SELECT min(r."go_fair_due_at") FROM "workflow_runs" AS r
   WHERE r."namespace_id" = :ns AND r."go_fair_key" = k."fair_key" AND r."status" = 'pending'
     AND r."available_at" IS NULL AND r."go_fair_due_at" IS NOT NULL),
  (SELECT count(*) FROM "workflow_runs" AS r
   WHERE r."namespace_id" = :ns AND r."go_fair_key" = k."fair_key" AND r."status" IN {{non_terminal_statuses}}
     AND (r."status" <> 'pending' OR r."worker_id" IS NOT NULL))
FROM "workflow_fair_keys" AS k
WHERE k."namespace_id" = :ns AND k."fair_key" > :after
ORDER BY k."fair_key"
LIMIT :limit

-- name: read_fair_vtime
-- The namespace's virtual time (0 before any claim took a fair run).
SELECT {{fair_vtime}}
