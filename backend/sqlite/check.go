package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/openworkflow-go/openworkflow/backend"
)

// ErrDamaged is the sentinel of a damaged database file: errors.Is
// reports it for every [*DamagedError], which [Open], [CheckFile] and
// every method of a [Backend] return once SQLite found the file damaged
// (SQLITE_CORRUPT, "database disk image is malformed", or SQLITE_NOTADB,
// "file is not a database"), or when the file is not empty and does not
// start with SQLite's header (cut short, or another kind of file), which
// SQLite itself would silently start over as an empty database.
var ErrDamaged = errors.New("not an SQLite database (damaged or truncated)")

// DamagedError says that the database file Path is damaged, and what to
// do about it. A [Backend] that meets one stops using the file: that
// call and every later one of every Backend of this process open on the
// file fail with it, without reading or writing the file again, until
// they are closed (reopen after repairing the file). errors.Is reports
// it as [ErrDamaged] and as [backend.ErrUnusable] (so a Worker stops
// rather than retrying); errors.As gives the path and the cause.
type DamagedError struct {
	// Path is the database file, absolute (":memory:" for a private
	// in-memory database).
	Path string
	// Problems are what SQLite's integrity check (PRAGMA quick_check)
	// reported, when it was run ([Options.CheckIntegrity]); else nil.
	Problems []string
	// Err is SQLite's report (an SQLITE_CORRUPT or SQLITE_NOTADB
	// *sqlite.Error), or why the header was refused; nil when Problems
	// say it.
	Err error
}

// Error names the file, says what was found and what to do.
func (e *DamagedError) Error() string {
	found := "SQLite reports it damaged"
	switch {
	case e.Err != nil:
		found = e.Err.Error()
	case len(e.Problems) > 0:
		found = "PRAGMA quick_check reports: " + strings.Join(e.Problems[:min(2, len(e.Problems))], "; ")
		if len(e.Problems) > 2 {
			found += fmt.Sprintf("; and %d more", len(e.Problems)-2)
		}
	}
	return fmt.Sprintf("the SQLite database %s is damaged (%s): OpenWorkflow stopped using it and every call on it fails. "+
		"Stop the processes using it, run 'ow doctor' to see what SQLite's check finds, "+
		"then restore the file from a backup, or salvage what is readable into a new file "+
		"(sqlite3 %s .recover | sqlite3 recovered.db) and use that one",
		e.Path, found, e.Path)
}

// Unwrap returns SQLite's report, if any.
func (e *DamagedError) Unwrap() error { return e.Err }

// Is reports target [ErrDamaged] and [backend.ErrUnusable].
func (e *DamagedError) Is(target error) bool {
	return target == ErrDamaged || target == backend.ErrUnusable
}

// sqliteHeader is the first 16 bytes of every SQLite 3 database file.
const sqliteHeader = "SQLite format 3\x00"

// checkHeader returns a [*DamagedError] when the file at path
// exists, is not empty and does not start with the SQLite header. A
// missing or empty file is a new database and passes.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(f, head)
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		return nil
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return err
	case n < len(head) || !bytes.Equal(head, []byte(sqliteHeader)):
		return &DamagedError{Path: path, Err: errors.New("its first bytes are not SQLite's header: it was cut short, or is not an SQLite database")}
	}
	return nil
}

// IsDamaged reports whether err says that a database file is damaged or
// not a database: [ErrDamaged], or SQLite's own SQLITE_CORRUPT ("database
// disk image is malformed") or SQLITE_NOTADB ("file is not a database").
func IsDamaged(err error) bool {
	if errors.Is(err, ErrDamaged) {
		return true
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}

// CheckFile runs SQLite's own consistency check, PRAGMA quick_check, on
// the database file at path, opened read-only (no migration, no write;
// committed WAL content included). It returns nil when SQLite finds the
// file sound, else the problems it reports, at most maxProblems of them
// (at least 1), such as "Tree 5 page 5 cell 0: invalid page number 97".
// A file that is not an SQLite database at all (see [ErrDamaged]), or so
// damaged that SQLite cannot run the check, is one problem saying so.
// quick_check reads every page, so it takes time in proportion to the
// file's size; it does not compare indexes with their tables (PRAGMA
// integrity_check does, more slowly). A missing file is an error wrapping
// os.ErrNotExist.
func CheckFile(ctx context.Context, path string, maxProblems int) ([]string, error) {
	maxProblems = max(maxProblems, 1)
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	if err := checkHeader(path); err != nil {
		if errors.Is(err, ErrDamaged) {
			return []string{"the file does not start with SQLite's header: it was cut short, or is not an SQLite database"}, nil
		}
		return nil, err
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", path, err)
	}
	defer db.Close()
	problems, err := quickCheck(ctx, db, maxProblems)
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", path, err)
	}
	return problems, nil
}

// quickCheck runs PRAGMA quick_check on db and returns at most
// maxProblems (at least 1) of the problems it reports; nil when the
// file is sound. SQLite's own report of a file too damaged to check is
// one problem.
func quickCheck(ctx context.Context, db *sql.DB, maxProblems int) ([]string, error) {
	maxProblems = max(maxProblems, 1)
	rows, err := db.QueryContext(ctx, fmt.Sprintf("PRAGMA quick_check(%d)", maxProblems))
	if err != nil {
		if IsDamaged(err) {
			return []string{err.Error()}, nil
		}
		return nil, err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, err
		}
		// One row may hold several lines, headed by the database's name.
		for _, l := range strings.Split(line, "\n") {
			if l = strings.TrimSpace(l); l != "" && l != "ok" && !strings.HasPrefix(l, "*** in database ") {
				problems = append(problems, l)
			}
		}
	}
	if err := rows.Err(); err != nil {
		if IsDamaged(err) {
			return append(problems, err.Error()), nil
		}
		return nil, err
	}
	if len(problems) > maxProblems {
		problems = problems[:maxProblems]
	}
	return problems, nil
}
