-- Fair shares between keys (go migration 22; docs/flow-control.md, "Fair
-- shares"). Every statement's last parameter is the injected clock (see
-- fragments.sql).

-- name: set_fairness
-- Puts the just inserted pending runs $2 under fair shares, with keys $3
-- and weights $4 (normalized), in the transaction that inserted them. The
-- trigger of go migration 22 (go_fair_enqueue) gives each its pass from
-- its key's row and holds it out of OpenWorkflow's claim (available_at
-- NULL, its due time in go_fair_due_at); a run waiting for admission, or
-- held by a singleton queue, is only marked (its admission or release
-- enqueues it). A multi-row UPDATE visits its rows in an order of the
-- plan's choosing, and the trigger gives passes in that order, so the
-- backend runs it once per run, by key then id (queueSetFairness): a
-- key's runs get passes in start order, and concurrent starts take the
-- rows of their keys in one order. Only starts with fairness pay this
-- statement. Returns the runs as they now are.
WITH f AS (
  SELECT f."id", f."key", f."weight"
  FROM unnest($2::text[], $3::text[], $4::float8[]) AS f("id", "key", "weight")
  ORDER BY f."id"
),
marked AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "go_fair_key" = f."key",
      "go_fair_weight" = f."weight",
      "updated_at" = {{now($5)}}
  FROM f
  WHERE wr."namespace_id" = {{by_id_ns($1)}} AND wr."id" = f."id"
  RETURNING wr.*
)
SELECT {{run_columns}} FROM marked AS wr

-- name: list_fair_queues
-- A page of the namespace's fairness keys after key $2 (in the primary
-- key's order), $3 of them, with the namespace's vtime and, per key, its runs waiting in the
-- fair queue (the lowest pass and the oldest due time among them) and
-- its runs started and not finished: ranges of workflow_runs_go_fair_key_idx
-- per key, so a page costs what its keys' unfinished runs do.
SELECT k."fair_key", k."weight", k."last_pass", k."updated_at",
       q."queued", q."next_pass", q."oldest_due", q."running"
FROM {{schema}}."workflow_fair_keys" AS k
CROSS JOIN LATERAL (
  SELECT count(*) FILTER (WHERE r."available_at" IS NULL AND r."go_fair_due_at" IS NOT NULL AND r."status" = 'pending') AS "queued",
         min(r."go_fair_pass") FILTER (WHERE r."available_at" IS NULL AND r."go_fair_due_at" IS NOT NULL AND r."status" = 'pending') AS "next_pass",
         min(r."go_fair_due_at") FILTER (WHERE r."available_at" IS NULL AND r."go_fair_due_at" IS NOT NULL AND r."status" = 'pending') AS "oldest_due",
         count(*) FILTER (WHERE r."status" <> 'pending' OR r."worker_id" IS NOT NULL) AS "running"
  FROM {{schema}}."workflow_runs" AS r
  WHERE r."namespace_id" = $1 AND r."go_fair_key" = k."fair_key" AND r."status" IN ('pending', 'running', 'sleeping')
) AS q
WHERE k."namespace_id" = $1 AND k."fair_key" > $2::text
ORDER BY k."fair_key"
LIMIT $3

-- name: read_fair_vtime
-- The namespace's virtual time (0 before any claim took a fair run).
SELECT {{fair_vtime($1)}}
