package postgres

import (
	"strconv"
	"strings"
)

// The SQL of the backend, one constant per statement, named after what it
// does. Placeholders expanded once per Backend by expandQuery:
//
//	{{schema}}          the quoted schema name, "openworkflow"
//	{{schema_literal}}  the schema name as a string literal, 'openworkflow'
//	{{run_columns}}     the workflow_runs columns, read as "wr"
//	{{step_columns}}    the step_attempts columns, read as "sa"
//	{{now}}             the statement's clock truncated to milliseconds
//	{{notify_work}}     pg_notify announcing that run "wr" is claimable
//	{{notify_finished}} pg_notify announcing that run "wr" is terminal
//	{{owned_run}}       the owned_run CTE, the fence of a step write (ownedRun)
//	{{owned_runs}}      the same for the multi-row step writes (ownedRuns)
//
// Conventions: every timestamp written is {{now}} or a parameter truncated
// to milliseconds in Go, so cursors and ISO strings round-trip. Writes that
// notify do so from a RETURNING clause of a data-modifying statement, which
// PostgreSQL always runs to completion, so the notification is sent exactly
// when the row changed, and delivered at commit.
//
// Statements that find runs by id are written so that the only plan is a
// primary-key probe per id, whatever the statistics say. A fresh database
// has none until autovacuum's first ANALYZE, and the planner then guesses
// that "namespace_id" = $1 or "status" = 'running' matches a row or two;
// it walked an index over the namespace's every run, or every running
// run, once per id (10–45 ms statements with 1,000 runs parked in W4).
// So: the status of a run found by id is tested as (wr."status" …) IS
// TRUE, which cannot be an index condition; a multi-row lookup joins on
// "namespace_id" and "id" both taken from its input (a MATERIALIZED CTE, or
// the claim's candidates), so no condition on the namespace alone exists;
// and the step writes' fence probes in a LATERAL subquery ({{owned_runs}}).

// notifyChannel is the one LISTEN/NOTIFY channel of every backend; the
// payload says which schema, namespace and run it is about.
const notifyChannel = "openworkflow"

const runColumns = `wr."namespace_id", wr."id", wr."workflow_name", wr."version", wr."status",
  wr."idempotency_key", wr."config", wr."context", wr."input", wr."output", wr."error",
  wr."attempts", wr."parent_step_attempt_namespace_id", wr."parent_step_attempt_id",
  wr."worker_id", wr."available_at", wr."deadline_at", wr."started_at", wr."finished_at",
  wr."created_at", wr."updated_at"`

const stepColumns = `sa."namespace_id", sa."id", sa."workflow_run_id", sa."step_name", sa."kind",
  sa."status", sa."config", sa."context", sa."output", sa."error",
  sa."child_workflow_run_namespace_id", sa."child_workflow_run_id", sa."started_at",
  sa."finished_at", sa."created_at", sa."updated_at"`

// ownedRun is the fence every step write of one run starts with
// ({{owned_run}}): a row only while run $2 of namespace $1 is running and
// owned by worker $3, locked FOR NO KEY UPDATE so that a claim moving the
// lease serializes with the write.
const ownedRun = `owned_run AS (
  SELECT 1
  FROM {{schema}}."workflow_runs" AS wr
  WHERE wr."namespace_id" = $1 AND wr."id" = $2
    AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
  FOR NO KEY UPDATE
)`

// ownedRuns is ownedRun for a multi-row step write ({{owned_runs}}): the
// runs of the "input" rows ("run_id", "worker_id") that are running and
// owned by the row's worker id, locked FOR NO KEY UPDATE. Each run is
// looked up by primary key in a LATERAL subquery, which PostgreSQL cannot
// flatten (it locks rows), so the cost is one index probe per input row
// whatever the statistics say; as a join, with a fresh table's default
// estimates, the planner scanned every running run once per input row.
const ownedRuns = `owned_run AS (
  SELECT r."id", r."worker_id"
  FROM (SELECT DISTINCT i."run_id", i."worker_id" FROM input AS i) AS i
  CROSS JOIN LATERAL (
    SELECT wr."id", wr."worker_id"
    FROM {{schema}}."workflow_runs" AS wr
    WHERE wr."namespace_id" = $1 AND wr."id" = i."run_id"
      AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = i."worker_id"
    FOR NO KEY UPDATE
  ) AS r
)`

// expandQuery replaces the placeholders of a query for one schema.
func expandQuery(q, schema string) string {
	notify := func(kind string) string {
		return `pg_notify('` + notifyChannel + `', json_build_object(` +
			`'schema', '` + schema + `', 'ns', wr."namespace_id", 'kind', '` + kind + `', 'id', wr."id")::text)`
	}
	q = strings.ReplaceAll(q, "{{owned_runs}}", ownedRuns) // they hold {{schema}}
	q = strings.ReplaceAll(q, "{{owned_run}}", ownedRun)
	return strings.NewReplacer(
		"{{schema}}", quoteIdent(schema),
		"{{schema_literal}}", "'"+schema+"'",
		"{{run_columns}}", runColumns,
		"{{step_columns}}", stepColumns,
		"{{now}}", "date_trunc('milliseconds', NOW())",
		"{{notify_work}}", notify("work"),
		"{{notify_finished}}", notify("finished"),
	).Replace(q)
}

// --- migrations (schema-independent or expanded by Migrate itself) ---

// sqlMigrationLock serializes migrations of one schema across processes; it
// is a session lock, held on the migrating connection until released.
const sqlMigrationLock = `SELECT pg_advisory_lock(hashtextextended($1, 0))`

const sqlMigrationUnlock = `SELECT pg_advisory_unlock(hashtextextended($1, 0))`

const sqlMigrationsTableExists = `
SELECT EXISTS (
  SELECT 1 FROM information_schema.tables
  WHERE table_schema = $1 AND table_name = $2
)`

const sqlCurrentMigrationVersion = `SELECT MAX("version") FROM {{schema}}.{{table}}`

// --- workflow runs ---

// sqlLockIdempotencyKey serializes keyed creates of one
// (namespace, workflow name, key) for the rest of the transaction. $1 is the
// JSON text {"namespaceId","workflowName","idempotencyKey"} as OpenWorkflow
// builds it, so both SDKs take the same lock.
const sqlLockIdempotencyKey = `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`

// sqlGetRunByIdempotencyKey finds the oldest run with the key created within
// the idempotency period ($4, in milliseconds), whatever its status.
const sqlGetRunByIdempotencyKey = `
SELECT {{run_columns}}
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1
  AND wr."workflow_name" = $2
  AND wr."idempotency_key" = $3
  AND wr."created_at" >= NOW() - $4::bigint * INTERVAL '1 millisecond'
ORDER BY wr."created_at" ASC, wr."id" ASC
LIMIT 1`

// sqlInsertRun inserts a pending run; available_at NULL means now. A run
// claimable at once is announced.
const sqlInsertRun = `
WITH inserted AS (
  INSERT INTO {{schema}}."workflow_runs" AS wr (
    "namespace_id", "id", "workflow_name", "version", "status", "idempotency_key",
    "config", "context", "input", "attempts",
    "parent_step_attempt_namespace_id", "parent_step_attempt_id",
    "available_at", "deadline_at", "created_at", "updated_at"
  )
  VALUES (
    $1, $2, $3, $4, 'pending', $5,
    $6, $7, $8, 0,
    $9, $10,
    COALESCE($11::timestamptz, {{now}}), $12, {{now}}, {{now}}
  )
  RETURNING wr.*, CASE WHEN wr."available_at" <= NOW() THEN {{notify_work}} END AS notified
)
SELECT {{run_columns}} FROM inserted AS wr`

const sqlGetRun = `
SELECT {{run_columns}}
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1 AND wr."id" = $2`

// sqlListRuns is completed by listRunsQuery with filters, the cursor
// condition, the order and the limit.
const sqlListRuns = `
SELECT {{run_columns}}
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1`

const sqlCountRuns = `
SELECT wr."status", COUNT(*)
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1
GROUP BY wr."status"`

// sqlClaimRuns is the claim, one statement:
//  1. expired: fail every non-terminal run whose deadline passed (announced
//     as finished; a parked parent is not woken, as upstream);
//  2. candidate: lock up to cardinality($2) claimable runs, pending first,
//     skipping rows other claimers hold. Pending runs, due running ones
//     (parked, or with an expired lease), then due runs of the legacy
//     status sleeping are picked by one query per status, each reading the
//     claim index in order (namespace, status, available_at, created_at),
//     so a claim costs the same with 5 or 500,000 runs waiting; a single
//     query ordered by a CASE on the status had to sort every due run on
//     every claim (21 ms with 5,000 pending), as did one over
//     status IN ('running', 'sleeping') (47 ms with 100,000 due parked
//     runs, against 0.09 ms for status = 'running');
//     then parked running runs due within $6 milliseconds (the lookahead,
//     0 for none), after every due run;
//  3. pair the i-th candidate with the i-th worker id ($2) and claim it with
//     a lease of $3 milliseconds;
//  4. when it claimed a run, make its own commit asynchronous (no wait for
//     the WAL flush; set in the statement, so that an idle worker's claim
//     is one statement): losing a claim in a database crash only hands the
//     runs back, and the worker's first durable write flushes it anyway,
//     since WAL is written in order. That takes a flush off every run's
//     start-to-result path.
//
// The result is in claim order.
var sqlClaimRuns = `
WITH expired AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'failed',
      "error" = '{"message":"Workflow run deadline exceeded"}'::jsonb,
      "worker_id" = NULL,
      "available_at" = NULL,
      "finished_at" = {{now}},
      "updated_at" = {{now}}
  WHERE wr."namespace_id" = $1
    AND wr."status" IN ('pending', 'running', 'sleeping')
    AND wr."deadline_at" IS NOT NULL
    AND wr."deadline_at" <= NOW()
  RETURNING wr."id", {{notify_finished}} AS notified
),
` + claimCandidate("pending_candidate", "pending", 0, duePending) + `,
` + claimCandidate("running_candidate", "running", 1, duePending, "pending_candidate") + `,
` + claimCandidate("sleeping_candidate", "sleeping", 2, duePending, "pending_candidate", "running_candidate") + `,
` + claimCandidate("early_candidate", "running", 3, dueWithinLookahead, "pending_candidate", "running_candidate", "sleeping_candidate") + `,
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
      "available_at" = {{now}} + $3::bigint * INTERVAL '1 millisecond',
      "started_at" = COALESCE(wr."started_at", {{now}}),
      "updated_at" = {{now}}
  FROM slot JOIN worker ON worker."n" = slot."n"
  WHERE wr."namespace_id" = slot."namespace_id" AND wr."id" = slot."id"
  RETURNING wr.*, slot."n" AS claim_order
)
SELECT {{run_columns}}
FROM claimed AS wr
CROSS JOIN LATERAL (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
ORDER BY wr.claim_order`

// The claim candidates' conditions on available_at: due now, or (parked
// runs only: no worker, so never a lease about to expire) due within the
// claim's lookahead of $6 milliseconds but not yet.
const (
	duePending         = `c."available_at" <= NOW()`
	dueWithinLookahead = `c."available_at" > NOW()
    AND c."available_at" <= NOW() + $6::bigint * INTERVAL '1 millisecond'
    AND c."worker_id" IS NULL`
)

// claimCandidate is the claim's CTE name: up to cardinality($2) runs of
// one status, due as the condition due says and not past their deadline
// (of the workflows $4/$5 when set), in claim-index order, locked and
// skipping rows other claimers hold, less the candidates of the CTEs
// before it.
func claimCandidate(name, status string, rank int, due string, before ...string) string {
	limit := `cardinality($2::text[])`
	for _, b := range before {
		limit += ` - (SELECT count(*) FROM ` + b + `)`
	}
	return name + ` AS (
  SELECT c."namespace_id", c."id", ` + strconv.Itoa(rank) + ` AS "rank", c."available_at", c."created_at"
  FROM {{schema}}."workflow_runs" AS c
  WHERE c."namespace_id" = $1
    AND c."status" = '` + status + `'
    AND ` + due + `
    AND (c."deadline_at" IS NULL OR c."deadline_at" > NOW())
    AND ($4::text[] IS NULL OR EXISTS (
      SELECT 1 FROM unnest($4::text[], $5::text[]) AS k("name", "version")
      WHERE k."name" = c."workflow_name" AND k."version" IS NOT DISTINCT FROM c."version"))
  ORDER BY c."available_at", c."created_at"
  LIMIT ` + limit + `
  FOR UPDATE SKIP LOCKED
)`
}

// sqlNotify sends one notification on the backend's channel ($1: payload).
const sqlNotify = `SELECT pg_notify('` + notifyChannel + `', $1)`

// sqlAsyncCommit makes the current (implicit) transaction commit without
// waiting for its WAL flush; queued before writes whose loss in a crash is
// harmless (notifications, which are hints).
const sqlAsyncCommit = `SELECT set_config('synchronous_commit', 'off', true)`

// sqlNextDue is when the namespace's next run becomes claimable (a delayed
// start, a parked run's wake-up, a lease's expiry), and the database's
// clock: one index-ordered LIMIT 1 per status, so it stays cheap however
// many runs wait.
const sqlNextDue = `
SELECT min(t."available_at"), NOW() FROM (
  (SELECT "available_at" FROM {{schema}}."workflow_runs"
   WHERE "namespace_id" = $1 AND "status" = 'pending' AND "available_at" > NOW()
   ORDER BY "available_at" LIMIT 1)
  UNION ALL
  (SELECT "available_at" FROM {{schema}}."workflow_runs"
   WHERE "namespace_id" = $1 AND "status" = 'running' AND "available_at" > NOW()
   ORDER BY "available_at" LIMIT 1)
  UNION ALL
  (SELECT "available_at" FROM {{schema}}."workflow_runs"
   WHERE "namespace_id" = $1 AND "status" = 'sleeping' AND "available_at" > NOW()
   ORDER BY "available_at" LIMIT 1)
) AS t`

// sqlExtendLease is the heartbeat: a new lease of $4 ms, owner only.
const sqlExtendLease = `
UPDATE {{schema}}."workflow_runs" AS wr
SET "available_at" = {{now}} + $4::bigint * INTERVAL '1 millisecond',
    "updated_at" = {{now}}
WHERE wr."namespace_id" = $1 AND wr."id" = $2
  AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3`

// sqlSleepRun parks an owned non-terminal run until $4 and announces it if
// that is already due.
const sqlSleepRun = `
WITH parked AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'running',
      "available_at" = $4,
      "worker_id" = NULL,
      "updated_at" = {{now}}
  WHERE wr."namespace_id" = $1 AND wr."id" = $2
    AND wr."status" NOT IN ('completed', 'succeeded', 'failed', 'canceled')
    AND wr."worker_id" = $3
  RETURNING wr."id", CASE WHEN wr."available_at" <= NOW() THEN {{notify_work}} END AS notified
)
SELECT count(*) FROM parked`

// sqlReconcileParkedRuns makes just-parked runs ($2, an array) due now if
// what they wait for already happened: a running workflow step whose child
// is terminal, or a running signal-wait step with a delivery. It runs as
// its own statement after the park committed, so either it sees the
// child's or signal's write, or that writer's wake-up saw the park.
const sqlReconcileParkedRuns = `
UPDATE {{schema}}."workflow_runs" AS wr
SET "available_at" = CASE
      WHEN wr."available_at" IS NULL OR wr."available_at" > NOW() THEN {{now}}
      ELSE wr."available_at"
    END,
    "updated_at" = {{now}}
WHERE wr."namespace_id" = $1 AND wr."id" = ANY($2::text[])
  AND (wr."status" IN ('running', 'sleeping')) IS TRUE
  AND wr."worker_id" IS NULL
  AND (
    EXISTS (
      SELECT 1
      FROM {{schema}}."step_attempts" AS sa
      JOIN {{schema}}."workflow_runs" AS child
        ON child."namespace_id" = sa."child_workflow_run_namespace_id"
       AND child."id" = sa."child_workflow_run_id"
      WHERE sa."namespace_id" = wr."namespace_id"
        AND sa."workflow_run_id" = wr."id"
        AND sa."kind" = 'workflow'
        AND sa."status" = 'running'
        AND child."status" IN ('completed', 'succeeded', 'failed', 'canceled')
    )
    OR EXISTS (
      SELECT 1
      FROM {{schema}}."step_attempts" AS sa
      JOIN {{schema}}."workflow_signals" AS ws
        ON ws."namespace_id" = sa."namespace_id"
       AND ws."step_attempt_id" = sa."id"
      WHERE sa."namespace_id" = wr."namespace_id"
        AND sa."workflow_run_id" = wr."id"
        AND sa."kind" = 'signal-wait'
        AND sa."status" = 'running'
    )
  )
RETURNING {{notify_work}}`

// sqlCompleteRun completes an owned run (worker_id kept) and announces it.
const sqlCompleteRun = `
WITH completed AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'completed',
      "output" = $4,
      "error" = NULL,
      "available_at" = NULL,
      "finished_at" = {{now}},
      "updated_at" = {{now}}
  WHERE wr."namespace_id" = $1 AND wr."id" = $2
    AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
  RETURNING wr.*, {{notify_finished}} AS notified
)
SELECT {{run_columns}} FROM completed AS wr`

// sqlFailRun applies a computed failure to an owned run: terminal ($4 true:
// failed, finished now) or a retry (pending at $5). It announces a terminal
// failure, or a retry that is already due.
const sqlFailRun = `
WITH failed AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = CASE WHEN $4::boolean THEN 'failed' ELSE 'pending' END,
      "available_at" = CASE WHEN $4::boolean THEN NULL ELSE $5::timestamptz END,
      "finished_at" = CASE WHEN $4::boolean THEN {{now}} ELSE NULL END,
      "error" = $6,
      "worker_id" = NULL,
      "started_at" = NULL,
      "updated_at" = {{now}}
  WHERE wr."namespace_id" = $1 AND wr."id" = $2
    AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
  RETURNING wr.*,
    CASE WHEN $4::boolean THEN {{notify_finished}}
         WHEN wr."available_at" <= NOW() THEN {{notify_work}} END AS notified
)
SELECT {{run_columns}} FROM failed AS wr`

// sqlRescheduleRun puts an owned run back to pending at $4 after a failed
// step attempt (a step retry).
const sqlRescheduleRun = `
WITH rescheduled AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'pending',
      "available_at" = $4,
      "finished_at" = NULL,
      "error" = $5,
      "worker_id" = NULL,
      "started_at" = NULL,
      "updated_at" = {{now}}
  WHERE wr."namespace_id" = $1 AND wr."id" = $2
    AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
  RETURNING wr.*, CASE WHEN wr."available_at" <= NOW() THEN {{notify_work}} END AS notified
)
SELECT {{run_columns}} FROM rescheduled AS wr`

// sqlCancelRun cancels a non-terminal run, whoever owns it.
const sqlCancelRun = `
WITH canceled AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "status" = 'canceled',
      "worker_id" = NULL,
      "available_at" = NULL,
      "finished_at" = {{now}},
      "updated_at" = {{now}}
  WHERE wr."namespace_id" = $1 AND wr."id" = $2
    AND (wr."status" IN ('pending', 'running', 'sleeping')) IS TRUE
  RETURNING wr.*, {{notify_finished}} AS notified
)
SELECT {{run_columns}} FROM canceled AS wr`

// sqlWakeParent makes a parked parent due now when its child ($3, $4)
// finished: the parent's workflow attempt ($1, $2) must still be running and
// linked to that child, and the parent unowned (parked). It runs as its own
// statement after the child's write committed (see sqlReconcileParkedRuns).
const sqlWakeParent = `
UPDATE {{schema}}."workflow_runs" AS wr
SET "available_at" = CASE
      WHEN wr."available_at" IS NULL OR wr."available_at" > NOW() THEN {{now}}
      ELSE wr."available_at"
    END,
    "updated_at" = {{now}}
FROM {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = $1 AND sa."id" = $2
  AND sa."kind" = 'workflow' AND sa."status" = 'running'
  AND sa."child_workflow_run_namespace_id" = $3 AND sa."child_workflow_run_id" = $4
  AND wr."namespace_id" = sa."namespace_id" AND wr."id" = sa."workflow_run_id"
  AND (wr."status" = 'sleeping' OR (wr."status" = 'running' AND wr."worker_id" IS NULL)) IS TRUE
RETURNING {{notify_work}}`

// sqlRunOwnership reads what a refused fenced write needs to explain itself.
const sqlRunOwnership = `
SELECT wr."status", wr."worker_id"
FROM {{schema}}."workflow_runs" AS wr
WHERE wr."namespace_id" = $1 AND wr."id" = $2`

// --- step attempts ---
//
// Every step write first locks the owned run row FOR NO KEY UPDATE in the
// same statement (owned_run), so a claim that moves the lease serializes
// with it: either the write lands before the lease moves or it is refused.

// sqlCreateStep inserts a running attempt of an owned run.
const sqlCreateStep = `
WITH {{owned_run}}
INSERT INTO {{schema}}."step_attempts" AS sa (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status",
  "config", "context", "started_at", "created_at", "updated_at"
)
SELECT $1, $4, $2, $5, $6, 'running', $7, $8, {{now}}, {{now}}, {{now}}
FROM owned_run
RETURNING {{step_columns}}`

const sqlGetStep = `
SELECT {{step_columns}}
FROM {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = $1 AND sa."id" = $2`

// sqlListSteps is completed by listStepsQuery like sqlListRuns.
const sqlListSteps = `
SELECT {{step_columns}}
FROM {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = $2`

// sqlListStepHistories reads the attempts of every run of $2, grouped by
// run and oldest first within one, through the (namespace_id,
// workflow_run_id, created_at) index.
const sqlListStepHistories = `
SELECT {{step_columns}}
FROM {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = ANY($2::text[])
ORDER BY sa."workflow_run_id", sa."created_at", sa."id"`

// sqlCompleteStep completes a running attempt of an owned run; completing
// an already completed attempt keeps its first output and timestamps.
const sqlCompleteStep = `
WITH {{owned_run}}
UPDATE {{schema}}."step_attempts" AS sa
SET "status" = 'completed',
    "output" = CASE WHEN sa."status" = 'running' THEN $5 ELSE sa."output" END,
    "error" = NULL,
    "finished_at" = COALESCE(sa."finished_at", {{now}}),
    "updated_at" = CASE WHEN sa."status" = 'running' THEN {{now}} ELSE sa."updated_at" END
FROM owned_run
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = $2 AND sa."id" = $4
  AND sa."status" IN ('running', 'completed', 'succeeded')
RETURNING {{step_columns}}`

// sqlFailStep fails a running attempt of an owned run; failing an already
// failed attempt keeps its first error.
const sqlFailStep = `
WITH {{owned_run}}
UPDATE {{schema}}."step_attempts" AS sa
SET "status" = 'failed',
    "output" = NULL,
    "error" = CASE WHEN sa."status" = 'running' THEN $5 ELSE sa."error" END,
    "finished_at" = COALESCE(sa."finished_at", {{now}}),
    "updated_at" = CASE WHEN sa."status" = 'running' THEN {{now}} ELSE sa."updated_at" END
FROM owned_run
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = $2 AND sa."id" = $4
  AND sa."status" IN ('running', 'failed')
RETURNING {{step_columns}}`

// sqlSetStepChild links a running workflow-kind attempt to its child run.
const sqlSetStepChild = `
WITH {{owned_run}}
UPDATE {{schema}}."step_attempts" AS sa
SET "child_workflow_run_namespace_id" = $5,
    "child_workflow_run_id" = $6,
    "updated_at" = {{now}}
FROM owned_run
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = $2 AND sa."id" = $4
  AND sa."status" = 'running'
RETURNING {{step_columns}}`

// sqlStepStatus reads an attempt's status to explain a refused write.
const sqlStepStatus = `
SELECT sa."status"
FROM {{schema}}."step_attempts" AS sa
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = $2 AND sa."id" = $3`

// --- signals ---

// sqlLockSignalKey serializes keyed sends of one (namespace, signal, key)
// so a concurrent repeat sees the first send's deliveries.
const sqlLockSignalKey = `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`

// sqlSignalDeliveriesByKey returns the runs a keyed send already reached.
const sqlSignalDeliveriesByKey = `
SELECT DISTINCT ws."workflow_run_id"
FROM {{schema}}."workflow_signals" AS ws
WHERE ws."namespace_id" = $1 AND ws."signal" = $2 AND ws."sender_idempotency_key" = $3`

// sqlLockSignalWaiters locks every running signal-wait attempt on signal $2
// of a non-terminal run, and those runs, in a fixed order so concurrent
// senders do not deadlock. Locking the run serializes with a park, so the
// wake-up below or the park's reconciliation sees the delivery.
const sqlLockSignalWaiters = `
SELECT sa."id", sa."workflow_run_id"
FROM {{schema}}."step_attempts" AS sa
JOIN {{schema}}."workflow_runs" AS wr
  ON wr."namespace_id" = sa."namespace_id" AND wr."id" = sa."workflow_run_id"
WHERE sa."namespace_id" = $1
  AND sa."kind" = 'signal-wait'
  AND sa."status" = 'running'
  AND sa."context"->>'signal' = $2
  AND wr."status" IN ('pending', 'running', 'sleeping')
ORDER BY sa."workflow_run_id", sa."id"
FOR UPDATE OF wr, sa`

// sqlDeliverSignal inserts one delivery per wait ($4 ids, $5 runs, $6
// attempts; at most one per attempt), wakes the unowned runs delivered to,
// announcing them, and returns the runs delivered to.
const sqlDeliverSignal = `
WITH delivered AS (
  INSERT INTO {{schema}}."workflow_signals" AS ws (
    "namespace_id", "id", "signal", "data", "sender_idempotency_key",
    "workflow_run_id", "step_attempt_id", "created_at"
  )
  SELECT $1, d."id", $2, $3, $7, d."workflow_run_id", d."step_attempt_id", {{now}}
  FROM unnest($4::text[], $5::text[], $6::text[]) AS d("id", "workflow_run_id", "step_attempt_id")
  ON CONFLICT ("namespace_id", "step_attempt_id") DO NOTHING
  RETURNING ws."workflow_run_id"
),
woken AS (
  UPDATE {{schema}}."workflow_runs" AS wr
  SET "available_at" = CASE
        WHEN wr."available_at" IS NULL OR wr."available_at" > NOW() THEN {{now}}
        ELSE wr."available_at"
      END,
      "updated_at" = {{now}}
  WHERE wr."namespace_id" = $1
    AND wr."id" IN (SELECT "workflow_run_id" FROM delivered)
    AND (wr."status" IN ('pending', 'running', 'sleeping')) IS TRUE
    AND wr."worker_id" IS NULL
  RETURNING {{notify_work}} AS notified
)
SELECT DISTINCT "workflow_run_id" FROM delivered ORDER BY 1`

// sqlGetSignalDelivery reads the data delivered to a signal-wait attempt.
const sqlGetSignalDelivery = `
SELECT ws."data"
FROM {{schema}}."workflow_signals" AS ws
WHERE ws."namespace_id" = $1 AND ws."step_attempt_id" = $2
LIMIT 1`

// --- group commit (ApplyWrites, CreateWorkflowRuns) ---
//
// The batch statements are the single writes' twins with the same fences,
// but without a pg_notify per row: ApplyWrites announces a batch's runs
// after its commit, in a transaction of its own (see announce).
//
// Step inserts, run completions and parks come in two forms, one row and
// many (unnest of one array per column), and a batch sends the one-row
// form for a write it does not combine. Sending the multi-row form with
// one-element arrays instead cost 1.2–1.3 ms per batch of one run's step
// and completion, against 0.75–0.77 ms
// (BenchmarkApplyWrites/one-pass, same hour): PostgreSQL's plan cache
// keeps planning a one-row use of the unnest statements afresh on every
// execution (the generic plan's guess of 100 array elements looks
// costlier than the custom one), and planning those CTEs is most of the
// difference. A lone pass on an idle worker (W2) pays it on every run.

// sqlBatchInsertStep inserts an attempt as the caller wrote it (status,
// output, error, child link) on an owned run, locking the run row like
// sqlCreateStep. started_at defaults to now; finished_at to now for a
// terminal status.
const sqlBatchInsertStep = `
WITH {{owned_run}}
INSERT INTO {{schema}}."step_attempts" AS sa (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status",
  "config", "context", "output", "error",
  "child_workflow_run_namespace_id", "child_workflow_run_id",
  "started_at", "finished_at", "created_at", "updated_at"
)
SELECT $1, $4, $2, $5, $6, $7::text,
  $8, $9, $10, $11,
  $12, $13,
  COALESCE($14::timestamptz, {{now}}),
  CASE WHEN $7::text IN ('completed', 'failed') THEN COALESCE($15::timestamptz, {{now}}) ELSE $15::timestamptz END,
  {{now}}, {{now}}
FROM owned_run
RETURNING sa."id"`

// sqlBatchInsertSteps is sqlBatchInsertStep for many attempts in one
// statement ($2…$15: one array per column, one element per attempt), so a
// group commit of many runs' fast steps costs one statement, not one per
// step. Each attempt lands only if its run is running and owned by its
// worker id, whose row is locked FOR NO KEY UPDATE as in the single form;
// the ids of the attempts that landed are returned.
const sqlBatchInsertSteps = `
WITH input AS (
  SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                       $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[],
                       $14::timestamptz[], $15::timestamptz[])
    AS i("run_id", "worker_id", "id", "step_name", "kind", "status", "config", "context", "output", "error",
         "child_ns", "child_id", "started_at", "finished_at")
),
{{owned_runs}}
INSERT INTO {{schema}}."step_attempts" AS sa (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status",
  "config", "context", "output", "error",
  "child_workflow_run_namespace_id", "child_workflow_run_id",
  "started_at", "finished_at", "created_at", "updated_at"
)
SELECT $1, i."id", i."run_id", i."step_name", i."kind", i."status",
  i."config"::jsonb, i."context"::jsonb, i."output"::jsonb, i."error"::jsonb,
  i."child_ns", i."child_id",
  COALESCE(i."started_at", {{now}}),
  CASE WHEN i."status" IN ('completed', 'failed') THEN COALESCE(i."finished_at", {{now}}) ELSE i."finished_at" END,
  {{now}}, {{now}}
FROM input AS i
JOIN owned_run AS o ON o."id" = i."run_id" AND o."worker_id" = i."worker_id"
RETURNING sa."id"`

// sqlBatchCompleteSteps is sqlCompleteStep for many attempts in one
// statement ($2 run ids, $3 worker ids, $4 attempt ids, $5 outputs as JSON
// text): each attempt completes only if its run is running and owned by
// its worker id, whose row is locked FOR NO KEY UPDATE as in the single
// form; the ids of the attempts completed are returned.
const sqlBatchCompleteSteps = `
WITH input AS (
  SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[])
    AS i("run_id", "worker_id", "id", "output")
),
{{owned_runs}}
UPDATE {{schema}}."step_attempts" AS sa
SET "status" = 'completed',
    "output" = CASE WHEN sa."status" = 'running' THEN i."output"::jsonb ELSE sa."output" END,
    "error" = NULL,
    "finished_at" = COALESCE(sa."finished_at", {{now}}),
    "updated_at" = CASE WHEN sa."status" = 'running' THEN {{now}} ELSE sa."updated_at" END
FROM input AS i
JOIN owned_run AS o ON o."id" = i."run_id" AND o."worker_id" = i."worker_id"
WHERE sa."namespace_id" = $1 AND sa."workflow_run_id" = i."run_id" AND sa."id" = i."id"
  AND sa."status" IN ('running', 'completed', 'succeeded')
RETURNING sa."id"`

// sqlBatchCompleteRun is sqlCompleteRun returning the parent link only.
const sqlBatchCompleteRun = `
UPDATE {{schema}}."workflow_runs" AS wr
SET "status" = 'completed',
    "output" = $4,
    "error" = NULL,
    "available_at" = NULL,
    "finished_at" = {{now}},
    "updated_at" = {{now}}
WHERE wr."namespace_id" = $1 AND wr."id" = $2
  AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
RETURNING wr."parent_step_attempt_namespace_id", wr."parent_step_attempt_id"`

// sqlBatchFailRun is the terminal branch of sqlFailRun returning the
// parent link only.
const sqlBatchFailRun = `
UPDATE {{schema}}."workflow_runs" AS wr
SET "status" = 'failed',
    "available_at" = NULL,
    "finished_at" = {{now}},
    "error" = $4,
    "worker_id" = NULL,
    "started_at" = NULL,
    "updated_at" = {{now}}
WHERE wr."namespace_id" = $1 AND wr."id" = $2
  AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
RETURNING wr."parent_step_attempt_namespace_id", wr."parent_step_attempt_id"`

// sqlBatchParkRun is sqlSleepRun without its notification.
const sqlBatchParkRun = `
UPDATE {{schema}}."workflow_runs" AS wr
SET "status" = 'running',
    "available_at" = $4,
    "worker_id" = NULL,
    "updated_at" = {{now}}
WHERE wr."namespace_id" = $1 AND wr."id" = $2
  AND wr."status" NOT IN ('completed', 'succeeded', 'failed', 'canceled')
  AND wr."worker_id" = $3
RETURNING wr."id"`

// sqlBatchCompleteRuns is sqlBatchCompleteRun for many runs in one
// statement ($2 run ids, $3 their worker ids, $4 their outputs as JSON
// text), each with its own fence; it returns the id and parent link of
// each run it completed.
const sqlBatchCompleteRuns = `
WITH c AS MATERIALIZED (
  SELECT $1::text AS "namespace_id", u.*
  FROM unnest($2::text[], $3::text[], $4::text[]) AS u("id", "worker_id", "output")
)
UPDATE {{schema}}."workflow_runs" AS wr
SET "status" = 'completed',
    "output" = c."output"::jsonb,
    "error" = NULL,
    "available_at" = NULL,
    "finished_at" = {{now}},
    "updated_at" = {{now}}
FROM c
WHERE wr."namespace_id" = c."namespace_id" AND wr."id" = c."id"
  AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = c."worker_id"
RETURNING wr."id", wr."parent_step_attempt_namespace_id", wr."parent_step_attempt_id"`

// sqlBatchParkRuns is sqlBatchParkRun for many runs in one statement ($2
// run ids, $3 their worker ids, $4 their wake-up times); it returns the id
// of each run it parked.
const sqlBatchParkRuns = `
WITH p AS MATERIALIZED (
  SELECT $1::text AS "namespace_id", u.*
  FROM unnest($2::text[], $3::text[], $4::timestamptz[]) AS u("id", "worker_id", "available_at")
)
UPDATE {{schema}}."workflow_runs" AS wr
SET "status" = 'running',
    "available_at" = p."available_at",
    "worker_id" = NULL,
    "updated_at" = {{now}}
FROM p
WHERE wr."namespace_id" = p."namespace_id" AND wr."id" = p."id"
  AND wr."status" NOT IN ('completed', 'succeeded', 'failed', 'canceled')
  AND wr."worker_id" = p."worker_id"
RETURNING wr."id"`

// sqlBatchRescheduleRun is sqlRescheduleRun without its notification.
const sqlBatchRescheduleRun = `
UPDATE {{schema}}."workflow_runs" AS wr
SET "status" = 'pending',
    "available_at" = $4,
    "finished_at" = NULL,
    "error" = $5,
    "worker_id" = NULL,
    "started_at" = NULL,
    "updated_at" = {{now}}
WHERE wr."namespace_id" = $1 AND wr."id" = $2
  AND (wr."status" = 'running') IS TRUE AND wr."worker_id" = $3
RETURNING wr."id"`

// insertRunsBody inserts pending runs from parallel arrays, one element per
// run ($2…$12; JSON as text, NULL elements allowed), in one statement. It
// does not notify: CreateWorkflowRuns sends one sqlNotifyWorkIfDue for the
// batch.
const insertRunsBody = `
  INSERT INTO {{schema}}."workflow_runs" AS wr (
    "namespace_id", "id", "workflow_name", "version", "status", "idempotency_key",
    "config", "context", "input", "attempts",
    "parent_step_attempt_namespace_id", "parent_step_attempt_id",
    "available_at", "deadline_at", "created_at", "updated_at"
  )
  SELECT $1, p."id", p."workflow_name", p."version", 'pending', p."idempotency_key",
    COALESCE(p."config", '{}')::jsonb, p."context"::jsonb, p."input"::jsonb, 0,
    p."parent_ns", p."parent_id",
    COALESCE(p."available_at", {{now}}), p."deadline_at", {{now}}, {{now}}
  FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
              $9::text[], $10::text[], $11::timestamptz[], $12::timestamptz[])
       AS p("id", "workflow_name", "version", "idempotency_key", "config", "context", "input",
            "parent_ns", "parent_id", "available_at", "deadline_at")`

// sqlInsertRuns is insertRunsBody returning the runs in input order (by
// position in $2).
const sqlInsertRuns = `
WITH inserted AS (` + insertRunsBody + `
  RETURNING wr.*
)
SELECT {{run_columns}}
FROM inserted AS wr
JOIN unnest($2::text[]) WITH ORDINALITY AS o("id", "n") ON o."id" = wr."id"
ORDER BY o."n"`

// sqlInsertRunsUnread is insertRunsBody returning nothing: the batch start
// builds the runs from its inputs and the clock sqlNotifyWorkIfDue
// returns. Reading 1,000 new runs back (RETURNING, in input order) took
// about a third of the statement's time.
const sqlInsertRunsUnread = insertRunsBody

// sqlNotifyWorkIfDue sends one "work" notification (without id) when new
// runs whose earliest available_at is $2 (NULL: now) are claimable now,
// and returns {{now}} of the current transaction: the created_at and
// updated_at of every run sqlInsertRunsUnread inserted before it in the
// same implicit transaction. The batch start computes $2 from its inputs;
// asking the table instead (available_at <= NOW() AND id = ANY(the new
// ids)) filtered every due run of the namespace against the new ids when
// the planner chose the claim index: 2 s for 5,000 new runs among 100,000
// due ones.
const sqlNotifyWorkIfDue = `
SELECT {{now}} AS "clock",
  CASE WHEN COALESCE($2::timestamptz, NOW()) <= NOW() THEN pg_notify('` + notifyChannel + `', json_build_object(
    'schema', {{schema_literal}}, 'ns', $1::text, 'kind', 'work', 'id', '')::text) END AS "notified"`

// queries holds every statement expanded for one schema.
type queries struct {
	getRunByIdempotencyKey, insertRun, getRun, listRuns, countRuns string
	claimRuns, extendLease, sleepRun, reconcileParkedRuns          string
	nextDue                                                        string
	completeRun, failRun, rescheduleRun, cancelRun, wakeParent     string
	runOwnership                                                   string
	createStep, getStep, listSteps, completeStep, failStep         string
	setStepChild, stepStatus, listStepHistories                    string
	signalDeliveriesByKey, lockSignalWaiters, deliverSignal        string
	getSignalDelivery                                              string

	batchInsertStep, batchCompleteRun, batchFailRun, batchParkRun string
	batchInsertSteps, batchCompleteRuns, batchParkRuns            string
	batchCompleteSteps                                            string
	batchRescheduleRun                                            string
	insertRuns, insertRunsUnread, notifyWorkIfDue                 string
}

func newQueries(schema string) queries {
	x := func(q string) string { return expandQuery(q, schema) }
	return queries{
		getRunByIdempotencyKey: x(sqlGetRunByIdempotencyKey),
		insertRun:              x(sqlInsertRun),
		getRun:                 x(sqlGetRun),
		listRuns:               x(sqlListRuns),
		countRuns:              x(sqlCountRuns),
		claimRuns:              x(sqlClaimRuns),
		nextDue:                x(sqlNextDue),
		extendLease:            x(sqlExtendLease),
		sleepRun:               x(sqlSleepRun),
		reconcileParkedRuns:    x(sqlReconcileParkedRuns),
		completeRun:            x(sqlCompleteRun),
		failRun:                x(sqlFailRun),
		rescheduleRun:          x(sqlRescheduleRun),
		cancelRun:              x(sqlCancelRun),
		wakeParent:             x(sqlWakeParent),
		runOwnership:           x(sqlRunOwnership),
		createStep:             x(sqlCreateStep),
		getStep:                x(sqlGetStep),
		listSteps:              x(sqlListSteps),
		completeStep:           x(sqlCompleteStep),
		failStep:               x(sqlFailStep),
		setStepChild:           x(sqlSetStepChild),
		stepStatus:             x(sqlStepStatus),
		listStepHistories:      x(sqlListStepHistories),
		signalDeliveriesByKey:  x(sqlSignalDeliveriesByKey),
		lockSignalWaiters:      x(sqlLockSignalWaiters),
		deliverSignal:          x(sqlDeliverSignal),
		getSignalDelivery:      x(sqlGetSignalDelivery),

		batchInsertStep:    x(sqlBatchInsertStep),
		batchInsertSteps:   x(sqlBatchInsertSteps),
		batchCompleteRun:   x(sqlBatchCompleteRun),
		batchCompleteRuns:  x(sqlBatchCompleteRuns),
		batchCompleteSteps: x(sqlBatchCompleteSteps),
		batchParkRuns:      x(sqlBatchParkRuns),
		batchFailRun:       x(sqlBatchFailRun),
		batchParkRun:       x(sqlBatchParkRun),
		batchRescheduleRun: x(sqlBatchRescheduleRun),
		insertRuns:         x(sqlInsertRuns),
		insertRunsUnread:   x(sqlInsertRunsUnread),
		notifyWorkIfDue:    x(sqlNotifyWorkIfDue),
	}
}
