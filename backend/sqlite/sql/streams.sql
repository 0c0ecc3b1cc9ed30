-- Streams (backend.StreamStore, streams.go), in workflow_streams and
-- workflow_stream_chunks (go migration 5). An append is one BEGIN
-- IMMEDIATE transaction: the fence (owned_run_claim in hooks.sql), the
-- closure check (stream_closed), the counter (bump_stream) and the chunk
-- (insert_chunk), under the file's write lock, so each reads what every
-- earlier append committed. See fragments.sql for the conventions.

-- fragment: chunk_shown(c)
-- Whether chunk {{c}} is shown (backend.StreamStore): its run is running
-- under the claim it was written in (the same worker id and attempts), or
-- its attempt finished. Primary-key probes of workflow_runs and
-- step_attempts.
(
    EXISTS (
      SELECT 1 FROM "workflow_runs" wr
      WHERE wr."namespace_id" = {{c}}."namespace_id" AND wr."id" = {{c}}."workflow_run_id"
        AND wr."status" = 'running'
        AND wr."worker_id" = {{c}}."worker_id" AND wr."attempts" = {{c}}."run_attempts"
    )
    OR EXISTS (
      SELECT 1 FROM "step_attempts" sa
      WHERE sa."namespace_id" = {{c}}."namespace_id" AND sa."id" = {{c}}."step_attempt_id"
        AND sa."status" IN ('completed', 'succeeded', 'failed')
    )
  )

-- name: stream_closed
-- Whether a shown chunk closed stream :stream of run :run_id
-- (workflow_stream_chunks_close_idx: its closing chunks only).
SELECT EXISTS (
  SELECT 1 FROM "workflow_stream_chunks" c
  WHERE c."namespace_id" = :ns AND c."workflow_run_id" = :run_id AND c."stream" = :stream
    AND c."closes" = 1
    AND {{chunk_shown(c)}}
)

-- name: bump_stream
-- Creates the stream's head or counts one more chunk; returns the chunk's
-- number.
INSERT INTO "workflow_streams" ("namespace_id", "workflow_run_id", "stream", "chunks", "created_at", "updated_at")
VALUES (:ns, :run_id, :stream, 1, :now, :now)
ON CONFLICT ("namespace_id", "workflow_run_id", "stream") DO UPDATE
SET "chunks" = "chunks" + 1, "updated_at" = excluded."updated_at"
RETURNING "chunks"

-- name: insert_chunk
INSERT INTO "workflow_stream_chunks" (
  "namespace_id", "workflow_run_id", "stream", "seq", "data", "closes",
  "step_attempt_id", "worker_id", "run_attempts", "created_at"
)
VALUES (:ns, :run_id, :stream, :seq, :data, :closes, :step_id, :worker_id, :run_attempts, :now)

-- name: read_stream
-- The shown chunks of stream :stream of run :run_id numbered above
-- :after_seq, at most :limit, each row also carrying the number of the
-- stream's first shown close (NULL: open); no chunk after it is shown.
-- One row with NULL chunk columns when the page is empty. One statement,
-- so one snapshot.
WITH closing AS (
  SELECT MIN(c."seq") AS "seq"
  FROM "workflow_stream_chunks" c
  WHERE c."namespace_id" = :ns AND c."workflow_run_id" = :run_id AND c."stream" = :stream
    AND c."closes" = 1
    AND {{chunk_shown(c)}}
),
page AS (
  SELECT c."seq", c."data", c."step_attempt_id", c."created_at"
  FROM "workflow_stream_chunks" c
  WHERE c."namespace_id" = :ns AND c."workflow_run_id" = :run_id AND c."stream" = :stream
    AND c."seq" > :after_seq
    AND c."seq" <= COALESCE((SELECT cs."seq" FROM closing cs), 9223372036854775807)
    AND {{chunk_shown(c)}}
  ORDER BY c."seq"
  LIMIT :limit
)
SELECT cs."seq", p."seq", p."data", p."step_attempt_id", p."created_at"
FROM closing cs
LEFT JOIN page p ON 1
ORDER BY p."seq"

-- name: list_streams
-- The streams of run :run_id by name (byte order), with the number of
-- chunks a read shows (an empty closing chunk, the close's mark, aside)
-- and whether a shown chunk closed them. The chunks are counted by the
-- claim and attempt that wrote them, so that whether they are shown is
-- asked once per attempt, not per chunk.
SELECT s."stream", (
    SELECT COALESCE(SUM(g."n"), 0)
    FROM (
      SELECT c."namespace_id", c."workflow_run_id", c."step_attempt_id", c."worker_id", c."run_attempts", COUNT(*) AS "n"
      FROM "workflow_stream_chunks" c
      WHERE c."namespace_id" = s."namespace_id" AND c."workflow_run_id" = s."workflow_run_id"
        AND c."stream" = s."stream"
        AND NOT (c."closes" = 1 AND COALESCE(length(c."data"), 0) = 0)
      GROUP BY c."namespace_id", c."workflow_run_id", c."step_attempt_id", c."worker_id", c."run_attempts"
    ) g
    WHERE {{chunk_shown(g)}}
  ), EXISTS (
    SELECT 1 FROM "workflow_stream_chunks" c
    WHERE c."namespace_id" = s."namespace_id" AND c."workflow_run_id" = s."workflow_run_id"
      AND c."stream" = s."stream" AND c."closes" = 1
      AND {{chunk_shown(c)}}
  )
FROM "workflow_streams" s
WHERE s."namespace_id" = :ns AND s."workflow_run_id" = :run_id
ORDER BY s."stream"
