-- Limits and admission (backend.LimitStore, and the claim of a worker that
-- admits runs of limited workflows or caps some workflows: see
-- ClaimWorkflowRuns in limits.go). Every statement's last parameter is
-- the injected clock (see fragments.sql).

-- name: put_limits
-- Stores the limits of workflow $2 ($3 concurrency, $4 per key, $5 rate,
-- $6 rate period in ms; NULL for none) declared by $7 (NULL: not by a
-- worker), returning a row only when they changed (a new row, or other
-- values): the limits replaced (NULL for a new row) and when. Runs after
-- lock_admission in the same transaction. When they changed, the
-- workflow's backlog comes under them at once (backend.LimitStore):
-- its pending runs that never started wait for admission, from the time
-- they were due (queued), and its runs started and not finished, which
-- no admission counted, hold slots from their start (counted); both take
-- the key '' when they have none, as a limited run started without one.
-- A claim
-- admitting the workflow holds its admission lock while it counts, so it
-- sees all of this or none of it.
WITH up AS (
  INSERT INTO {{schema}}."workflow_limits" AS l (
    "namespace_id", "workflow_name", "concurrency", "concurrency_per_key", "rate_limit", "rate_period_ms",
    "declared_by", "created_at", "updated_at"
  )
  VALUES ($1, $2, $3, $4, $5, $6, $7, {{now($8)}}, {{now($8)}})
  ON CONFLICT ("namespace_id", "workflow_name") DO UPDATE
  SET "concurrency" = EXCLUDED."concurrency",
      "concurrency_per_key" = EXCLUDED."concurrency_per_key",
      "rate_limit" = EXCLUDED."rate_limit",
      "rate_period_ms" = EXCLUDED."rate_period_ms",
      "declared_by" = EXCLUDED."declared_by",
      "updated_at" = EXCLUDED."updated_at",
      "replaced" = json_build_object('concurrency', l."concurrency", 'concurrencyPerKey', l."concurrency_per_key",
        'rateLimit', l."rate_limit", 'ratePeriodMs', l."rate_period_ms", 'declaredBy', l."declared_by")::text,
      "replaced_at" = EXCLUDED."updated_at"
  WHERE (l."concurrency", l."concurrency_per_key", l."rate_limit", l."rate_period_ms")
    IS DISTINCT FROM (EXCLUDED."concurrency", EXCLUDED."concurrency_per_key", EXCLUDED."rate_limit", EXCLUDED."rate_period_ms")
  RETURNING (xmax = 0) AS "inserted", l."replaced", l."replaced_at"
),
queued AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "go_queued_at" = wr."available_at",
      "available_at" = NULL,
      "go_concurrency_key" = COALESCE(wr."go_concurrency_key", ''),
      "updated_at" = {{now($8)}}
  WHERE wr."namespace_id" = $1 AND wr."workflow_name" = $2 AND EXISTS (SELECT 1 FROM up)
    AND wr."status" = 'pending' AND wr."attempts" = 0 AND wr."started_at" IS NULL
    AND wr."go_queued_at" IS NULL AND wr."available_at" IS NOT NULL
  RETURNING 1
),
counted AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "go_admitted_at" = COALESCE(wr."started_at", {{now($8)}}),
      "go_concurrency_key" = COALESCE(wr."go_concurrency_key", '')
  WHERE wr."namespace_id" = $1 AND wr."workflow_name" = $2 AND EXISTS (SELECT 1 FROM up)
    AND wr."status" IN ('pending', 'running', 'sleeping') AND (wr."attempts" > 0 OR wr."started_at" IS NOT NULL)
    AND wr."go_admitted_at" IS NULL AND wr."go_queued_at" IS NULL
  RETURNING 1
)
SELECT CASE WHEN up."inserted" THEN NULL ELSE up."replaced" END, up."replaced_at",
       (SELECT count(*) FROM queued), (SELECT count(*) FROM counted)
FROM up

-- name: delete_limits
-- Removes the limits of workflow $2, forgets its admissions, and releases
-- its runs waiting for admission: each becomes an ordinary pending run,
-- available when it was queued for (announced when due). Returns whether
-- there were limits and how many runs it released.
WITH removed AS (
  DELETE FROM {{schema}}."workflow_limits" AS l
  WHERE l."namespace_id" = $1 AND l."workflow_name" = $2
  RETURNING 1
),
forgotten AS (
  DELETE FROM {{schema}}."workflow_limit_starts" AS s
  WHERE s."namespace_id" = $1 AND s."workflow_name" = $2
),
released AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "available_at" = CASE WHEN wr."status" = 'pending' THEN wr."go_queued_at" ELSE wr."available_at" END,
      "go_queued_at" = NULL,
      "updated_at" = CASE WHEN wr."status" = 'pending' THEN {{now($3)}} ELSE wr."updated_at" END
  WHERE wr."namespace_id" = $1 AND wr."workflow_name" COLLATE "C" = $2 AND wr."go_queued_at" IS NOT NULL
  RETURNING wr."status" = 'pending' AS waited,
    CASE WHEN wr."status" = 'pending' AND wr."available_at" <= {{clock($3)}} THEN {{notify('work')}} END AS notified
)
SELECT (SELECT count(*) FROM removed) > 0, (SELECT count(*) FROM released WHERE waited)::int

-- name: list_limits
SELECT l."workflow_name", l."concurrency", l."concurrency_per_key", l."rate_limit", l."rate_period_ms", l."updated_at",
       l."declared_by", l."replaced", l."replaced_at"
FROM {{schema}}."workflow_limits" AS l
WHERE l."namespace_id" = $1
ORDER BY l."workflow_name"

-- name: lock_admission
-- Takes the admission locks of the claim's limited workflows for the rest
-- of the transaction, in the order given (sorted by the caller, so two
-- claims never wait for each other crosswise): $1 the lock keys
-- (schema, namespace and workflow; see admissionLockKey). A claim that
-- admits runs of a workflow holds its lock from before it counts the
-- workflow's slots until it commits, and counts after taking it (its
-- statements read snapshots taken after the lock), so no two claims admit
-- into the same free slot.
SELECT count(pg_advisory_xact_lock(hashtextextended(k."key", 0)))
FROM unnest($1::text[]) AS k("key")

-- name: generic_plans
-- Makes claim_admitting, which follows in the same round trip and
-- transaction, run with its generic plan, made once per connection: its
-- custom plan took 1.7–7 ms to make, on every claim (PostgreSQL kept
-- choosing custom plans for it), for an execution of about 2 ms. A plan
-- made once must be right on any statistics, including none (a new table
-- before autovacuum's first ANALYZE): see the index conditions of
-- claim_admitting's window and of claim_priority_candidate.
SELECT set_config('plan_cache_mode', 'force_generic_plan', true)

-- name: claim_candidates_locked
-- The claim's deadline sweep and candidates of claim_runs, locked but not
-- claimed, for the worker to choose among ($1 namespace, $2 how many, $3/$4
-- the workflows' names and versions or NULL for any, $5 the lookahead in
-- ms, $6 the names of workflows not to take or NULL, $7 the clock), with
-- each one's pass (fair shares) and the namespace's vtime, the pass of the
-- runs waiting for admission. Up to $2 runs without fairness and $2 of
-- the fair queue: the locks last until the transaction ends; claim_chosen
-- claims the chosen.
WITH {{expire_past_deadline($1, $7)}},
{{claim_candidates($1, $2::int, $3, $4, $5, $7, $6::text[])}}
SELECT c."id", c."workflow_name", c."rank", c."priority", c."available_at", c."created_at",
       c."pass", {{fair_vtime($1)}} AS "vtime"
FROM candidate AS c

-- name: admission_queue
-- The runs of limited workflow $2 a claim may admit: up to $3 of them in
-- claim order (priority, then FIFO: go_queued_at, created_at, id), due and
-- not past their deadline, each within its key's room as the run's key
-- counts it now (per-key concurrency and rate; runs admitted earlier in
-- this claim are counted by the caller, backend.PlanClaim). They come from
-- a window: the first $4 waiting runs, read from workflow_runs_go_queue_idx
-- in order. One row always (candidate columns NULL when there is none),
-- unless the workflow has no limits: the window's size, the workflow's
-- runs admitted and not finished, its limits, then the candidate with its
-- key's admitted and not finished runs and admissions within the rate
-- period. A full window that yields fewer than $3 (its head all of keys
-- without room) sends the caller to admission_queue_by_key.
WITH lim AS (
  SELECT l.* FROM {{schema}}."workflow_limits" AS l
  WHERE l."namespace_id" = $1 AND l."workflow_name" = $2
),
win AS MATERIALIZED (
  SELECT c."id", c."go_concurrency_key" AS "key", c."go_priority" AS "priority", c."go_queued_at" AS "queued_at",
         c."created_at", c."deadline_at", c."status"
  FROM {{schema}}."workflow_runs" AS c
  WHERE c."namespace_id" = $1 AND c."workflow_name" COLLATE "C" = $2 AND c."go_queued_at" IS NOT NULL
  ORDER BY c."go_priority" DESC, c."go_queued_at", c."created_at", c."id"
  LIMIT $4
),
due AS (
  SELECT w.* FROM win AS w
  WHERE w."status" = 'pending'
    AND w."queued_at" <= {{clock($5)}} AND (w."deadline_at" IS NULL OR w."deadline_at" > {{clock($5)}})
),
{{unqueue_ended($1)}},
{{key_room($1, $2, (SELECT DISTINCT d."key" FROM due AS d), $5)}},
ranked AS (
  SELECT d.*, r."active", r."starts",
         row_number() OVER (PARTITION BY d."key" ORDER BY d."priority" DESC, d."queued_at", d."created_at", d."id") AS "rn"
  FROM due AS d JOIN room AS r ON r."key" = d."key"
)
SELECT s."scanned", s."active", lim."concurrency", lim."concurrency_per_key", lim."rate_limit",
       q."id", q."key", q."priority", q."queued_at", q."created_at", q."key_active", q."key_starts"
FROM lim
CROSS JOIN (SELECT (SELECT count(*) FROM win) AS "scanned", {{admitted_count($1, $2)}} AS "active") AS s
LEFT JOIN LATERAL (
  SELECT r."id", r."key", r."priority", r."queued_at", r."created_at", r."active" AS "key_active", r."starts" AS "key_starts"
  FROM ranked AS r
  WHERE (lim."concurrency_per_key" IS NULL OR r."active" + r."rn" <= lim."concurrency_per_key")
    AND (lim."rate_limit" IS NULL OR r."starts" + r."rn" <= lim."rate_limit")
  ORDER BY r."priority" DESC, r."queued_at", r."created_at", r."id"
  LIMIT $3
) AS q ON TRUE

-- name: admission_queue_by_key
-- admission_queue, key by key: the distinct keys of workflow $2's waiting
-- runs are read from workflow_runs_go_queue_key_idx one index probe each
-- (a loose index scan), and each key with room gives its first runs, as
-- many as it has room for. It costs a few probes per key that has waiting
-- runs, so the claim uses it only when admission_queue's window was all
-- of keys without room. Same row shape; the window's size is 0.
WITH RECURSIVE lim AS (
  SELECT l.* FROM {{schema}}."workflow_limits" AS l
  WHERE l."namespace_id" = $1 AND l."workflow_name" = $2
),
keys("key") AS (
  (SELECT c."go_concurrency_key" FROM {{schema}}."workflow_runs" AS c
   WHERE c."namespace_id" = $1 AND c."workflow_name" COLLATE "C" = $2
     AND c."go_queued_at" IS NOT NULL AND (c."status" = 'pending') IS TRUE
   ORDER BY c."go_concurrency_key" LIMIT 1)
  UNION ALL
  SELECT (SELECT c."go_concurrency_key" FROM {{schema}}."workflow_runs" AS c
          WHERE c."namespace_id" = $1 AND c."workflow_name" COLLATE "C" = $2
            AND c."go_queued_at" IS NOT NULL AND (c."status" = 'pending') IS TRUE
            AND c."go_concurrency_key" > k."key"
          ORDER BY c."go_concurrency_key" LIMIT 1)
  FROM keys AS k WHERE k."key" IS NOT NULL
),
{{key_room($1, $2, (SELECT k."key" FROM keys AS k WHERE k."key" IS NOT NULL), $4)}},
ranked AS (
  SELECT h.*, r."active", r."starts"
  FROM room AS r
  CROSS JOIN lim
  CROSS JOIN LATERAL (
    SELECT c."id", c."go_concurrency_key" AS "key", c."go_priority" AS "priority", c."go_queued_at" AS "queued_at",
           c."created_at"
    FROM {{schema}}."workflow_runs" AS c
    WHERE c."namespace_id" = $1 AND c."workflow_name" COLLATE "C" = $2 AND c."go_concurrency_key" = r."key"
      AND c."go_queued_at" IS NOT NULL AND (c."status" = 'pending') IS TRUE
      AND c."go_queued_at" <= {{clock($4)}} AND (c."deadline_at" IS NULL OR c."deadline_at" > {{clock($4)}})
    ORDER BY c."go_priority" DESC, c."go_queued_at", c."created_at", c."id"
    LIMIT GREATEST(LEAST(COALESCE(lim."concurrency_per_key" - r."active", $3), COALESCE(lim."rate_limit" - r."starts", $3), $3), 0)
  ) AS h
)
SELECT 0::bigint AS "scanned", {{admitted_count($1, $2)}} AS "active", lim."concurrency", lim."concurrency_per_key", lim."rate_limit",
       q."id", q."key", q."priority", q."queued_at", q."created_at", q."key_active", q."key_starts"
FROM lim
LEFT JOIN LATERAL (
  SELECT r."id", r."key", r."priority", r."queued_at", r."created_at", r."active" AS "key_active", r."starts" AS "key_starts"
  FROM ranked AS r
  ORDER BY r."priority" DESC, r."queued_at", r."created_at", r."id"
  LIMIT $3
) AS q ON TRUE

-- fragment: key_room(ns, name, keys, at)
-- A CTE "room": for each concurrency key of {{keys}} (a subquery), the
-- runs of workflow {{name}} with that key admitted and not finished
-- (active: a probe of workflow_runs_go_admitted_idx; 0 without a limit
-- per key, and then not read) and its admissions within the rate period
-- (starts: a range of workflow_limit_starts' primary key, the period's
-- start computed once; 0 without a rate limit, and then not read). Reads
-- "lim".
room AS (
  SELECT k."key",
         CASE WHEN (SELECT l."concurrency_per_key" FROM lim AS l) IS NULL THEN 0 ELSE
           (SELECT count(*) FROM {{schema}}."workflow_runs" AS a
            WHERE a."namespace_id" = {{ns}} AND a."workflow_name" COLLATE "C" = {{name}} AND a."go_concurrency_key" = k."key"
              AND a."go_admitted_at" IS NOT NULL AND a."status" IN ('pending', 'running', 'sleeping'))
         END AS "active",
         CASE WHEN (SELECT l."rate_limit" FROM lim AS l) IS NULL THEN 0 ELSE
           (SELECT count(*) FROM {{schema}}."workflow_limit_starts" AS s
            WHERE s."namespace_id" = {{ns}} AND s."workflow_name" = {{name}} AND s."concurrency_key" = k."key"
              AND s."started_at" > (SELECT {{clock({{at}})}} - l."rate_period_ms" * INTERVAL '1 millisecond' FROM lim AS l))
         END AS "starts"
  FROM {{keys}} AS k("key")
)

-- fragment: unqueue_ended(ns)
-- A CTE clearing go_queued_at of the runs of the window "win" that ended
-- while they waited (canceled, or failed past their deadline, by a writer
-- that did not clear it: the TypeScript SDK), so that the queue's head
-- holds only runs that wait. This SDK's own cancel and deadline sweep
-- clear it themselves.
unqueued AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "go_queued_at" = NULL
  FROM win AS w
  WHERE w."status" <> 'pending' AND wr."namespace_id" = {{by_id_ns({{ns}})}} AND wr."id" = w."id"
    AND (wr."status" <> 'pending') IS TRUE
)

-- fragment: admitted_count(ns, name)
-- The runs of workflow {{name}} admitted and not finished, all keys.
(SELECT count(*) FROM {{schema}}."workflow_runs" AS a
 WHERE a."namespace_id" = {{ns}} AND a."workflow_name" COLLATE "C" = {{name}}
   AND a."go_admitted_at" IS NOT NULL AND a."status" IN ('pending', 'running', 'sleeping'))

-- name: claim_chosen
-- Claims the runs the worker chose among the candidates ($2 their ids in
-- claim order, $3 the worker id of each, $4 whether the claim admits it,
-- $5 the lease in ms, $6 the clock), as claim_runs claims: an admitted run
-- leaves the queue (go_queued_at NULL) and records its admission
-- (go_admitted_at; and a row of workflow_limit_starts when its workflow
-- has a rate limit). An admitted run is claimed only if it still waits
-- (a cancel may have come between). The commit is asynchronous, as
-- claim_runs says why. The result is in claim order.
WITH chosen AS MATERIALIZED (
  SELECT $1::text AS "namespace_id", c."id", c."worker_id", c."admit", c."n"
  FROM unnest($2::text[], $3::text[], $4::bool[]) WITH ORDINALITY AS c("id", "worker_id", "admit", "n")
),
claimed AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'running',
      "attempts" = wr."attempts" + 1,
      "worker_id" = c."worker_id",
      "available_at" = {{now($6)}} + $5::bigint * INTERVAL '1 millisecond',
      "started_at" = COALESCE(wr."started_at", {{now($6)}}),
      "updated_at" = {{now($6)}},
      "go_queued_at" = CASE WHEN c."admit" THEN NULL ELSE wr."go_queued_at" END,
      "go_admitted_at" = CASE WHEN c."admit" THEN {{stamp($6)}} ELSE wr."go_admitted_at" END
  FROM chosen AS c
  WHERE wr."namespace_id" = c."namespace_id" AND wr."id" = c."id"
    AND (NOT c."admit" OR (wr."status" = 'pending' AND wr."go_queued_at" IS NOT NULL)) IS TRUE
  RETURNING wr.*, c."n" AS claim_order, c."admit" AS admitted
),
{{advance_fair_clock($1, claimed)}},
started AS (
  INSERT INTO {{schema}}."workflow_limit_starts" ("namespace_id", "workflow_name", "concurrency_key", "started_at", "workflow_run_id")
  SELECT cl."namespace_id", cl."workflow_name", COALESCE(cl."go_concurrency_key", ''), cl."go_admitted_at", cl."id"
  FROM claimed AS cl
  JOIN {{schema}}."workflow_limits" AS l ON l."namespace_id" = cl."namespace_id" AND l."workflow_name" = cl."workflow_name"
  WHERE cl.admitted AND l."rate_limit" IS NOT NULL
)
SELECT {{run_columns}}
FROM claimed AS wr
CROSS JOIN LATERAL (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
ORDER BY wr.claim_order

-- name: prune_limit_starts
-- Forgets the admissions of the rate-limited workflows $2 older than
-- their rate period: a range of workflow_limit_starts_started_idx per
-- workflow, holding what aged out since the previous claim.
DELETE FROM {{schema}}."workflow_limit_starts" AS s
USING {{schema}}."workflow_limits" AS l
WHERE l."namespace_id" = $1 AND l."workflow_name" = ANY($2::text[]) AND l."rate_limit" IS NOT NULL
  AND s."namespace_id" = l."namespace_id" AND s."workflow_name" = l."workflow_name"
  AND s."started_at" <= {{clock($3)}} - l."rate_period_ms" * INTERVAL '1 millisecond'

-- name: claim_admitting
-- claim_runs for a worker that admits runs of limited workflows ($8, the
-- workflows' names, sorted) or caps some workflows ($9/$10: names, and
-- the most runs of each this claim may take), in one statement after
-- lock_admission in the same implicit transaction (one round trip; the
-- statement's snapshot is taken after the lock): $1 namespace, $2 worker
-- ids, $3 lease in ms, $4/$5 the workflows' names and versions or NULL for
-- any, $6 the lookahead in ms, $7 the names of workflows not to take or
-- NULL, $11 the window of each admitted workflow's queue, $12 the clock.
-- The candidates are claim_runs' and, of each admitted workflow, the
-- admissible runs of the window at the head of its queue as
-- admission_queue picks them (each key's first runs within its room);
-- then, as backend.PlanClaim does, each workflow's global room (its
-- limit less its runs admitted and not finished) and each cap are taken
-- in claim order, and the first of the rest up to the number of worker
-- ids are claimed, the waiting ones admitted as claim_chosen admits them.
-- A claim that takes fewer runs than it has worker ids (its windows may
-- have been all of keys without room) is followed by the two-round-trip
-- claim (claim_candidates_locked, admission_queue and
-- admission_queue_by_key, claim_chosen), which looks key by key.
--
--
-- The window reads workflow_runs_go_queue_idx in order whatever the
-- statistics say, because no other index can serve its conditions: the
-- workflow name is compared COLLATE "C", as the indexes of go migration 8
-- store it (equality is the same under any deterministic collation), which
-- OpenWorkflow's (namespace, workflow, …) indexes cannot serve, and the
-- status is not compared in the index scan at all (go_queue_idx holds the
-- runs whose go_queued_at is set; those that ended meanwhile are skipped
-- and unqueued), which leaves its (namespace, status, …) indexes only the
-- namespace. Without both, on a table without statistics (a new one,
-- before autovacuum's first ANALYZE) the planner guessed one waiting run,
-- read the whole queue through one of those indexes and sorted it: 14 ms
-- per claim with 16,000 runs waiting, in the generic plan kept for the
-- connection's life (generic_plans).
WITH {{expire_past_deadline($1, $12)}},
{{claim_candidates($1, cardinality($2::text[]), $4, $5, $6, $12, $7::text[])}},
lim AS MATERIALIZED (
  SELECT l."workflow_name", l."concurrency", l."concurrency_per_key", l."rate_limit", l."rate_period_ms",
         CASE WHEN l."concurrency" IS NULL THEN 0 ELSE {{admitted_count($1, l."workflow_name")}} END AS "active"
  FROM {{schema}}."workflow_limits" AS l
  WHERE l."namespace_id" = $1 AND l."workflow_name" = ANY($8::text[])
),
win AS MATERIALIZED (
  SELECT w.* FROM lim
  CROSS JOIN LATERAL (
    SELECT c."id", c."workflow_name", c."go_concurrency_key" AS "key", c."go_priority" AS "priority",
           c."go_queued_at" AS "queued_at", c."created_at", c."deadline_at", c."status"
    FROM {{schema}}."workflow_runs" AS c
    WHERE c."namespace_id" = $1 AND c."workflow_name" COLLATE "C" = lim."workflow_name" AND c."go_queued_at" IS NOT NULL
    ORDER BY c."go_priority" DESC, c."go_queued_at", c."created_at", c."id"
    LIMIT $11
  ) AS w
),
due AS MATERIALIZED (
  SELECT w.* FROM win AS w
  WHERE w."status" = 'pending'
    AND w."queued_at" <= {{clock($12)}} AND (w."deadline_at" IS NULL OR w."deadline_at" > {{clock($12)}})
),
{{unqueue_ended($1)}},
room AS MATERIALIZED (
  SELECT k."workflow_name", k."key",
         CASE WHEN l."concurrency_per_key" IS NULL THEN 0 ELSE
           (SELECT count(*) FROM {{schema}}."workflow_runs" AS a
            WHERE a."namespace_id" = $1 AND a."workflow_name" COLLATE "C" = k."workflow_name" AND a."go_concurrency_key" = k."key"
              AND a."go_admitted_at" IS NOT NULL AND a."status" IN ('pending', 'running', 'sleeping'))
         END AS "active",
         CASE WHEN l."rate_limit" IS NULL THEN 0 ELSE
           (SELECT count(*) FROM {{schema}}."workflow_limit_starts" AS s
            WHERE s."namespace_id" = $1 AND s."workflow_name" = k."workflow_name" AND s."concurrency_key" = k."key"
              AND s."started_at" > {{clock($12)}} - l."rate_period_ms" * INTERVAL '1 millisecond')
         END AS "starts"
  FROM (SELECT DISTINCT d."workflow_name", d."key" FROM due AS d) AS k
  JOIN lim AS l ON l."workflow_name" = k."workflow_name"
),
admissible AS (
  SELECT q.* FROM (
    SELECT d.*, l."concurrency", l."active" AS "wf_active",
           row_number() OVER (PARTITION BY d."workflow_name", d."key"
                              ORDER BY d."priority" DESC, d."queued_at", d."created_at", d."id") AS "rn",
           r."active" AS "key_active", r."starts" AS "key_starts", l."concurrency_per_key", l."rate_limit"
    FROM due AS d
    JOIN room AS r ON r."workflow_name" = d."workflow_name" AND r."key" = d."key"
    JOIN lim AS l ON l."workflow_name" = d."workflow_name"
  ) AS q
  WHERE (q."concurrency_per_key" IS NULL OR q."key_active" + q."rn" <= q."concurrency_per_key")
    AND (q."rate_limit" IS NULL OR q."key_starts" + q."rn" <= q."rate_limit")
),
admitted AS (
  SELECT g.* FROM (
    SELECT a.*, row_number() OVER (PARTITION BY a."workflow_name"
                                   ORDER BY a."priority" DESC, a."queued_at", a."created_at", a."id") AS "gn"
    FROM admissible AS a
  ) AS g
  WHERE g."concurrency" IS NULL OR g."gn" <= g."concurrency" - g."wf_active"
),
merged AS (
  SELECT c."namespace_id", c."id", c."workflow_name", c."rank", c."priority", c."pass", c."available_at" AS "at", c."created_at", FALSE AS "admit"
  FROM candidate AS c
  UNION ALL
  SELECT $1::text, a."id", a."workflow_name", 0, a."priority", {{fair_vtime($1)}}, a."queued_at", a."created_at", TRUE
  FROM admitted AS a
),
slot AS (
  SELECT m."namespace_id", m."id", m."admit",
         row_number() OVER (ORDER BY m."rank", m."priority" DESC, m."pass", m."at", m."created_at", m."id") AS "n"
  FROM (
    SELECT m.*, row_number() OVER (PARTITION BY m."workflow_name"
                                   ORDER BY m."rank", m."priority" DESC, m."pass", m."at", m."created_at", m."id") AS "wn"
    FROM merged AS m
  ) AS m
  LEFT JOIN unnest($9::text[], $10::int[]) AS cap("name", "max") ON cap."name" = m."workflow_name"
  WHERE cap."max" IS NULL OR m."wn" <= cap."max"
),
claimed AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'running',
      "attempts" = wr."attempts" + 1,
      "worker_id" = ($2::text[])[slot."n"],
      "available_at" = {{now($12)}} + $3::bigint * INTERVAL '1 millisecond',
      "started_at" = COALESCE(wr."started_at", {{now($12)}}),
      "updated_at" = {{now($12)}},
      "go_queued_at" = CASE WHEN slot."admit" THEN NULL ELSE wr."go_queued_at" END,
      "go_admitted_at" = CASE WHEN slot."admit" THEN {{stamp($12)}} ELSE wr."go_admitted_at" END
  FROM slot
  WHERE wr."namespace_id" = slot."namespace_id" AND wr."id" = slot."id" AND slot."n" <= cardinality($2::text[])
    AND (NOT slot."admit" OR (wr."status" = 'pending' AND wr."go_queued_at" IS NOT NULL)) IS TRUE
  RETURNING wr.*, slot."n" AS claim_order, slot."admit" AS admitted
),
{{advance_fair_clock($1, claimed)}},
started AS (
  INSERT INTO {{schema}}."workflow_limit_starts" ("namespace_id", "workflow_name", "concurrency_key", "started_at", "workflow_run_id")
  SELECT cl."namespace_id", cl."workflow_name", COALESCE(cl."go_concurrency_key", ''), cl."go_admitted_at", cl."id"
  FROM claimed AS cl
  JOIN lim AS l ON l."workflow_name" = cl."workflow_name"
  WHERE cl.admitted AND l."rate_limit" IS NOT NULL
),
pruned AS (
  DELETE FROM {{schema}}."workflow_limit_starts" AS s
  USING lim AS l
  WHERE l."rate_limit" IS NOT NULL
    AND s."namespace_id" = $1 AND s."workflow_name" = l."workflow_name"
    AND s."started_at" <= {{clock($12)}} - l."rate_period_ms" * INTERVAL '1 millisecond'
)
SELECT {{run_columns}}
FROM claimed AS wr
CROSS JOIN LATERAL (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
ORDER BY wr.claim_order
