package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadCommandsCreateNoSQLiteFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	typo := filepath.Join(e.dir, "dta", "ow.db") // "data" mistyped: neither exists
	for _, args := range [][]string{
		{"runs", "get", "run_123"},
		{"runs", "list"},
		{"runs", "tail", "run_123"},
		{"schedules", "list"},
		{"schedules", "get", "nightly"},
		{"limits", "list"},
	} {
		r := e.run(append([]string{"--sqlite-path", typo}, args...)...)
		what := "ow " + strings.Join(args, " ")
		if r.code != 1 {
			t.Errorf("%s: exit %d, want 1\n%s", what, r.code, r.stdout)
		}
		mustContain(t, what+" stderr", r.stderr, "no SQLite database at "+typo, "flag --sqlite-path", "check the path", "ow migrate")
		if _, err := os.Stat(filepath.Dir(typo)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s created %s (stat: %v)", what, filepath.Dir(typo), err)
		}
	}
	// A command that writes creates it, and the reads then work.
	e.ok("--sqlite-path", typo, "migrate")
	e.ok("--sqlite-path", typo, "runs", "list")
}

// TestReadCommandsCreateNoPostgreSQLSchema: on PostgreSQL too, a command
// that only reads creates nothing for a mistyped --schema; the error
// names the schema and says what to do. A command that writes creates it.
func TestReadCommandsCreateNoPostgreSQLSchema(t *testing.T) {
	t.Parallel()
	e := newPostgresEnv(t)
	schema := e.flags[len(e.flags)-1] // newPostgresEnv's own schema, dropped after the test
	pool := adminPool(t)
	schemaExists := func() bool {
		var ok bool
		if err := pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, args := range [][]string{{"runs", "list"}, {"runs", "get", "run_123"}, {"limits", "list"}} {
		r := e.run(args...)
		what := "ow " + strings.Join(args, " ")
		if r.code != 1 {
			t.Errorf("%s: exit %d, want 1\n%s", what, r.code, r.stdout)
		}
		mustContain(t, what+" stderr", r.stderr, "no schema \""+schema+"\"", "check the schema", "ow migrate")
		if schemaExists() {
			t.Fatalf("%s created schema %s", what, schema)
		}
	}
	e.ok("migrate")
	e.ok("runs", "list")
}
