-- 1 · the two core tables: workflow_runs and step_attempts, keyed by
-- (namespace_id, id) so several namespaces share one database. Ids are TEXT
-- because each SDK writes its own form (UUIDs from TypeScript, prefixed ULIDs
-- from Go). No column defaults and no CHECK constraints, exactly as in
-- OpenWorkflow: the backends write every column explicitly.
CREATE TABLE IF NOT EXISTS {{schema}}."workflow_runs" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  --
  "workflow_name" TEXT NOT NULL,
  "version" TEXT,
  "status" TEXT NOT NULL,
  "idempotency_key" TEXT,
  "config" JSONB NOT NULL,
  "context" JSONB,
  "input" JSONB,
  "output" JSONB,
  "error" JSONB,
  "attempts" INTEGER NOT NULL,
  "parent_step_attempt_namespace_id" TEXT,
  "parent_step_attempt_id" TEXT,
  "worker_id" TEXT,
  "available_at" TIMESTAMPTZ,
  "deadline_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ,
  "finished_at" TIMESTAMPTZ,
  "created_at" TIMESTAMPTZ NOT NULL,
  "updated_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "id")
);

CREATE TABLE IF NOT EXISTS {{schema}}."step_attempts" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  --
  "workflow_run_id" TEXT NOT NULL,
  "step_name" TEXT NOT NULL,
  "kind" TEXT NOT NULL,
  "status" TEXT NOT NULL,
  "config" JSONB NOT NULL,
  "context" JSONB,
  "output" JSONB,
  "error" JSONB,
  "child_workflow_run_namespace_id" TEXT,
  "child_workflow_run_id" TEXT,
  "started_at" TIMESTAMPTZ,
  "finished_at" TIMESTAMPTZ,
  "created_at" TIMESTAMPTZ NOT NULL,
  "updated_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "id")
);

INSERT INTO {{schema}}."openworkflow_migrations" ("version")
VALUES (1)
ON CONFLICT DO NOTHING;
