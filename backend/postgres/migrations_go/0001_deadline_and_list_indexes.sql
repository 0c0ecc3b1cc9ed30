-- go 1 · indexes that keep the claim's deadline sweep and the run lists fast when a namespace
-- holds millions of finished runs (docs/scale.md has the plans, before and
-- after, at 1,000,000 finished runs). OpenWorkflow's indexes of migration 4
-- stay as they are; these serve the queries of this SDK.
--
--   - go_deadline (partial: only live runs that have a deadline): the
--     deadline sweep every claim starts with, which otherwise visits every
--     live run.
--   - go_status_list: lists filtered by status, newest first. Keyed on the
--     status as read (legacy 'succeeded' is 'completed', 'sleeping' is
--     'running'), the expression the list query filters on, so one index
--     range yields rows already in (created_at, id) DESC order; with the raw
--     column, status = ANY('{completed,succeeded}') cannot be read in order.
--   - go_name_list and go_name_status_list: lists filtered by workflow name
--     (and status), newest first, for the same reason: OpenWorkflow's
--     (workflow_name, status, created_at) index cannot give a name's runs in
--     time order across statuses, and a rare (name, status) pair otherwise
--     scans the whole newest-first index.
CREATE INDEX IF NOT EXISTS "workflow_runs_go_deadline_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "deadline_at")
WHERE "deadline_at" IS NOT NULL AND "status" IN ('pending', 'running', 'sleeping');

CREATE INDEX IF NOT EXISTS "workflow_runs_go_status_list_idx"
ON {{schema}}."workflow_runs" (
  "namespace_id",
  (CASE "status" WHEN 'succeeded' THEN 'completed' WHEN 'sleeping' THEN 'running' ELSE "status" END),
  "created_at" DESC, "id" DESC
);

CREATE INDEX IF NOT EXISTS "workflow_runs_go_name_list_idx"
ON {{schema}}."workflow_runs" ("namespace_id", "workflow_name", "created_at" DESC, "id" DESC);

CREATE INDEX IF NOT EXISTS "workflow_runs_go_name_status_list_idx"
ON {{schema}}."workflow_runs" (
  "namespace_id", "workflow_name",
  (CASE "status" WHEN 'succeeded' THEN 'completed' WHEN 'sleeping' THEN 'running' ELSE "status" END),
  "created_at" DESC, "id" DESC
);

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (1)
ON CONFLICT DO NOTHING;
