-- go 22 · fair shares between keys (issue 22; docs/flow-control.md, "Fair
-- shares"): stride scheduling as reference control-and-events.md §11.3
-- recommends. A run started with a fairness key gets a pass when it goes
-- into the queue (its start, a retry's reschedule, a resume, any write
-- that makes it pending and due again), GREATEST(vtime, the key's last
-- pass) + ceil(1000 / weight), and the claim orders by priority, then
-- pass. vtime, per namespace, is the highest pass a claim took; it only
-- moves forward, so a key that was idle cannot bank credit.
--
-- Four columns of this SDK's own on workflow_runs, NULL on every run
-- started without fairness (every TypeScript run):
--   - go_fair_key, go_fair_weight: the run's key and weight (weight in
--     [0.001, 1000]; its stride is ceil(1000 / weight)).
--   - go_fair_pass: its pass at its last enqueue.
--   - go_fair_due_at: its due time while it waits in the fair queue. A
--     waiting fair run has available_at NULL, which OpenWorkflow's claim
--     (available_at <= NOW()) never takes: only a Go claim, in pass order,
--     does (as go migration 8 holds the runs waiting for admission).
ALTER TABLE {{schema}}."workflow_runs"
  ADD COLUMN IF NOT EXISTS "go_fair_key" TEXT,
  ADD COLUMN IF NOT EXISTS "go_fair_weight" DOUBLE PRECISION,
  ADD COLUMN IF NOT EXISTS "go_fair_pass" BIGINT,
  ADD COLUMN IF NOT EXISTS "go_fair_due_at" TIMESTAMPTZ;

-- The claim's fair candidates, in claim order (priority, then pass): one
-- range per claim, as go_claim_priority_idx is for priorities. Partial:
-- a run without fairness, or claimed, has no entry. go_fair_due_at is the
-- last key column so that runs not yet due are skipped in the index scan
-- (an index condition, no heap read); the key lets the per-key page count
-- a key's queue from the index.
CREATE INDEX IF NOT EXISTS "workflow_runs_go_fair_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "go_priority" DESC, "go_fair_pass", "created_at", "id", "go_fair_due_at")
WHERE "status" = 'pending' AND "go_fair_due_at" IS NOT NULL AND "available_at" IS NULL AND "go_paused_at" IS NULL;

-- The runs of each key not finished (queued, executing or parked): the
-- per-key page's counts, one range per key.
CREATE INDEX IF NOT EXISTS "workflow_runs_go_fair_key_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "go_fair_key", "status")
WHERE "go_fair_key" IS NOT NULL AND "status" IN ('pending', 'running', 'sleeping');

-- workflow_fair_keys: per namespace and key, the pass of the key's last
-- enqueued run and the weight it was enqueued with (the per-key table of
-- §11.3). One row per key ever used; a key's row is locked by each of its
-- enqueues (ON CONFLICT DO UPDATE), so concurrent starts of one key get
-- distinct, increasing passes.
CREATE TABLE IF NOT EXISTS {{schema}}."workflow_fair_keys" (
  "namespace_id" TEXT NOT NULL,
  "fair_key" TEXT NOT NULL,
  "weight" DOUBLE PRECISION NOT NULL,
  "last_pass" BIGINT NOT NULL,
  "updated_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "fair_key")
);

-- workflow_fair_clock: per namespace, vtime, the highest pass a claim
-- took. Written by the claims that take fair runs (claim.sql,
-- advance_fair_clock), never backwards.
CREATE TABLE IF NOT EXISTS {{schema}}."workflow_fair_clock" (
  "namespace_id" TEXT PRIMARY KEY,
  "vtime" BIGINT NOT NULL
);

-- Enqueue: a fair run written pending, due and without a worker — whoever
-- writes it (a start setting go_fair_key, a retry's reschedule, a
-- resume, a manual retry, a TypeScript write) — gets its pass from its
-- key's row, updated in the same statement, and is held out of
-- OpenWorkflow's claim: its due time moves to go_fair_due_at. A run that
-- is paused or held by a singleton queue is left to those holds (its
-- resume or release comes back here). Runs without a fairness key pay the
-- WHEN's test of one column, and only on updates of these columns.
CREATE OR REPLACE FUNCTION {{schema}}."go_fair_enqueue"() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v BIGINT;
  stride BIGINT := ceil(1000 / GREATEST(LEAST(COALESCE(NEW."go_fair_weight", 1), 1000), 0.001))::bigint;
BEGIN
  SELECT c."vtime" INTO v FROM {{schema}}."workflow_fair_clock" AS c WHERE c."namespace_id" = NEW."namespace_id";
  INSERT INTO {{schema}}."workflow_fair_keys" AS k ("namespace_id", "fair_key", "weight", "last_pass", "updated_at")
  VALUES (NEW."namespace_id", NEW."go_fair_key", COALESCE(NEW."go_fair_weight", 1), COALESCE(v, 0) + stride, NEW."updated_at")
  ON CONFLICT ("namespace_id", "fair_key") DO UPDATE
  SET "last_pass" = GREATEST(COALESCE(v, 0), k."last_pass") + stride,
      "weight" = EXCLUDED."weight",
      "updated_at" = EXCLUDED."updated_at"
  RETURNING k."last_pass" INTO NEW."go_fair_pass";
  NEW."go_fair_due_at" := NEW."available_at";
  NEW."available_at" := NULL;
  RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS "workflow_runs_go_fair_enqueue" ON {{schema}}."workflow_runs";
CREATE TRIGGER "workflow_runs_go_fair_enqueue"
BEFORE UPDATE OF "go_fair_key", "status", "available_at", "worker_id" ON {{schema}}."workflow_runs"
FOR EACH ROW WHEN (NEW."go_fair_key" IS NOT NULL AND NEW."status" = 'pending' AND NEW."worker_id" IS NULL
                   AND NEW."available_at" IS NOT NULL AND NEW."go_paused_at" IS NULL AND NEW."go_singleton_held_at" IS NULL)
EXECUTE FUNCTION {{schema}}."go_fair_enqueue"();

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (22)
ON CONFLICT DO NOTHING;
