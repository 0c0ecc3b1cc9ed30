package config

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/openworkflow-go/openworkflow/backend/sqlite"
)

// MaxIntegrityProblems is how many of the problems SQLite's check finds
// [Config.CheckIntegrity] returns: 10.
const MaxIntegrityProblems = 10

// CheckIntegrity runs SQLite's own consistency check (PRAGMA quick_check,
// see [sqlite.CheckFile]) on the configured SQLite file, read-only, and
// returns the problems it finds (at most [MaxIntegrityProblems]); nil when
// the file is sound. checked is false, with no error, on PostgreSQL (the
// server checks its own pages), for ":memory:" and for a file not created
// yet.
func (c *Config) CheckIntegrity(ctx context.Context) (problems []string, checked bool, err error) {
	if c.Kind() != BackendSQLite || c.SQLitePath == ":memory:" {
		return nil, false, nil
	}
	problems, err = sqlite.CheckFile(ctx, c.SQLitePath, MaxIntegrityProblems)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return problems, true, nil
}

// RequireIntact returns nil unless the configured SQLite file exists and
// SQLite's check of it ([Config.CheckIntegrity]) finds problems; then an
// error saying that the file is damaged, what the check found and what
// to do. A command that will run a worker on the file calls it first, so
// that it stops with that error rather than retrying failed writes.
func (c *Config) RequireIntact(ctx context.Context) error {
	problems, checked, err := c.CheckIntegrity(ctx)
	if err != nil || !checked || len(problems) == 0 {
		return err
	}
	return c.damagedError(problems, nil)
}

// damagedError is the error of [Config.ExplainError] and
// [Config.OpenBackend] for a damaged SQLite file.
type damagedError struct {
	msg   string
	cause error
}

func (e *damagedError) Error() string { return e.msg }
func (e *damagedError) Unwrap() error { return e.cause }

// damagedError says that the SQLite file is damaged, what SQLite's check
// found and what to do, with the error that revealed it as the cause.
// At most two of the problems are quoted; a nil cause adds no cause line.
func (c *Config) damagedError(problems []string, cause error) error {
	found := "SQLite reports it damaged"
	if len(problems) > 0 {
		found = "the integrity check reports: " + strings.Join(problems[:min(2, len(problems))], "; ")
		if len(problems) > 2 {
			found += fmt.Sprintf("; and more ('ow doctor' lists up to %d)", MaxIntegrityProblems)
		}
	}
	msg := fmt.Sprintf("the SQLite database %s (sqlite_path from %s) is damaged (%s): it cannot be used as it is; stop the processes using it, then restore it from a backup, salvage what is readable (sqlite3 %s .recover | sqlite3 recovered.db), or move it aside (mv %s %s.damaged) to start over with an empty database",
		c.SQLitePath, c.sources[keySQLitePath], found, shellWord(c.SQLitePath), shellWord(c.SQLitePath), shellWord(c.SQLitePath))
	if cause != nil {
		// The backend's own *sqlite.DamagedError says again what this
		// message says: quote only SQLite's report in it.
		line := cause.Error()
		var de *sqlite.DamagedError
		if errors.As(cause, &de) && de.Err != nil {
			line = de.Err.Error()
		}
		msg += "\ncause: " + line
	}
	return &damagedError{cause: cause, msg: msg}
}

// ExplainError returns err unchanged, unless err comes from the
// configured SQLite file being damaged: SQLite's own report of it
// (SQLITE_CORRUPT, SQLITE_NOTADB, see [sqlite.IsDamaged]), or a row the
// backend expected and did not find (sql.ErrNoRows escaping the backend,
// as a damaged index gives) when SQLite's check of the file then finds
// problems. It then returns an error saying that the file is damaged,
// what the check found and what to do, wrapping err.
func (c *Config) ExplainError(ctx context.Context, err error) error {
	var explained *damagedError
	if err == nil || c.Kind() != BackendSQLite || errors.As(err, &explained) {
		return err
	}
	reported := sqlite.IsDamaged(err)
	if !reported && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	problems, checked, cerr := c.CheckIntegrity(context.WithoutCancel(ctx))
	if cerr != nil || (!reported && (!checked || len(problems) == 0)) {
		return err
	}
	return c.damagedError(problems, err)
}
