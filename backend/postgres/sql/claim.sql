-- Claims and leases. Every statement's last parameter is the injected
-- clock (see fragments.sql).

-- name: claim_runs
-- The claim, one statement ($1 namespace, $2 worker ids, $3 lease in ms,
-- $4/$5 the workflows' names and versions or NULL for any, $6 the
-- lookahead in ms, $7 the clock):
--  1. expired: fail every non-terminal run whose deadline passed (announced
--     as finished; a parked parent is not woken, as upstream);
--  2. candidate: lock up to cardinality($2) claimable runs in claim order
--     (claim_candidates), skipping rows other claimers hold;
--  3. pair the i-th candidate with the i-th worker id ($2, by subscript: a
--     join with the unnested ids was planned as a nested loop over all of
--     them per candidate, 10,000 comparisons for a claim of 100) and claim
--     it with a lease of $3 milliseconds;
--  4. when it claimed a run, make its own commit asynchronous (no wait for
--     the WAL flush; set in the statement, so that an idle worker's claim
--     is one statement): losing a claim in a database crash only hands the
--     runs back, and the worker's first durable write flushes it anyway,
--     since WAL is written in order. That takes a flush off every run's
--     start-to-result path.
--  5. when it claimed runs from the fair queue (go migration 22), move the
--     namespace's vtime forward to the highest pass it took
--     (advance_fair_clock; a claim without fair runs writes nothing).
-- With no worker ids it only runs step 1: a worker without a free slot
-- sweeps deadlines that way. The result is in claim order. Workers that
-- admit runs of limited workflows, or cap some workflows, claim with
-- claim_candidates_locked and claim_chosen instead.
WITH {{expire_past_deadline($1, $7)}},
{{claim_candidates($1, cardinality($2::text[]), $4, $5, $6, $7, NULL::text[])}},
slot AS (
  SELECT candidate."namespace_id", candidate."id",
         row_number() OVER (ORDER BY candidate."rank", candidate."priority" DESC, candidate."pass",
                                     candidate."available_at", candidate."created_at", candidate."id") AS n
  FROM candidate
),
claimed AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'running',
      "attempts" = wr."attempts" + 1,
      "worker_id" = ($2::text[])[slot."n"],
      "available_at" = {{now($7)}} + $3::bigint * INTERVAL '1 millisecond',
      "started_at" = COALESCE(wr."started_at", {{now($7)}}),
      "updated_at" = {{now($7)}}
  FROM slot
  WHERE wr."namespace_id" = slot."namespace_id" AND wr."id" = slot."id" AND slot."n" <= cardinality($2::text[])
  RETURNING wr.*, slot."n" AS claim_order
),
{{advance_fair_clock($1, claimed)}}
SELECT {{run_columns}}
FROM claimed AS wr
CROSS JOIN LATERAL (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
ORDER BY wr.claim_order

-- fragment: expire_past_deadline(ns, at)
-- The claim's deadline sweep, a CTE: fails every non-terminal run of
-- namespace {{ns}} whose deadline passed, announced as finished.
expired AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'failed',
      "error" = {{deadline_error}},
      "worker_id" = NULL,
      "available_at" = NULL,
      "finished_at" = {{stamp({{at}})}},
      "updated_at" = {{stamp({{at}})}},
      "go_queued_at" = NULL
  WHERE wr."namespace_id" = {{ns}}
    AND wr."status" IN ('pending', 'running', 'sleeping')
    AND wr."deadline_at" IS NOT NULL
    AND wr."deadline_at" <= {{clock({{at}})}}
  RETURNING wr."id", {{notify('finished')}} AS notified
)

-- fragment: claim_candidates(ns, n, names, versions, ahead, at, exclude)
-- The claim's candidates, CTEs ending in "candidate": up to {{n}}
-- claimable runs of namespace {{ns}}, locked FOR UPDATE SKIP LOCKED, of
-- the workflows {{names}}/{{versions}} (NULL: any) and not of the names
-- {{exclude}} (NULL: none). In claim order: the due runs — pending, handed
-- back or with an expired lease, woken from a sleep, of the legacy status
-- sleeping, all alike — by priority (higher first), then by the time they
-- became claimable (available_at), created_at and id; then the parked runs
-- due within {{ahead}} ms (the lookahead, 0 for none). So a run handed
-- back after an outage, or woken, keeps its place ahead of the runs that
-- became due after it, and a run of priority 10 that slept wakes ahead of
-- the runs of priority 0.
--
-- Each part reads one index in order and stops at its limit: the due
-- runs of a priority above 0, then those of priority 0, then below 0, each
-- taking what the ones before it left of {{n}}. Runs of priority 0, nearly
-- all, are read from OpenWorkflow's claim index (namespace, status,
-- available_at, created_at), one range per status, merged by due time
-- (each range takes up to what is left of {{n}}; the merge keeps the
-- first); the others from the partial index workflow_runs_go_claim_priority_idx
-- (go migration 10: all three claimable statuses in one index order),
-- empty unless priorities are used. So a claim costs the same with 5 or
-- 500,000 runs waiting: what it sorts is at most a few times {{n}} rows,
-- never the backlog. A single query over several statuses, or ordered by a
-- CASE on the status, had to sort every due run on every claim (21 ms
-- with 5,000 pending; 47 ms with 100,000 due parked runs).
--
-- Runs under fair shares (go migration 22) wait with available_at NULL
-- and are read apart, by priority and pass (claim_fair_candidate): up to
-- {{n}} more, locked. Each candidate carries a pass: a fair run its own,
-- any other run the namespace's vtime (fair_vtime), so that runs without
-- fairness are FIFO among themselves at the current virtual time, as
-- §11.3 of the reference has it. The claims order them all by rank,
-- priority, pass, due time, created_at and id.
--
-- The merge locks up to {{n}} rows per status of priority 0 and keeps
-- {{n}} of them: the rows it leaves are locked until the claim's
-- statement ends, and a concurrent claim skips them as it skips rows
-- being claimed.
{{claim_priority_candidate(high, c."go_priority" > 0, {{n}}, {{ns}}, {{names}}, {{versions}}, {{at}}, {{exclude}})}},
{{claim_candidate(pending_normal, 'pending', 0, c."go_priority" = 0 AND c."available_at" <= {{clock({{at}})}},
  {{n}} - (SELECT count(*) FROM high), {{ns}}, {{names}}, {{versions}}, {{at}}, {{exclude}})}},
{{claim_candidate(running_normal, 'running', 0, c."go_priority" = 0 AND c."available_at" <= {{clock({{at}})}},
  {{n}} - (SELECT count(*) FROM high), {{ns}}, {{names}}, {{versions}}, {{at}}, {{exclude}})}},
{{claim_candidate(sleeping_normal, 'sleeping', 0, c."go_priority" = 0 AND c."available_at" <= {{clock({{at}})}},
  {{n}} - (SELECT count(*) FROM high), {{ns}}, {{names}}, {{versions}}, {{at}}, {{exclude}})}},
normal AS (
  SELECT * FROM (
    SELECT * FROM pending_normal
    UNION ALL SELECT * FROM running_normal
    UNION ALL SELECT * FROM sleeping_normal
  ) AS m
  ORDER BY m."available_at", m."created_at", m."id"
  LIMIT {{n}} - (SELECT count(*) FROM high)
),
{{claim_priority_candidate(low, c."go_priority" < 0,
  {{n}} - (SELECT count(*) FROM high) - (SELECT count(*) FROM normal),
  {{ns}}, {{names}}, {{versions}}, {{at}}, {{exclude}})}},
{{claim_candidate(early_candidate, 'running', 1, {{due_within_lookahead({{ahead}}, {{at}})}},
  {{n}} - (SELECT count(*) FROM high) - (SELECT count(*) FROM normal) - (SELECT count(*) FROM low),
  {{ns}}, {{names}}, {{versions}}, {{at}}, {{exclude}})}},
{{claim_fair_candidate(fair, {{n}}, {{ns}}, {{names}}, {{versions}}, {{at}}, {{exclude}})}},
candidate AS (
  SELECT u.*, COALESCE(u."fair_pass", (SELECT {{fair_vtime({{ns}})}})) AS "pass" FROM (
    SELECT * FROM high
    UNION ALL SELECT * FROM normal
    UNION ALL SELECT * FROM low
    UNION ALL SELECT * FROM early_candidate
    UNION ALL SELECT * FROM fair
  ) AS u
)

-- fragment: claim_candidate(name, status, rank, due, limit, ns, names, versions, at, exclude)
-- One of the claim's candidate CTEs: up to {{limit}} runs of one status,
-- due as {{due}} says and not past their deadline, of the workflows
-- {{names}}/{{versions}} when set and not of {{exclude}}, FIFO in
-- claim-index order, locked and skipping rows other claimers hold. Rank
-- {{rank}}: 0 due, 1 due only within the lookahead. Their priority is not
-- read: 0 for the claim's order (the early ones' priority is not
-- weighed: they are few and none is due yet).
{{name}} AS (
  SELECT c."namespace_id", c."id", c."workflow_name", {{rank}} AS "rank", 0 AS "priority",
         c."available_at", c."created_at", NULL::bigint AS "fair_pass"
  FROM {{schema}}."workflow_runs" AS c
  WHERE c."namespace_id" = {{ns}}
    AND c."status" = {{status}}
    AND {{due}}
    AND {{claim_filters({{names}}, {{versions}}, {{at}}, {{exclude}})}}
  ORDER BY c."available_at", c."created_at"
  LIMIT {{limit}}
  FOR UPDATE SKIP LOCKED
)

-- fragment: claim_priority_candidate(name, priority, limit, ns, names, versions, at, exclude)
-- claim_candidate for the due runs of a priority other than 0 (those
-- {{priority}} selects) of every claimable status, by priority and then
-- due time, from the partial index workflow_runs_go_claim_priority_idx
-- (its predicate is repeated so that the planner may use it). Its runs
-- not yet due (leased, parked) are skipped inside the index scan: an
-- index condition, no heap read.
{{name}} AS (
  SELECT c."namespace_id", c."id", c."workflow_name", 0 AS "rank", c."go_priority" AS "priority",
         c."available_at", c."created_at", NULL::bigint AS "fair_pass"
  FROM {{schema}}."workflow_runs" AS c
  WHERE c."namespace_id" = {{ns}}
    AND c."status" IN ('pending', 'running', 'sleeping') AND c."go_priority" <> 0 AND {{priority}}
    AND c."available_at" <= {{clock({{at}})}}
    AND {{claim_filters({{names}}, {{versions}}, {{at}}, {{exclude}})}}
  ORDER BY c."go_priority" DESC, c."available_at", c."created_at", c."id"
  LIMIT {{limit}}
  FOR UPDATE SKIP LOCKED
)

-- fragment: claim_fair_candidate(name, limit, ns, names, versions, at, exclude)
-- claim_candidate for the runs waiting under fair shares (go migration
-- 22): due (go_fair_due_at), by priority, then pass, created_at and id,
-- from the partial index workflow_runs_go_fair_idx (its predicate is
-- repeated so that the planner may use it; empty unless fairness is
-- used, so a claim without fair runs pays one probe of an empty range).
-- Runs not yet due are skipped inside the index scan.
{{name}} AS (
  SELECT c."namespace_id", c."id", c."workflow_name", 0 AS "rank", c."go_priority" AS "priority",
         c."go_fair_due_at" AS "available_at", c."created_at", c."go_fair_pass" AS "fair_pass"
  FROM {{schema}}."workflow_runs" AS c
  WHERE c."namespace_id" = {{ns}}
    AND c."status" = 'pending' AND c."go_fair_due_at" IS NOT NULL AND c."available_at" IS NULL AND c."go_paused_at" IS NULL
    AND c."go_fair_due_at" <= {{clock({{at}})}}
    AND {{claim_filters({{names}}, {{versions}}, {{at}}, {{exclude}})}}
  ORDER BY c."go_priority" DESC, c."go_fair_pass", c."created_at", c."id"
  LIMIT {{limit}}
  FOR UPDATE SKIP LOCKED
)

-- fragment: fair_vtime(ns)
-- The virtual time of namespace {{ns}}'s fair shares: the highest pass a
-- claim took (0 before any).
COALESCE((SELECT v."vtime" FROM {{schema}}."workflow_fair_clock" AS v WHERE v."namespace_id" = {{ns}}), 0)

-- fragment: advance_fair_clock(ns, claimed)
-- A CTE moving namespace {{ns}}'s vtime forward to the highest pass of
-- the fair runs the claim's CTE {{claimed}} took; it writes nothing when
-- the claim took none (so claims without fair runs never lock the row).
fair_clock AS (
  INSERT INTO {{schema}}."workflow_fair_clock" AS v ("namespace_id", "vtime")
  SELECT {{ns}}, max(cl."go_fair_pass") FROM {{claimed}} AS cl
  WHERE cl."go_fair_key" IS NOT NULL AND cl."go_fair_pass" IS NOT NULL
  HAVING max(cl."go_fair_pass") IS NOT NULL
  ON CONFLICT ("namespace_id") DO UPDATE SET "vtime" = EXCLUDED."vtime"
  WHERE v."vtime" < EXCLUDED."vtime"
)

-- fragment: claim_filters(names, versions, at, exclude)
-- What every claim candidate "c" must also be: not past its deadline, of
-- the workflows {{names}}/{{versions}} (name and version) when set, not of
-- a workflow named in {{exclude}} when set.
(c."deadline_at" IS NULL OR c."deadline_at" > {{clock({{at}})}})
    AND ({{names}}::text[] IS NULL OR EXISTS (
      SELECT 1 FROM unnest({{names}}::text[], {{versions}}::text[]) AS k("name", "version")
      WHERE k."name" = c."workflow_name" AND k."version" IS NOT DISTINCT FROM c."version"))
    AND ({{exclude}} IS NULL OR c."workflow_name" <> ALL({{exclude}}))

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
-- The heartbeat: a new lease of $4 ms, leaseholder only. On a paused run
-- the lease is renewed where its due time is saved (go_paused_due_at), so
-- that a resume restores a live lease, and the statement returns true:
-- the worker then starts no further step and hands the run back.
UPDATE {{schema}}."workflow_runs" AS wr
SET "available_at" = {{due({{now($5)}} + $4::bigint * INTERVAL '1 millisecond')}},
    "go_paused_due_at" = {{paused_due({{now($5)}} + $4::bigint * INTERVAL '1 millisecond')}},
    "updated_at" = {{now($5)}}
WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = $2
  AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
RETURNING wr."go_paused_at" IS NOT NULL

-- name: release_worker_runs
-- Hands back the running runs leased to the worker ids $2 (a claim whose
-- outcome the worker does not know). Rare: it reads the namespace's
-- running runs through the claim index and filters on the worker id,
-- which no index covers.
WITH released AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "worker_id" = NULL,
      "available_at" = {{due({{now($3)}})}},
      "go_paused_due_at" = {{paused_due({{now($3)}})}},
      "updated_at" = {{now($3)}}
  WHERE wr."namespace_id" = $1 AND wr."status" = 'running' AND wr."worker_id" = ANY($2::text[])
  RETURNING {{notify('work')}} AS notified
)
SELECT count(*) FROM released
