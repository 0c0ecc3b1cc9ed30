// Package postgres is the PostgreSQL implementation of [backend.Backend],
// built on pgx v5. Its tables are OpenWorkflow's (schema "openworkflow",
// tables workflow_runs, step_attempts, workflow_signals and
// openworkflow_migrations), so a database can be shared with the TypeScript
// SDK: both read each other's runs, and both record migrations the same way.
//
// # Getting started
//
//	b, err := postgres.Open(ctx, "postgres://user:pass@host:5432/db", postgres.Options{})
//	if err != nil { ... }
//	defer b.Close()
//
// [Open] creates a pool and runs [Migrate]; [FromPool] wraps a pool you own
// and never migrates. Several backends (one per namespace) may share a pool.
// [Options] zero values mean the defaults: namespace "default", schema
// "openworkflow".
//
// # Migrations
//
// The numbered scripts in migrations/ (versions 0–5) are OpenWorkflow's:
// each records its own version in openworkflow_migrations and the current
// version is MAX(version). What only this SDK needs (today: a partial index
// that keeps the claim's deadline sweep cheap however many runs are live;
// see docs/scale.md for why no list index is added) is a second line,
// migrations_go/,
// recorded the same way in openworkflow_go_migrations, so the TypeScript
// SDK sharing the database never sees a version it does not know. [Migrate]
// applies OpenWorkflow's line, then ours, under one session advisory lock
// keyed by the schema name, so processes starting together against a fresh
// database migrate it once, in turn.
//
// # Concurrency
//
//   - Claims are one statement: a deadline sweep, then up to one candidate
//     per worker id locked FOR UPDATE SKIP LOCKED and claimed with a lease.
//     Concurrent claimers never take the same run.
//   - Every worker write is fenced on status = 'running' AND worker_id = the
//     worker; step-attempt writes also lock the run row FOR NO KEY UPDATE in
//     the same statement, so a lease that moves serializes with them.
//   - Keyed creates serialize on pg_advisory_xact_lock of the key, as in
//     OpenWorkflow; there is no unique index.
//   - Timestamps are written with millisecond precision.
//
// # Group commit
//
// [Backend.ApplyWrites] sends a batch of fenced worker writes as one
// pgx.Batch, which PostgreSQL runs as one implicit transaction: one round
// trip and one commit for the step writes and run transitions of many
// runs, announced by one notification per kind. [Backend.CreateWorkflowRuns]
// inserts many runs with one INSERT … SELECT FROM unnest.
//
// # Wake-ups
//
// Writes that make a run claimable now, or terminal, call pg_notify on the
// channel "openworkflow" in the same statement, with a JSON payload
// {"schema","ns","kind","id"} (kind "work" or "finished"), delivered at
// commit; a batch sends "ids", a list, instead of "id", and "work" without
// an id. [Backend.Subscribe] listens on a dedicated connection and
// publishes the events of its schema and namespace.
//
// # Errors
//
// Methods return errors wrapping the sentinels of package backend, naming
// the run or attempt concerned:
//
//	backend.ErrRunNotFound      no such run in the namespace
//	backend.ErrStepNotFound     no such step attempt in the run
//	backend.ErrNotOwner         a fenced write by a worker that no longer owns the run
//	backend.ErrStepNotRunning   a step write on an attempt in the wrong status
//	backend.ErrRunTerminal      canceling a completed or failed run
//	backend.ErrInvalidArgument  bad cursor, both cursors, empty name, invalid JSON, bad schema name
//
// # JSON
//
// JSON columns are jsonb, as upstream: values come back semantically equal
// (jsonb normalizes whitespace and key order; big integers keep their
// digits). jsonb cannot hold U+0000, so a value holding it is stored with
// its strings escaped, and the backend records in
// openworkflow_go_escaped_json (go migration 3) which column of which row
// holds such a value; a value is unescaped on read only when that record
// names it, so whatever another SDK wrote reads back unchanged. See
// jsonnul.go and escapes.go.
package postgres
