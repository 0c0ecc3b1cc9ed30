// Package sqlite is the SQLite implementation of [backend.Backend], the
// embedded default storage of the engine, built on modernc.org/sqlite (pure
// Go, no cgo).
//
// A database file holds OpenWorkflow's tables (workflow_runs,
// step_attempts, workflow_signals, openworkflow_migrations) with the same
// columns and indexes as the TypeScript SDK's SQLite backend, plus one
// partial index of its own on workflow_runs (workflow_runs_go_deadline_idx,
// for the claim's deadline sweep, created at open outside the shared
// migration numbering), so both SDKs can share a file: timestamps are
// fixed-width ISO-8601 UTC text ([backend.TimeLayout]) compared as
// strings, JSON is text, and absent values are SQL NULL. [Open] creates
// the file, switches it to WAL and applies the embedded migrations
// (migrations/NNNN_*.sql). The backend's statements are embedded too
// (sql/*.sql, named as the PostgreSQL backend's), loaded and checked once
// per process by the first Open.
//
//	b, err := sqlite.Open(ctx, "data/openworkflow.db", sqlite.Options{})
//	if err != nil { … }
//	defer b.Close()
//
// # Concurrency
//
// Every write is a BEGIN IMMEDIATE transaction, so a claim, a keyed create
// or a signal fan-out sees and changes the database atomically. Several
// worker processes may share one file: they queue on SQLite's write lock
// (Options.BusyTimeout, then retries), which is slower than PostgreSQL
// but never double-claims a run. Readers do not block writers (WAL).
//
// # Wake-ups
//
// Subscribe delivers [backend.EventWorkAvailable] and
// [backend.EventRunFinished] concerning the backend's namespace, for the
// writes made by every Backend of this process on the same file (a client
// and a worker opened separately wake each other). Writes by other
// processes are not seen; workers keep polling as a fallback.
//
// # Errors
//
// Methods return errors wrapping the sentinels of package backend, naming
// the id concerned:
//
//	backend.ErrRunNotFound      no run with that id in the namespace
//	backend.ErrStepNotFound     no step attempt with that id (in that run)
//	backend.ErrNotOwner         fenced write on a run not running under this worker
//	backend.ErrRunTerminal      cancel of a completed or failed run
//	backend.ErrStepNotRunning   step write on an attempt in the wrong status
//	backend.ErrInvalidArgument  empty names, invalid JSON, bad cursors
package sqlite
