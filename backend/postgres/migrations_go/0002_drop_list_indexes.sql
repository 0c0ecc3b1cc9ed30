-- go 2 · drop the three list indexes of go migration 1. Each run's claim and
-- completion changes its status, so each is a non-HOT update that inserts
-- an entry into every index of workflow_runs (11 with these three); at
-- about 6 µs of PostgreSQL CPU per index per update, these three cost
-- ~36 µs per run of a 3-step workflow, and slowed run creation as well.
-- ListWorkflowRuns now reads OpenWorkflow's own (namespace_id, status,
-- created_at DESC) and (namespace_id, workflow_name, status, created_at
-- DESC) indexes, one index range per stored status it covers, merged in
-- order, and stays an index-range read of about limit+1 rows at 1,000,000
-- runs (docs/scale.md). workflow_runs_go_deadline_idx stays: it is partial
-- (live runs with a deadline only) and keeps the claim's deadline sweep an
-- index probe.
DROP INDEX IF EXISTS {{schema}}."workflow_runs_go_status_list_idx";
DROP INDEX IF EXISTS {{schema}}."workflow_runs_go_name_list_idx";
DROP INDEX IF EXISTS {{schema}}."workflow_runs_go_name_status_list_idx";

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (2)
ON CONFLICT DO NOTHING;
