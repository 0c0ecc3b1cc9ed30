-- go 14 · durable bulk actions (issue 21, item 4: cancel, retry or delete
-- the runs a query selects). One row per action; backend.BulkActionStore
-- says what each column means. This SDK's own table; nothing of
-- OpenWorkflow's changes, and no index of workflow_runs is added (a bulk
-- page lists runs as the run list does).
--   - cursor is the keyset position after the last page applied; a page
--     commits its runs' changes with the cursor and counts in one
--     transaction, so a page is applied once or not at all;
--   - lease_owner / lease_expires_at: the driver holding the action, as a
--     run's worker_id / available_at (a killed driver's action is taken
--     over once the lease expires).
CREATE TABLE IF NOT EXISTS {{schema}}."go_bulk_actions" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "operation" TEXT NOT NULL,
  "query" TEXT NOT NULL,
  "reason" TEXT NOT NULL DEFAULT '',
  "requested_by" TEXT NOT NULL DEFAULT '',
  "state" TEXT NOT NULL,
  "max_per_second" INTEGER NOT NULL DEFAULT 0,
  "matched" BIGINT NOT NULL DEFAULT 0,
  "acted" BIGINT NOT NULL DEFAULT 0,
  "skipped" BIGINT NOT NULL DEFAULT 0,
  "failed" BIGINT NOT NULL DEFAULT 0,
  "pages" BIGINT NOT NULL DEFAULT 0,
  "cursor" TEXT NOT NULL DEFAULT '',
  "last_error" TEXT NOT NULL DEFAULT '',
  "lease_owner" TEXT,
  "lease_expires_at" TIMESTAMPTZ,
  "created_at" TIMESTAMPTZ NOT NULL,
  "updated_at" TIMESTAMPTZ NOT NULL,
  "started_at" TIMESTAMPTZ,
  "finished_at" TIMESTAMPTZ,
  PRIMARY KEY ("namespace_id", "id")
);

-- The list (newest first) and the claim's oldest open action.
CREATE INDEX IF NOT EXISTS "go_bulk_actions_created_idx"
ON {{schema}}."go_bulk_actions" ("namespace_id", "created_at" DESC, "id" DESC);

CREATE INDEX IF NOT EXISTS "go_bulk_actions_open_idx"
ON {{schema}}."go_bulk_actions" ("namespace_id", "created_at")
WHERE "state" IN ('running', 'canceling');

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (14)
ON CONFLICT DO NOTHING;
