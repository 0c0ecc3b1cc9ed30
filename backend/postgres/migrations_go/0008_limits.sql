-- go 8 · concurrency and rate limits, and priorities (backend.LimitStore,
-- ClaimWorkflowRunsParams.Admit and Caps; docs/architecture.md, "Limits
-- and priorities", says how the claim uses them).
--
-- Four columns on workflow_runs, all of this SDK's own: the TypeScript
-- SDK 0.10 names its columns in every insert and update, so it never
-- writes them (its inserts take the defaults) and its reads ignore them.
-- They are prefixed go_ so that a column OpenWorkflow may add one day
-- (its roadmap lists priorities) cannot collide with ours. Nothing of
-- OpenWorkflow's columns changes meaning: a run waiting for admission is
-- an ordinary pending run whose available_at is NULL, which OpenWorkflow's
-- claim (available_at <= NOW()) never takes.
--
--   - go_priority: claims take pending runs of higher priority first
--     (default 0, which every run of the TypeScript SDK has).
--   - go_concurrency_key: the key the run was started with (per-key
--     limits and rate limits count by it). NULL when none was given; a
--     limited run started without one stores '' (the key they share).
--   - go_queued_at: set while the run waits for admission (its workflow
--     has limits): when it may be admitted from, the available_at it
--     would otherwise have had. NULL otherwise (this SDK clears it when
--     it admits, cancels or fails such a run).
--   - go_admitted_at: when a claim admitted the run. A run admitted and
--     not finished holds a slot of its workflow and of its key.
--
-- ADD COLUMN with a constant default or none rewrites nothing (PostgreSQL
-- 11+), so this is instant on a table of millions of runs.
ALTER TABLE {{schema}}."workflow_runs"
  ADD COLUMN IF NOT EXISTS "go_priority" INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS "go_concurrency_key" TEXT,
  ADD COLUMN IF NOT EXISTS "go_queued_at" TIMESTAMPTZ,
  ADD COLUMN IF NOT EXISTS "go_admitted_at" TIMESTAMPTZ;

-- Every index here is partial: a run without a priority, limits or
-- admission has no entry in any of them, so runs that use none of this
-- cost what they cost before (PostgreSQL evaluates the predicates on each
-- write, and inserts no entry).
--
--   - go_priority_idx: the claim's pending runs of priority other than 0,
--     in claim order (priority, then FIFO). Runs of priority 0 keep the
--     claim index of OpenWorkflow's migration 4.
--   - go_queue_idx: the runs waiting for admission of one workflow in
--     claim order: the admission's first look, a window of the queue's
--     head.
--   - go_queue_key_idx: the same per concurrency key: the admission's
--     second look, key by key, when the head of the queue is all of keys
--     that have no room (one busy key never holds up the others).
--   - go_admitted_idx: the runs admitted and not finished, counted per
--     workflow and per key by every admission. Finishing a run takes it
--     out (whichever SDK finishes it).
--
-- The two queue indexes hold the runs whose go_queued_at is set, whatever
-- their status (a run that ended while it waited, by a writer that did
-- not clear go_queued_at, is unqueued by the next admission that meets
-- it), and key the workflow name COLLATE "C": the admission's queries
-- compare it so, and leave the status out of their index scans, so that
-- none of OpenWorkflow's indexes can serve them and the planner reads the
-- queue in order from ours on any statistics (limits.sql says what it did
-- otherwise). go_priority_idx holds the status for a like reason: with
-- (namespace, status, priority) it beats OpenWorkflow's claim index
-- (namespace, status, available_at) for the pending runs of a priority.

CREATE INDEX IF NOT EXISTS "workflow_runs_go_priority_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "status", "go_priority" DESC, "available_at", "created_at")
WHERE "status" = 'pending' AND "go_priority" <> 0;

CREATE INDEX IF NOT EXISTS "workflow_runs_go_queue_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "workflow_name" COLLATE "C", "go_priority" DESC, "go_queued_at", "created_at", "id")
WHERE "go_queued_at" IS NOT NULL;

CREATE INDEX IF NOT EXISTS "workflow_runs_go_queue_key_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "workflow_name" COLLATE "C", "go_concurrency_key", "go_priority" DESC, "go_queued_at", "created_at", "id")
WHERE "go_queued_at" IS NOT NULL;

CREATE INDEX IF NOT EXISTS "workflow_runs_go_admitted_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "workflow_name" COLLATE "C", "go_concurrency_key")
WHERE "go_admitted_at" IS NOT NULL AND "status" IN ('pending', 'running', 'sleeping');

-- workflow_limits: the limits of a workflow (by name, all versions),
-- written by the workers that register it with limits. A row makes the
-- workflow limited: runs a Go client starts of it wait for admission
-- (the insert looks the name up). NULL columns limit nothing; the rate
-- columns are both set or both NULL.
CREATE TABLE IF NOT EXISTS {{schema}}."workflow_limits" (
  "namespace_id" TEXT NOT NULL,
  "workflow_name" TEXT NOT NULL,
  "concurrency" INTEGER,
  "concurrency_per_key" INTEGER,
  "rate_limit" INTEGER,
  "rate_period_ms" BIGINT,
  "created_at" TIMESTAMPTZ NOT NULL,
  "updated_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "workflow_name")
);

-- workflow_limit_starts: one row per admission of a run of a workflow with
-- a rate limit, kept for one rate period: the rate limit counts them per
-- key. The primary key is that count's range; started_idx is the claim's
-- deletion of the rows older than the period. A log of its own rather than
-- an index on workflow_runs.go_admitted_at: such an index would take an
-- entry at every later write of every admitted run, rate-limited or not.
CREATE TABLE IF NOT EXISTS {{schema}}."workflow_limit_starts" (
  "namespace_id" TEXT NOT NULL,
  "workflow_name" TEXT NOT NULL,
  "concurrency_key" TEXT NOT NULL,
  "started_at" TIMESTAMPTZ NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "workflow_name", "concurrency_key", "started_at", "workflow_run_id")
);

CREATE INDEX IF NOT EXISTS "workflow_limit_starts_started_idx"
ON {{schema}}."workflow_limit_starts" ("namespace_id", "workflow_name", "started_at");

-- workflow_schedules.priority (go migration 7's table): the priority of
-- the runs the schedule starts.
ALTER TABLE {{schema}}."workflow_schedules"
  ADD COLUMN IF NOT EXISTS "priority" INTEGER NOT NULL DEFAULT 0;

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (8)
ON CONFLICT DO NOTHING;
