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
)

// ErrDamaged is returned (wrapped) by [Open] and [CheckFile] for a file
// that is not an SQLite database although it is not empty: one cut short
// before the end of its 100-byte header, or another kind of file. SQLite
// itself would silently start such a file over as an empty database.
var ErrDamaged = errors.New("not an SQLite database (damaged or truncated)")

// sqliteHeader is the first 16 bytes of every SQLite 3 database file.
const sqliteHeader = "SQLite format 3\x00"

// checkHeader returns an error wrapping [ErrDamaged] when the file at path
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
		return fmt.Errorf("%s: %w: its first bytes are not SQLite's header", path, ErrDamaged)
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
	rows, err := db.QueryContext(ctx, fmt.Sprintf("PRAGMA quick_check(%d)", maxProblems))
	if err != nil {
		if IsDamaged(err) {
			return []string{err.Error()}, nil
		}
		return nil, fmt.Errorf("check %s: %w", path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, fmt.Errorf("check %s: %w", path, err)
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
		return nil, fmt.Errorf("check %s: %w", path, err)
	}
	if len(problems) > maxProblems {
		problems = problems[:maxProblems]
	}
	return problems, nil
}
