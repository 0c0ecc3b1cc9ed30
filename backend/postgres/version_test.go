package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// TestSupportedServerVersionDrawsTheLineAtTheMinimum checks the comparison
// and the error's words on versions as servers report them.
func TestSupportedServerVersionDrawsTheLineAtTheMinimum(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v       postgres.ServerVersion
		ok      bool
		printed string // the version the error names
	}{
		{postgres.ServerVersion{Num: 130000, Text: "13.0"}, true, ""},
		{postgres.ServerVersion{Num: 130023, Text: "13.23"}, true, ""},
		{postgres.ServerVersion{Num: 180004, Text: "18.4"}, true, ""},
		{postgres.ServerVersion{Num: 160004, Text: "16.4 (Debian 16.4-1.pgdg120+1)"}, true, ""},
		{postgres.ServerVersion{Num: 129999, Text: "12.99"}, false, "12.99"},
		{postgres.ServerVersion{Num: 120022, Text: "12.22 (Ubuntu 12.22-0ubuntu0.20.04.1)"}, false, "12.22"},
		{postgres.ServerVersion{Num: 90624, Text: "9.6.24"}, false, "9.6.24"},
	} {
		err := postgres.SupportedServerVersion(tc.v, postgres.MinServerMajorVersion)
		if tc.ok {
			if err != nil {
				t.Errorf("%+v: refused: %v", tc.v, err)
			}
			continue
		}
		if !errors.Is(err, postgres.ErrUnsupportedServerVersion) {
			t.Errorf("%+v: err = %v, want ErrUnsupportedServerVersion", tc.v, err)
			continue
		}
		want := "OpenWorkflow needs PostgreSQL >= 13, this server is " + tc.printed + " "
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %q does not say %q", tc.v, err, want)
		}
	}
}

// TestCheckServerVersionReadsTheServer checks the check against the test
// server: it reads the version the server reports, accepts it at the real
// minimum, and refuses it, naming it, when the minimum is set above it.
func TestCheckServerVersionReadsTheServer(t *testing.T) {
	t.Parallel()
	pool := requirePool(t)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var shown string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&shown); err != nil {
		t.Fatal(err)
	}

	v, err := postgres.CheckServerVersion(ctx, conn.Conn(), postgres.MinServerMajorVersion)
	if err != nil {
		t.Fatalf("the test server is refused: %v", err)
	}
	if v.Text != shown {
		t.Errorf("version text %q, SHOW server_version says %q", v.Text, shown)
	}
	if !strings.HasPrefix(shown, v.String()) || v.Major() < postgres.MinServerMajorVersion {
		t.Errorf("version %+v: String %q, Major %d", v, v.String(), v.Major())
	}

	_, err = postgres.CheckServerVersion(ctx, conn.Conn(), v.Major()+1)
	if !errors.Is(err, postgres.ErrUnsupportedServerVersion) {
		t.Fatalf("with the minimum above the server: err = %v, want ErrUnsupportedServerVersion", err)
	}
	if !strings.Contains(err.Error(), "this server is "+v.String()+" ") {
		t.Errorf("error %q does not name the server's version %s", err, v.String())
	}
}

// TestOpenRefusesAServerBelowTheMinimum opens a server older than
// postgres.MinServerMajorVersion (PostgreSQL 12, started by
// test/pgversions/run.sh, which sets OPENWORKFLOW_TEST_POSTGRES_OLD_URL;
// skipped without it) and checks that Open, with and without migrations,
// and Migrate refuse it with the clear error and leave nothing behind.
func TestOpenRefusesAServerBelowTheMinimum(t *testing.T) {
	url := os.Getenv("OPENWORKFLOW_TEST_POSTGRES_OLD_URL")
	if url == "" {
		t.Skip("OPENWORKFLOW_TEST_POSTGRES_OLD_URL (a PostgreSQL server older than 13) is not set; test/pgversions/run.sh sets it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "owt_old_" + hex.EncodeToString(b[:])

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("the old server at %s: %v", url, err)
	}
	defer conn.Close(ctx)
	var num int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num); err != nil {
		t.Fatal(err)
	}
	if num >= postgres.MinServerMajorVersion*10000 {
		t.Fatalf("OPENWORKFLOW_TEST_POSTGRES_OLD_URL is a supported server (server_version_num %d)", num)
	}

	for _, skip := range []bool{false, true} {
		be, err := postgres.Open(ctx, url, postgres.Options{Schema: schema, SkipMigrations: skip})
		if err == nil {
			_ = be.Close()
			t.Fatalf("Open (SkipMigrations %v) accepted server_version_num %d", skip, num)
		}
		if !errors.Is(err, postgres.ErrUnsupportedServerVersion) || !strings.Contains(err.Error(), "OpenWorkflow needs PostgreSQL >= 13, this server is 12.") {
			t.Errorf("Open (SkipMigrations %v): err = %v, want ErrUnsupportedServerVersion naming 13 and the server's 12.x", skip, err)
		}
		t.Logf("Open (SkipMigrations %v): %v", skip, err)
	}

	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := postgres.Migrate(ctx, pool, schema); !errors.Is(err, postgres.ErrUnsupportedServerVersion) {
		t.Errorf("Migrate: err = %v, want ErrUnsupportedServerVersion", err)
	}

	var created int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema).Scan(&created); err != nil {
		t.Fatal(err)
	}
	if created != 0 {
		t.Errorf("schema %s was created on the refused server", schema)
		_, _ = conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	}
}
