-- Streams (backend.StreamStore, streams.go), in workflow_streams and
-- workflow_stream_chunks (go migration 5). Every statement that reads or
-- writes the present takes the injected clock as its last parameter (see
-- fragments.sql).

-- fragment: claim_of(ns, run)
-- The claim of run {{run}} of namespace {{ns}} while it is running: its
-- worker id and attempts (claim count); no row otherwise. A chunk written
-- under this claim is shown (chunk_shown).
claim AS MATERIALIZED (
  SELECT wr."worker_id", wr."attempts"
  FROM {{schema}}."workflow_runs" AS wr
  WHERE wr."namespace_id" = {{by_id_ns({{ns}})}} AND wr."id" = {{run}}
    AND (wr."status" = 'running') IS TRUE
)

-- fragment: chunk_shown(c)
-- Whether chunk {{c}} is shown (backend.StreamStore): written under the
-- run's present claim (the CTE "claim"), or by an attempt that finished.
-- One primary-key probe of step_attempts per chunk at most.
(
    EXISTS (
      SELECT 1 FROM claim AS cl
      WHERE cl."worker_id" = {{c}}."worker_id" AND cl."attempts" = {{c}}."run_attempts"
    )
    OR EXISTS (
      SELECT 1
      FROM {{schema}}."step_attempts" AS sa
      WHERE sa."namespace_id" = {{c}}."namespace_id" AND sa."id" = {{c}}."step_attempt_id"
        AND sa."status" IN ('completed', 'succeeded', 'failed')
    )
  )

-- name: append_chunk
-- Appends chunk $6 (bytea) of attempt $5 to stream $4 of run $2, fenced on
-- worker $3, closing the stream when $7; returns whether the fence held
-- ("owned") and the chunk's number ("seq", NULL when refused). One
-- statement, one round trip:
--   - owned locks the run's row FOR NO KEY UPDATE (the fence, as every
--     step write's owned_run) and reads its claim (worker, attempts);
--   - head bumps the stream's counter under its row's lock (the numbers
--     follow commit order) — unless the stream is closed to this append:
--     its latest close was written under this same claim, or by an
--     attempt that finished (so it is shown). The head's close columns
--     are read from the row version the upsert locked, the latest one,
--     where the chunks table would be read from the statement's snapshot,
--     taken before this append waited for the run's row: a close a
--     concurrent append of the same run committed meanwhile would be
--     missed. A close from an earlier claim whose attempt never finished
--     is hidden and does not block (the step's next attempt writes on);
--     only the latest close is kept, which suffices because no append,
--     hence no later close, follows a shown close;
--   - chunk stores the bytes with the attempt and the claim, and notifies
--     the chunk (kind 'chunk', the run, the stream, the number) at commit.
-- The payload is at most ~1.7 KB plus the namespace and run id lengths
-- (a stream name is at most 255 bytes, 1,530 escaped), well under
-- NOTIFY's 8,000.
WITH owned AS (
  SELECT wr."worker_id", wr."attempts"
  FROM {{schema}}."workflow_runs" AS wr
  WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
    AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
  FOR NO KEY UPDATE
),
head AS (
  INSERT INTO {{schema}}."workflow_streams" AS s (
    "namespace_id", "workflow_run_id", "stream", "chunks",
    "close_seq", "close_step_attempt_id", "close_worker_id", "close_run_attempts",
    "created_at", "updated_at"
  )
  SELECT $1, $2, $4, 1,
    CASE WHEN $7::boolean THEN 1 END, CASE WHEN $7::boolean THEN $5 END,
    CASE WHEN $7::boolean THEN o."worker_id" END, CASE WHEN $7::boolean THEN o."attempts" END,
    {{now($8)}}, {{now($8)}}
  FROM owned AS o
  ON CONFLICT ("namespace_id", "workflow_run_id", "stream") DO UPDATE
  SET "chunks" = s."chunks" + 1,
      "close_seq" = CASE WHEN $7::boolean THEN s."chunks" + 1 ELSE s."close_seq" END,
      "close_step_attempt_id" = CASE WHEN $7::boolean THEN EXCLUDED."close_step_attempt_id" ELSE s."close_step_attempt_id" END,
      "close_worker_id" = CASE WHEN $7::boolean THEN EXCLUDED."close_worker_id" ELSE s."close_worker_id" END,
      "close_run_attempts" = CASE WHEN $7::boolean THEN EXCLUDED."close_run_attempts" ELSE s."close_run_attempts" END,
      "updated_at" = EXCLUDED."updated_at"
  WHERE s."close_seq" IS NULL
    OR NOT (
      (s."close_worker_id" = $3 AND s."close_run_attempts" = (SELECT o."attempts" FROM owned AS o))
      OR EXISTS (
        SELECT 1
        FROM {{schema}}."step_attempts" AS sa
        WHERE sa."namespace_id" = s."namespace_id" AND sa."id" = s."close_step_attempt_id"
          AND sa."status" IN ('completed', 'succeeded', 'failed')
      )
    )
  RETURNING s."chunks"
),
chunk AS (
  INSERT INTO {{schema}}."workflow_stream_chunks" AS c (
    "namespace_id", "workflow_run_id", "stream", "seq", "data", "closes",
    "step_attempt_id", "worker_id", "run_attempts", "created_at"
  )
  SELECT $1, $2, $4, h."chunks", $6::bytea, $7::boolean, $5, o."worker_id", o."attempts", {{now($8)}}
  FROM head AS h CROSS JOIN owned AS o
  RETURNING c."seq", pg_notify('openworkflow', json_build_object(
    'schema', {{schema_literal}}, 'ns', c."namespace_id", 'kind', 'chunk',
    'id', c."workflow_run_id", 'stream', c."stream", 'seq', c."seq")::text) AS notified
)
SELECT EXISTS (SELECT 1 FROM owned) AS "owned", (SELECT c."seq" FROM chunk AS c) AS "seq"

-- name: read_stream
-- The shown chunks of stream $3 of run $2 numbered above $4, at most $5,
-- each row also carrying the number of the stream's first shown close
-- (NULL: open); no chunk after that close is shown. One row with NULL
-- chunk columns when the page is empty. The chunks are a range of the
-- primary key, the closes one of workflow_stream_chunks_close_idx, and
-- the run is read once (claim).
WITH {{claim_of($1, $2)}},
closing AS (
  SELECT MIN(c."seq") AS "seq"
  FROM {{schema}}."workflow_stream_chunks" AS c
  WHERE c."namespace_id" = $1 AND c."workflow_run_id" = $2 AND c."stream" = $3
    AND c."closes"
    AND {{chunk_shown(c)}}
),
page AS (
  SELECT c."seq", c."data", c."step_attempt_id", c."created_at"
  FROM {{schema}}."workflow_stream_chunks" AS c
  WHERE c."namespace_id" = $1 AND c."workflow_run_id" = $2 AND c."stream" = $3
    AND c."seq" > $4
    AND c."seq" <= COALESCE((SELECT cs."seq" FROM closing AS cs), 9223372036854775807)
    AND {{chunk_shown(c)}}
  ORDER BY c."seq"
  LIMIT $5
)
SELECT cs."seq", p."seq", p."data", p."step_attempt_id", p."created_at"
FROM closing AS cs
LEFT JOIN page AS p ON TRUE
ORDER BY p."seq"

-- name: list_streams
-- The streams of run $2 by name in byte order (COLLATE "C", whatever the
-- database's collation), each with the number of chunks a read shows (an
-- empty closing chunk, the close's mark, aside) and whether a shown chunk
-- closed it. The chunks are counted by the claim and attempt that wrote
-- them, so that whether they are shown is asked once per attempt, not per
-- chunk.
WITH {{claim_of($1, $2)}}
SELECT s."stream", (
    SELECT COALESCE(SUM(g."n"), 0)::bigint
    FROM (
      SELECT c."namespace_id", c."step_attempt_id", c."worker_id", c."run_attempts", COUNT(*) AS "n"
      FROM {{schema}}."workflow_stream_chunks" AS c
      WHERE c."namespace_id" = s."namespace_id" AND c."workflow_run_id" = s."workflow_run_id"
        AND c."stream" = s."stream"
        AND NOT (c."closes" AND COALESCE(octet_length(c."data"), 0) = 0)
      GROUP BY c."namespace_id", c."step_attempt_id", c."worker_id", c."run_attempts"
    ) AS g
    WHERE {{chunk_shown(g)}}
  ), EXISTS (
    SELECT 1
    FROM {{schema}}."workflow_stream_chunks" AS c
    WHERE c."namespace_id" = s."namespace_id" AND c."workflow_run_id" = s."workflow_run_id"
      AND c."stream" = s."stream" AND c."closes"
      AND {{chunk_shown(c)}}
  )
FROM {{schema}}."workflow_streams" AS s
WHERE s."namespace_id" = $1 AND s."workflow_run_id" = $2
ORDER BY s."stream" COLLATE "C"
