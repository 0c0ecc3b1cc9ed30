-- go 5 · hooks (backend.HookStore) and streams (backend.StreamStore), in
-- tables of this SDK's own line: OpenWorkflow has neither, and the
-- TypeScript SDK never reads these tables. Nothing here changes a table of
-- OpenWorkflow's; the keys referencing workflow_runs cascade, so a run
-- deleted by hand (by either SDK's user) takes its hooks and streams along.
--
-- workflow_hooks: one row per hook. A hook is live while its run is not
-- terminal — read from workflow_runs.status, never stored here, so a run
-- canceled by any client disposes its hooks at once.
--   - run_step_idx (UNIQUE): one hook per (run, creating step), which makes
--     CreateHook idempotent for a replayed pass; also ListHooks' lookup.
--   - token_idx: GetHookByToken, ResumeHook and CreateHook's conflict check
--     (a token's rows: at most one live, plus those of finished runs).
--   - metadata is text, kept as given (JSON never queried inside; jsonb
--     would reorder keys and refuse U+0000, see go migration 3).
--   - payloads counts the deliveries: the last sequence number, bumped
--     under the row's lock, so concurrent resumes get consecutive numbers.
CREATE TABLE IF NOT EXISTS {{schema}}."workflow_hooks" (
  "namespace_id" TEXT NOT NULL,
  "id" TEXT NOT NULL,
  "token" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "step_name" TEXT NOT NULL,
  "step_attempt_id" TEXT NOT NULL,
  "metadata" TEXT,
  "payloads" BIGINT NOT NULL,
  "created_at" TIMESTAMPTZ NOT NULL,
  "updated_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "id"),
  CONSTRAINT "workflow_hooks_workflow_run_fk" FOREIGN KEY ("namespace_id", "workflow_run_id")
    REFERENCES {{schema}}."workflow_runs" ("namespace_id", "id") ON DELETE CASCADE
);

CREATE UNIQUE INDEX IF NOT EXISTS "workflow_hooks_run_step_idx"
ON {{schema}}."workflow_hooks" ("namespace_id", "workflow_run_id", "step_name");

CREATE INDEX IF NOT EXISTS "workflow_hooks_token_idx"
ON {{schema}}."workflow_hooks" ("namespace_id", "token");

-- workflow_hook_payloads: one row per delivery, numbered 1, 2, … per hook;
-- the primary key is NextHookPayload's range and the reconciliation's
-- probe. data is the JSON text as given ('null' for null).
CREATE TABLE IF NOT EXISTS {{schema}}."workflow_hook_payloads" (
  "namespace_id" TEXT NOT NULL,
  "hook_id" TEXT NOT NULL,
  "seq" BIGINT NOT NULL,
  "data" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "hook_id", "seq"),
  CONSTRAINT "workflow_hook_payloads_hook_fk" FOREIGN KEY ("namespace_id", "hook_id")
    REFERENCES {{schema}}."workflow_hooks" ("namespace_id", "id") ON DELETE CASCADE
);

-- workflow_streams: the head of one stream of a run. chunks is the last
-- sequence number, bumped under the row's lock (so numbers follow commit
-- order); the close_* columns describe the latest chunk that closed the
-- stream — its attempt and its claim (worker id, run attempts) — so an
-- append decides from the locked head row whether the stream is closed to
-- it (see append_chunk in sql/streams.sql).
CREATE TABLE IF NOT EXISTS {{schema}}."workflow_streams" (
  "namespace_id" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "stream" TEXT NOT NULL,
  "chunks" BIGINT NOT NULL,
  "close_seq" BIGINT,
  "close_step_attempt_id" TEXT,
  "close_worker_id" TEXT,
  "close_run_attempts" INTEGER,
  "created_at" TIMESTAMPTZ NOT NULL,
  "updated_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "workflow_run_id", "stream"),
  CONSTRAINT "workflow_streams_workflow_run_fk" FOREIGN KEY ("namespace_id", "workflow_run_id")
    REFERENCES {{schema}}."workflow_runs" ("namespace_id", "id") ON DELETE CASCADE
);

-- workflow_stream_chunks: the chunks, bytes as written (bytea: NUL and any
-- byte kept), each with the attempt that wrote it and its claim (worker_id
-- and run_attempts, the run's attempts at the write), which decide whether
-- it is shown (backend.StreamStore). The primary key is ReadStream's range;
-- close_idx (partial: closing chunks only, a handful per stream) finds a
-- stream's closes without reading its chunks.
CREATE TABLE IF NOT EXISTS {{schema}}."workflow_stream_chunks" (
  "namespace_id" TEXT NOT NULL,
  "workflow_run_id" TEXT NOT NULL,
  "stream" TEXT NOT NULL,
  "seq" BIGINT NOT NULL,
  "data" BYTEA NOT NULL,
  "closes" BOOLEAN NOT NULL,
  "step_attempt_id" TEXT NOT NULL,
  "worker_id" TEXT NOT NULL,
  "run_attempts" INTEGER NOT NULL,
  "created_at" TIMESTAMPTZ NOT NULL,
  PRIMARY KEY ("namespace_id", "workflow_run_id", "stream", "seq"),
  CONSTRAINT "workflow_stream_chunks_stream_fk" FOREIGN KEY ("namespace_id", "workflow_run_id", "stream")
    REFERENCES {{schema}}."workflow_streams" ("namespace_id", "workflow_run_id", "stream") ON DELETE CASCADE
);

CREATE INDEX IF NOT EXISTS "workflow_stream_chunks_close_idx"
ON {{schema}}."workflow_stream_chunks" ("namespace_id", "workflow_run_id", "stream", "seq")
WHERE "closes";

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (5)
ON CONFLICT DO NOTHING;
