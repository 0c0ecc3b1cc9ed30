-- Debounce (go migration 20; docs/debounce-and-batching.md). A debounced
-- run is a pending run never claimed (attempts = 0) holding
-- go_debounce_key; its due time is its available_at, or go_queued_at
-- while it waits for admission, or go_paused_due_at while it is paused:
-- whichever is set is the one moved.

-- fragment: debounce_due(col, ms, at)
-- The new value of due-time column {{col}} of run "wr" for a start now
-- with a period of {{ms}} milliseconds: now + period, never past the
-- burst's deadline; NULL stays NULL (the column does not hold the due
-- time).
CASE WHEN wr.{{col}} IS NOT NULL
     THEN LEAST({{now({{at}})}} + {{ms}}::bigint * INTERVAL '1 millisecond', wr."go_debounce_deadline") END

-- name: debounce_extend
-- The one statement that joins a start to a pending burst: $3 the key,
-- $4 the period (ms), $5 the input, $6 true to keep the first input
-- (leading). No row: no pending run holds the key.
UPDATE {{schema}}."workflow_runs" AS wr
SET "input" = CASE WHEN $6::boolean THEN wr."input" ELSE $5::jsonb END,
    "available_at" = {{debounce_due("available_at", $4, $7)}},
    "go_queued_at" = {{debounce_due("go_queued_at", $4, $7)}},
    "go_paused_due_at" = {{debounce_due("go_paused_due_at", $4, $7)}},
    "updated_at" = {{now($7)}}
WHERE wr."namespace_id" = $1 AND wr."workflow_name" = $2 AND wr."go_debounce_key" = $3
  AND wr."status" = 'pending' AND wr."attempts" = 0
RETURNING wr."id"

-- name: debounce_mark
-- Makes run $2, just inserted, the debounced run of key $3: due a period
-- ($4 ms) from now, the burst's deadline $5 ms from now. The unique index
-- workflow_runs_go_debounce_idx refuses it (23505) when another pending
-- run took the key meanwhile.
UPDATE {{schema}}."workflow_runs" AS wr
SET "go_debounce_key" = $3,
    "go_debounce_deadline" = {{now($6)}} + $5::bigint * INTERVAL '1 millisecond',
    "available_at" = CASE WHEN wr."available_at" IS NOT NULL THEN {{now($6)}} + $4::bigint * INTERVAL '1 millisecond' END,
    "go_queued_at" = CASE WHEN wr."go_queued_at" IS NOT NULL THEN {{now($6)}} + $4::bigint * INTERVAL '1 millisecond' END
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2

-- name: get_debounced_run
-- Run $2 with its debounce key, due time and deadline.
SELECT {{run_columns}}, wr."go_debounce_key",
  COALESCE(wr."available_at", wr."go_queued_at", wr."go_paused_due_at"), wr."go_debounce_deadline"
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2

-- name: list_debounced_runs
-- The pending debounced runs, soonest due first (at most $2): a walk of
-- the partial unique index, which holds them only.
SELECT {{run_columns}}, wr."go_debounce_key",
  COALESCE(wr."available_at", wr."go_queued_at", wr."go_paused_due_at"), wr."go_debounce_deadline"
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1 AND wr."status" = 'pending' AND wr."attempts" = 0
  AND wr."go_debounce_key" IS NOT NULL
ORDER BY 29 ASC NULLS LAST, wr."id"
LIMIT $2
