-- Claims and leases. Every statement's last parameter is the injected
-- clock (see fragments.sql).

-- name: claim_runs
-- The claim, one statement ($1 namespace, $2 worker ids, $3 lease in ms,
-- $4/$5 the workflows' names and versions or NULL for any, $6 the
-- lookahead in ms, $7 the clock):
--  1. expired: fail every non-terminal run whose deadline passed (announced
--     as finished; a parked parent is not woken, as upstream);
--  2. candidate: lock up to cardinality($2) claimable runs, pending first,
--     skipping rows other claimers hold. Pending runs, due running ones
--     (parked, or with an expired lease), then due runs of the legacy
--     status sleeping are picked by one query per status, each reading the
--     claim index in order (namespace, status, available_at, created_at),
--     so a claim costs the same with 5 or 500,000 runs waiting; a single
--     query ordered by a CASE on the status had to sort every due run on
--     every claim (21 ms with 5,000 pending), as did one over
--     status IN ('running', 'sleeping') (47 ms with 100,000 due parked
--     runs, against 0.09 ms for status = 'running');
--     then parked running runs due within $6 milliseconds (the lookahead,
--     0 for none), after every due run;
--  3. pair the i-th candidate with the i-th worker id ($2) and claim it with
--     a lease of $3 milliseconds;
--  4. when it claimed a run, make its own commit asynchronous (no wait for
--     the WAL flush; set in the statement, so that an idle worker's claim
--     is one statement): losing a claim in a database crash only hands the
--     runs back, and the worker's first durable write flushes it anyway,
--     since WAL is written in order. That takes a flush off every run's
--     start-to-result path.
-- With no worker ids it only runs step 1: a worker without a free slot
-- sweeps deadlines that way. The result is in claim order.
WITH expired AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'failed',
      "error" = {{deadline_error}},
      "worker_id" = NULL,
      "available_at" = NULL,
      "finished_at" = {{now($7)}},
      "updated_at" = {{now($7)}}
  WHERE wr."namespace_id" = $1
    AND wr."status" IN ('pending', 'running', 'sleeping')
    AND wr."deadline_at" IS NOT NULL
    AND wr."deadline_at" <= {{clock($7)}}
  RETURNING wr."id", {{notify('finished')}} AS notified
),
{{claim_candidate(pending_candidate, 'pending', 0, c."available_at" <= {{clock($7)}}, cardinality($2::text[]))}},
{{claim_candidate(running_candidate, 'running', 1, c."available_at" <= {{clock($7)}},
  cardinality($2::text[]) - (SELECT count(*) FROM pending_candidate))}},
{{claim_candidate(sleeping_candidate, 'sleeping', 2, c."available_at" <= {{clock($7)}},
  cardinality($2::text[]) - (SELECT count(*) FROM pending_candidate) - (SELECT count(*) FROM running_candidate))}},
{{claim_candidate(early_candidate, 'running', 3, {{due_within_lookahead($6, $7)}},
  cardinality($2::text[]) - (SELECT count(*) FROM pending_candidate) - (SELECT count(*) FROM running_candidate)
    - (SELECT count(*) FROM sleeping_candidate))}},
candidate AS (
  SELECT * FROM pending_candidate
  UNION ALL SELECT * FROM running_candidate
  UNION ALL SELECT * FROM sleeping_candidate
  UNION ALL SELECT * FROM early_candidate
),
slot AS (
  SELECT candidate."namespace_id", candidate."id",
         row_number() OVER (ORDER BY candidate."rank", candidate."available_at", candidate."created_at", candidate."id") AS n
  FROM candidate
),
worker AS (
  SELECT w."worker_id", w."n" FROM unnest($2::text[]) WITH ORDINALITY AS w("worker_id", "n")
),
claimed AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'running',
      "attempts" = wr."attempts" + 1,
      "worker_id" = worker."worker_id",
      "available_at" = {{now($7)}} + $3::bigint * INTERVAL '1 millisecond',
      "started_at" = COALESCE(wr."started_at", {{now($7)}}),
      "updated_at" = {{now($7)}}
  FROM slot JOIN worker ON worker."n" = slot."n"
  WHERE wr."namespace_id" = slot."namespace_id" AND wr."id" = slot."id"
  RETURNING wr.*, slot."n" AS claim_order
)
SELECT {{run_columns}}
FROM claimed AS wr
CROSS JOIN LATERAL (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
ORDER BY wr.claim_order

-- fragment: claim_candidate(name, status, rank, due, limit)
-- One of the claim's candidate CTEs: up to {{limit}} runs of one status,
-- due as {{due}} says and not past their deadline (of the workflows $4/$5
-- when set), in claim-index order, locked and skipping rows other
-- claimers hold.
{{name}} AS (
  SELECT c."namespace_id", c."id", {{rank}} AS "rank", c."available_at", c."created_at"
  FROM {{schema}}."workflow_runs" AS c
  WHERE c."namespace_id" = $1
    AND c."status" = {{status}}
    AND {{due}}
    AND (c."deadline_at" IS NULL OR c."deadline_at" > {{clock($7)}})
    AND ($4::text[] IS NULL OR EXISTS (
      SELECT 1 FROM unnest($4::text[], $5::text[]) AS k("name", "version")
      WHERE k."name" = c."workflow_name" AND k."version" IS NOT DISTINCT FROM c."version"))
  ORDER BY c."available_at", c."created_at"
  LIMIT {{limit}}
  FOR UPDATE SKIP LOCKED
)

-- fragment: due_within_lookahead(ms, at)
-- A parked run (no worker, so never a lease about to expire) due within
-- the claim's lookahead of {{ms}} milliseconds, but not yet.
c."available_at" > {{clock({{at}})}}
    AND c."available_at" <= {{clock({{at}})}} + {{ms}}::bigint * INTERVAL '1 millisecond'
    AND c."worker_id" IS NULL

-- name: next_due
-- When the namespace's next run becomes claimable (a delayed start, a
-- parked run's wake-up, a lease's expiry), and the statement's clock: one
-- index-ordered LIMIT 1 per status, so it stays cheap however many runs
-- wait.
SELECT min(t."available_at"), {{clock($2)}} FROM (
  (SELECT "available_at" FROM {{schema}}."workflow_runs"
   WHERE "namespace_id" = $1 AND "status" = 'pending' AND "available_at" > {{clock($2)}}
   ORDER BY "available_at" LIMIT 1)
  UNION ALL
  (SELECT "available_at" FROM {{schema}}."workflow_runs"
   WHERE "namespace_id" = $1 AND "status" = 'running' AND "available_at" > {{clock($2)}}
   ORDER BY "available_at" LIMIT 1)
  UNION ALL
  (SELECT "available_at" FROM {{schema}}."workflow_runs"
   WHERE "namespace_id" = $1 AND "status" = 'sleeping' AND "available_at" > {{clock($2)}}
   ORDER BY "available_at" LIMIT 1)
) AS t

-- name: extend_lease
-- The heartbeat: a new lease of $4 ms, leaseholder only.
UPDATE {{schema}}."workflow_runs" AS wr
SET "available_at" = {{now($5)}} + $4::bigint * INTERVAL '1 millisecond',
    "updated_at" = {{now($5)}}
WHERE wr."namespace_id" = $1 AND wr."id" = $2
  AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3

-- name: release_worker_runs
-- Hands back the running runs leased to the worker ids $2 (a claim whose
-- outcome the worker does not know). Rare: it reads the namespace's
-- running runs through the claim index and filters on the worker id,
-- which no index covers.
WITH released AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "worker_id" = NULL,
      "available_at" = {{now($3)}},
      "updated_at" = {{now($3)}}
  WHERE wr."namespace_id" = $1 AND wr."status" = 'running' AND wr."worker_id" = ANY($2::text[])
  RETURNING {{notify('work')}} AS notified
)
SELECT count(*) FROM released
