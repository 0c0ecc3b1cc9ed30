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
// the file (unless [Options.MustExist]), switches it to WAL and applies
// the embedded migrations (migrations/NNNN_*.sql). The backend's statements are embedded too
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
//
// # Damaged files
//
// When SQLite reports the file damaged (SQLITE_CORRUPT, "database disk
// image is malformed", or SQLITE_NOTADB) on any operation, the backend
// stops using the file: that call and every later one of every Backend
// of this process on the file fail with a [*DamagedError] naming the
// file and saying what to do (run 'ow doctor', restore from a backup or
// salvage with sqlite3's .recover), without reading or writing it again.
// errors.Is reports it as [ErrDamaged] and as [backend.ErrUnusable], on
// which a Worker stops rather than retrying. [Open] refuses a file whose
// header is not SQLite's, or that its migration finds damaged, with the
// same error; [Options.CheckIntegrity] also runs PRAGMA quick_check
// ([CheckFile], as 'ow doctor' does) first. [Options.MustExist] refuses
// to create a missing file ([ErrNoDatabase]), for programs that only read.
package sqlite
