package sqlite

import "strconv"

// The SQL of the backend, one constant per statement, named after what it
// does. Parameters are named (:ns is always the backend's namespace, :now
// the injected clock's time in backend.TimeLayout). Timestamps are TEXT in
// that fixed-width layout, so <, <= and > compare them chronologically.

const runColumns = `"namespace_id", "id", "workflow_name", "version", "status",
  "idempotency_key", "config", "context", "input", "output", "error",
  "attempts", "parent_step_attempt_namespace_id", "parent_step_attempt_id",
  "worker_id", "available_at", "deadline_at", "started_at", "finished_at",
  "created_at", "updated_at"`

const stepColumns = `"namespace_id", "id", "workflow_run_id", "step_name",
  "kind", "status", "config", "context", "output", "error",
  "child_workflow_run_namespace_id", "child_workflow_run_id", "started_at",
  "finished_at", "created_at", "updated_at"`

// nonTerminalStatuses are the statuses a run can still leave, legacy
// "sleeping" included.
const nonTerminalStatuses = `('pending', 'running', 'sleeping')`

// runOwned matches the run :run_id while it is running and leased by
// :worker_id: the fence of every worker-side write.
const runOwned = `"namespace_id" = :ns
  AND "id" = :run_id
  AND "status" = 'running'
  AND "worker_id" = :worker_id`

// stepOwned matches the attempt :step_id of run :run_id while that run is
// running and leased by :worker_id.
const stepOwned = `"namespace_id" = :ns
  AND "workflow_run_id" = :run_id
  AND "id" = :step_id
  AND EXISTS (
    SELECT 1 FROM "workflow_runs" wr
    WHERE wr."namespace_id" = :ns
      AND wr."id" = :run_id
      AND wr."status" = 'running'
      AND wr."worker_id" = :worker_id
  )`

const qInsertRun = `
INSERT INTO "workflow_runs" (
  "namespace_id", "id", "workflow_name", "version", "status",
  "idempotency_key", "config", "context", "input", "attempts",
  "parent_step_attempt_namespace_id", "parent_step_attempt_id",
  "available_at", "deadline_at", "created_at", "updated_at"
)
VALUES (
  :ns, :id, :workflow_name, :version, 'pending',
  :idempotency_key, :config, :context, :input, 0,
  :parent_ns, :parent_id,
  :available_at, :deadline_at, :now, :now
)
RETURNING ` + runColumns

// qFindRunByIdempotencyKey returns the oldest run with the key created at
// or after :since (now − 24 h), whatever its status.
const qFindRunByIdempotencyKey = `
SELECT ` + runColumns + `
FROM "workflow_runs"
WHERE "namespace_id" = :ns
  AND "workflow_name" = :workflow_name
  AND "idempotency_key" = :idempotency_key
  AND "created_at" >= :since
ORDER BY "created_at" ASC, "id" ASC
LIMIT 1`

const qGetRun = `
SELECT ` + runColumns + `
FROM "workflow_runs"
WHERE "namespace_id" = :ns AND "id" = :run_id`

const qCountRuns = `
SELECT "status", COUNT(*)
FROM "workflow_runs"
WHERE "namespace_id" = :ns
GROUP BY "status"`

// qFailExpiredRuns is the claim's deadline sweep. It also catches runs
// leased by another worker: their next fenced write fails.
const qFailExpiredRuns = `
UPDATE "workflow_runs"
SET "status" = 'failed',
    "error" = :error,
    "worker_id" = NULL,
    "available_at" = NULL,
    "finished_at" = :now,
    "updated_at" = :now
WHERE "namespace_id" = :ns
  AND "status" IN ` + nonTerminalStatuses + `
  AND "deadline_at" IS NOT NULL
  AND "deadline_at" <= :now
RETURNING "namespace_id", "id", "parent_step_attempt_namespace_id", "parent_step_attempt_id"`

// qClaimCandidates picks the runs to claim: due pending runs first, then
// due running ones (expired leases, parked runs), due runs of the legacy
// status sleeping, and last the parked runs due by :ahead (the claim's
// lookahead) but not yet; each part by available_at then created_at. Each
// part reads the claim index (namespace, status, available_at, created_at)
// in order for one status and stops at :limit, so a claim costs the same
// with 5 or 500,000 runs waiting: one query over several statuses, or
// ordered by a CASE on the status, sorts every due run on every claim.
var qClaimCandidates = `
SELECT "id" FROM (
` + claimPart(0, "pending", `"available_at" <= :now`) + `
  UNION ALL
` + claimPart(1, "running", `"available_at" <= :now`) + `
  UNION ALL
` + claimPart(2, "sleeping", `"available_at" <= :now`) + `
  UNION ALL
` + claimPart(3, "running", `"available_at" > :now AND "available_at" <= :ahead AND "worker_id" IS NULL`) + `)
ORDER BY "rank", "available_at", "created_at", "id"
LIMIT :limit`

// claimPart is one part of qClaimCandidates: up to :limit runs of one
// status, due as due says, not past their deadline, of the :workflows
// when set, in claim-index order.
func claimPart(rank int, status, due string) string {
	return `  SELECT * FROM (
    SELECT "id", ` + strconv.Itoa(rank) + ` AS "rank", "available_at", "created_at"
    FROM "workflow_runs"
    WHERE "namespace_id" = :ns
      AND "status" = '` + status + `'
      AND ` + due + `
      AND ("deadline_at" IS NULL OR "deadline_at" > :now)
      AND (:workflows IS NULL OR EXISTS (
        SELECT 1 FROM json_each(:workflows) AS k
        WHERE json_extract(k.value, '$[0]') = "workflow_name" AND json_extract(k.value, '$[1]') IS "version"))
    ORDER BY "available_at", "created_at"
    LIMIT :limit)`
}

// qNextDue is when the namespace's next run becomes claimable (a delayed
// start, a parked run's wake-up, a lease's expiry), one index-ordered probe
// per status.
const qNextDue = `
SELECT min("t") FROM (
  SELECT * FROM (SELECT "available_at" AS "t" FROM "workflow_runs"
    WHERE "namespace_id" = :ns AND "status" = 'pending' AND "available_at" > :now ORDER BY "available_at" LIMIT 1)
  UNION ALL
  SELECT * FROM (SELECT "available_at" FROM "workflow_runs"
    WHERE "namespace_id" = :ns AND "status" = 'running' AND "available_at" > :now ORDER BY "available_at" LIMIT 1)
  UNION ALL
  SELECT * FROM (SELECT "available_at" FROM "workflow_runs"
    WHERE "namespace_id" = :ns AND "status" = 'sleeping' AND "available_at" > :now ORDER BY "available_at" LIMIT 1))`

const qClaimRun = `
UPDATE "workflow_runs"
SET "status" = 'running',
    "attempts" = "attempts" + 1,
    "worker_id" = :worker_id,
    "available_at" = :lease_until,
    "started_at" = COALESCE("started_at", :now),
    "updated_at" = :now
WHERE "namespace_id" = :ns AND "id" = :run_id
RETURNING ` + runColumns

const qExtendLease = `
UPDATE "workflow_runs"
SET "available_at" = :lease_until,
    "updated_at" = :now
WHERE ` + runOwned + `
RETURNING "id"`

// qSleepRun parks an owned run. If the wake-up it parks for has already
// happened (a linked child is terminal, or a signal-wait has its delivery)
// and :available_at is later than now, it is parked until now instead.
const qSleepRun = `
UPDATE "workflow_runs"
SET "status" = 'running',
    "available_at" = CASE
      WHEN (
        EXISTS (
          SELECT 1
          FROM "step_attempts" sa
          JOIN "workflow_runs" child
            ON child."namespace_id" = sa."child_workflow_run_namespace_id"
            AND child."id" = sa."child_workflow_run_id"
          WHERE sa."namespace_id" = "workflow_runs"."namespace_id"
            AND sa."workflow_run_id" = "workflow_runs"."id"
            AND sa."kind" = 'workflow'
            AND sa."status" = 'running'
            AND child."status" IN ('completed', 'succeeded', 'failed', 'canceled')
        )
        OR EXISTS (
          SELECT 1
          FROM "step_attempts" sa
          JOIN "workflow_signals" ws
            ON ws."namespace_id" = sa."namespace_id"
            AND ws."step_attempt_id" = sa."id"
          WHERE sa."namespace_id" = "workflow_runs"."namespace_id"
            AND sa."workflow_run_id" = "workflow_runs"."id"
            AND sa."kind" = 'signal-wait'
            AND sa."status" = 'running'
        )
      ) AND :available_at > :now THEN :now
      ELSE :available_at
    END,
    "worker_id" = NULL,
    "updated_at" = :now
WHERE "namespace_id" = :ns
  AND "id" = :run_id
  AND "status" NOT IN ('succeeded', 'completed', 'failed', 'canceled')
  AND "worker_id" = :worker_id
RETURNING "available_at"`

const qCompleteRun = `
UPDATE "workflow_runs"
SET "status" = 'completed',
    "output" = :output,
    "error" = NULL,
    "available_at" = NULL,
    "finished_at" = :now,
    "updated_at" = :now
WHERE ` + runOwned + `
RETURNING ` + runColumns

// qFailRun stores a workflow failure: :status is 'pending' (retry at
// :available_at) or 'failed' (terminal, :finished_at set).
const qFailRun = `
UPDATE "workflow_runs"
SET "status" = :status,
    "available_at" = :available_at,
    "finished_at" = :finished_at,
    "error" = :error,
    "worker_id" = NULL,
    "started_at" = NULL,
    "updated_at" = :now
WHERE ` + runOwned + `
RETURNING ` + runColumns

const qCancelRun = `
UPDATE "workflow_runs"
SET "status" = 'canceled',
    "worker_id" = NULL,
    "available_at" = NULL,
    "finished_at" = :now,
    "updated_at" = :now
WHERE "namespace_id" = :ns
  AND "id" = :run_id
  AND "status" IN ` + nonTerminalStatuses + `
RETURNING ` + runColumns

// qWakeParent makes the parent of a finished child claimable now, only if
// the parent is parked (no worker) and its workflow attempt linked to this
// child is still running. :parent_ns/:parent_step_id come from the child's
// parent columns; :child_ns/:child_id are the child's own key.
const qWakeParent = `
UPDATE "workflow_runs"
SET "available_at" = CASE
      WHEN "available_at" IS NULL OR "available_at" > :now THEN :now
      ELSE "available_at"
    END,
    "updated_at" = :now
WHERE "namespace_id" = :parent_ns
  AND "id" = (
    SELECT "workflow_run_id"
    FROM "step_attempts"
    WHERE "namespace_id" = :parent_ns
      AND "id" = :parent_step_id
      AND "kind" = 'workflow'
      AND "status" = 'running'
      AND "child_workflow_run_namespace_id" = :child_ns
      AND "child_workflow_run_id" = :child_id
    LIMIT 1
  )
  AND ("status" = 'sleeping' OR ("status" = 'running' AND "worker_id" IS NULL))
RETURNING "id"`

// qWakeRun makes a parked (unowned, non-terminal) run claimable now.
const qWakeRun = `
UPDATE "workflow_runs"
SET "available_at" = CASE
      WHEN "available_at" IS NULL OR "available_at" > :now THEN :now
      ELSE "available_at"
    END,
    "updated_at" = :now
WHERE "namespace_id" = :ns
  AND "id" = :run_id
  AND "status" IN ` + nonTerminalStatuses + `
  AND "worker_id" IS NULL
RETURNING "id"`

// insertStepSQL inserts an attempt only while the run is owned; no row
// comes back otherwise. CreateStepAttempt inserts it running (qInsertStep
// returns the row); a batch (ApplyWrites) may insert it already completed
// or failed, and needs only to know that it applied (qInsertStepID).
const insertStepSQL = `
INSERT INTO "step_attempts" (
  "namespace_id", "id", "workflow_run_id", "step_name", "kind", "status",
  "config", "context", "output", "error",
  "child_workflow_run_namespace_id", "child_workflow_run_id",
  "started_at", "finished_at", "created_at", "updated_at"
)
SELECT :ns, :step_id, :run_id, :step_name, :kind, :status,
  :config, :context, :output, :error,
  :child_ns, :child_id,
  :started_at, :finished_at, :now, :now
FROM "workflow_runs"
WHERE ` + runOwned

const (
	qInsertStep   = insertStepSQL + "\nRETURNING " + stepColumns
	qInsertStepID = insertStepSQL + "\nRETURNING \"id\""
)

const qGetStep = `
SELECT ` + stepColumns + `
FROM "step_attempts"
WHERE "namespace_id" = :ns AND "id" = :step_id`

// qCompleteStep is idempotent: an already completed attempt keeps its
// first output and timestamps.
const qCompleteStep = `
UPDATE "step_attempts"
SET "status" = 'completed',
    "output" = CASE WHEN "status" = 'running' THEN :output ELSE "output" END,
    "error" = NULL,
    "finished_at" = COALESCE("finished_at", :now),
    "updated_at" = CASE WHEN "status" = 'running' THEN :now ELSE "updated_at" END
WHERE "status" IN ('running', 'completed', 'succeeded')
  AND ` + stepOwned + `
RETURNING ` + stepColumns

// qFailStep is idempotent like qCompleteStep.
const qFailStep = `
UPDATE "step_attempts"
SET "status" = 'failed',
    "output" = NULL,
    "error" = CASE WHEN "status" = 'running' THEN :error ELSE "error" END,
    "finished_at" = COALESCE("finished_at", :now),
    "updated_at" = CASE WHEN "status" = 'running' THEN :now ELSE "updated_at" END
WHERE "status" IN ('running', 'failed')
  AND ` + stepOwned + `
RETURNING ` + stepColumns

const qSetStepChild = `
UPDATE "step_attempts"
SET "child_workflow_run_namespace_id" = :child_ns,
    "child_workflow_run_id" = :child_id,
    "updated_at" = :now
WHERE "status" = 'running'
  AND ` + stepOwned + `
RETURNING ` + stepColumns

// qFindSignalSends returns the runs a keyed send already delivered to.
const qFindSignalSends = `
SELECT DISTINCT "workflow_run_id"
FROM "workflow_signals"
WHERE "namespace_id" = :ns
  AND "signal" = :signal
  AND "sender_idempotency_key" = :idempotency_key
ORDER BY "workflow_run_id"`

// qFindSignalWaiters lists the running signal-wait attempts on :signal of
// non-terminal runs (served by step_attempts_signal_wait_idx).
const qFindSignalWaiters = `
SELECT sa."id", sa."workflow_run_id"
FROM "step_attempts" sa
JOIN "workflow_runs" wr
  ON wr."namespace_id" = sa."namespace_id"
  AND wr."id" = sa."workflow_run_id"
WHERE sa."namespace_id" = :ns
  AND sa."kind" = 'signal-wait'
  AND sa."status" = 'running'
  AND json_extract(sa."context", '$.signal') = :signal
  AND wr."status" IN ` + nonTerminalStatuses + `
ORDER BY sa."created_at", sa."id"`

// qInsertSignalDelivery records one delivery; the unique index on
// (namespace_id, step_attempt_id) makes a second delivery a no-op.
const qInsertSignalDelivery = `
INSERT INTO "workflow_signals" (
  "namespace_id", "id", "signal", "data", "sender_idempotency_key",
  "workflow_run_id", "step_attempt_id", "created_at"
)
VALUES (:ns, :id, :signal, :data, :idempotency_key, :run_id, :step_id, :now)
ON CONFLICT ("namespace_id", "step_attempt_id") DO NOTHING`

const qGetSignalDelivery = `
SELECT "data"
FROM "workflow_signals"
WHERE "namespace_id" = :ns AND "step_attempt_id" = :step_id
LIMIT 1`

// qMigrationsTableExists and qMigrationVersion find the schema version
// (−1 for a fresh file).
const qMigrationsTableExists = `
SELECT COUNT(*) FROM "sqlite_master"
WHERE "type" = 'table' AND "name" = 'openworkflow_migrations'`

const qMigrationVersion = `SELECT COALESCE(MAX("version"), -1) FROM "openworkflow_migrations"`

// qSavepoint, qReleaseSavepoint and qRollbackToSavepoint bound one write
// of a batch (ApplyWrites), so a write that fails leaves the others.
const (
	qSavepoint           = `SAVEPOINT "batch_write"`
	qReleaseSavepoint    = `RELEASE "batch_write"`
	qRollbackToSavepoint = `ROLLBACK TO "batch_write"`
)
