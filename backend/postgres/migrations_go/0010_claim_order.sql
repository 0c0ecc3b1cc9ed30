-- go 10 · the claim by due time, and limits' declarations (issue 19: a run handed back after an
-- outage, or woken from a sleep, waited behind runs that became due after
-- it). The claim now orders every due run — pending, handed back, with an
-- expired lease, woken — by priority, then available_at, created_at and
-- id (claim.sql, claim_candidates). Runs of priority 0 keep OpenWorkflow's
-- claim index (namespace, status, available_at, created_at), one range per
-- status. Runs of another priority need one index holding all three
-- claimable statuses in claim order, so that a priority-10 run that slept
-- is read before the priority-0 ones: go_claim_priority_idx replaces go
-- migration 8's go_priority_idx, which held pending runs only. Partial on
-- go_priority <> 0, as before: runs without a priority (every run of the
-- TypeScript SDK, and Go runs started without one) have no entry, so they
-- cost what they cost before. Nothing of OpenWorkflow's changes.
CREATE INDEX IF NOT EXISTS "workflow_runs_go_claim_priority_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "go_priority" DESC, "available_at", "created_at", "id")
WHERE "status" IN ('pending', 'running', 'sleeping') AND "go_priority" <> 0;

DROP INDEX IF EXISTS {{schema}}."workflow_runs_go_priority_idx";

-- And limits that apply to the backlog and show a conflicting
-- declaration (issue 19: two worker versions declaring different limits
-- flipped them at each restart without a word). workflow_limits is this
-- SDK's own table:
--   - declared_by: the worker that last wrote the limits (its id and the
--     versions it registered); NULL when written otherwise.
--   - replaced: the different limits the last change replaced, with who
--     had declared them, as JSON ({"concurrency", "concurrencyPerKey",
--     "rateLimit", "ratePeriodMs", "declaredBy"}); replaced_at when.
ALTER TABLE {{schema}}."workflow_limits"
  ADD COLUMN IF NOT EXISTS "declared_by" TEXT,
  ADD COLUMN IF NOT EXISTS "replaced" TEXT,
  ADD COLUMN IF NOT EXISTS "replaced_at" TIMESTAMPTZ;

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (10)
ON CONFLICT DO NOTHING;
