-- go 5 · hooks (backend.HookStore) and streams (backend.StreamStore), as
-- PostgreSQL's go migration 5 (backend/postgres/migrations_go says why each
-- table and index is so): tables of this SDK's own, never read by the
-- TypeScript SDK; OpenWorkflow's tables are not changed. Times are
-- ISO-8601 text with milliseconds, JSON is text kept as given, chunk data
-- a BLOB (any bytes). A hook is live while its run is not terminal (read
-- from workflow_runs.status). The keys referencing workflow_runs cascade,
-- so a run deleted by hand takes its hooks and streams along.
--
-- The indexes of these tables are created here, with them: they are this
-- SDK's own tables, not OpenWorkflow's (whose extra indexes of ours are
-- created at open instead, see create_deadline_index).
CREATE TABLE IF NOT EXISTS "workflow_hooks" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "token" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "step_name" TEXT NOT NULL,
  "step_attempt_id" TEXT NOT NULL,
  "metadata" TEXT,
  "payloads" INTEGER NOT NULL,
  "created_at" TEXT NOT NULL,
  "updated_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "id"),
  CONSTRAINT "workflow_hooks_workflow_run_fk" FOREIGN KEY ("namespace_id", "workflow_run_id")
    REFERENCES "workflow_runs" ("namespace_id", "id") ON DELETE CASCADE
);

CREATE UNIQUE INDEX IF NOT EXISTS "workflow_hooks_run_step_idx"
ON "workflow_hooks" ("namespace_id", "workflow_run_id", "step_name");

CREATE INDEX IF NOT EXISTS "workflow_hooks_token_idx"
ON "workflow_hooks" ("namespace_id", "token");

CREATE TABLE IF NOT EXISTS "workflow_hook_payloads" (
  "namespace_id" TEXT NOT NULL,
  "hook_id" TEXT NOT NULL,
  "seq" INTEGER NOT NULL,
  "data" TEXT NOT NULL,
  "created_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "hook_id", "seq"),
  CONSTRAINT "workflow_hook_payloads_hook_fk" FOREIGN KEY ("namespace_id", "hook_id")
    REFERENCES "workflow_hooks" ("namespace_id", "id") ON DELETE CASCADE
);

-- The head of a stream: the last sequence number. (PostgreSQL's head also
-- records the latest close, for an append that cannot see the chunks
-- committed while it waited for its locks; here an append holds the
-- file's write lock from its first read, and reads the closing chunks.)
CREATE TABLE IF NOT EXISTS "workflow_streams" (
  "namespace_id" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "stream" TEXT NOT NULL,
  "chunks" INTEGER NOT NULL,
  "created_at" TEXT NOT NULL,
  "updated_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "workflow_run_id", "stream"),
  CONSTRAINT "workflow_streams_workflow_run_fk" FOREIGN KEY ("namespace_id", "workflow_run_id")
    REFERENCES "workflow_runs" ("namespace_id", "id") ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS "workflow_stream_chunks" (
  "namespace_id" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "stream" TEXT NOT NULL,
  "seq" INTEGER NOT NULL,
  "data" BLOB NOT NULL,
  "closes" INTEGER NOT NULL,
  "step_attempt_id" TEXT NOT NULL,
  "worker_id" TEXT NOT NULL,
  "run_attempts" INTEGER NOT NULL,
  "created_at" TEXT NOT NULL,
  PRIMARY KEY ("namespace_id", "workflow_run_id", "stream", "seq"),
  CONSTRAINT "workflow_stream_chunks_stream_fk" FOREIGN KEY ("namespace_id", "workflow_run_id", "stream")
    REFERENCES "workflow_streams" ("namespace_id", "workflow_run_id", "stream") ON DELETE CASCADE
);

-- A stream's closing chunks (a handful), found without reading its chunks.
CREATE INDEX IF NOT EXISTS "workflow_stream_chunks_close_idx"
ON "workflow_stream_chunks" ("namespace_id", "workflow_run_id", "stream", "seq")
WHERE "closes" = 1;

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (5);
