// Package pgtest gives tests a PostgreSQL backend of their own on the
// test server: a fresh schema with a unique name, migrated, dropped when
// the test ends, so tests share the server with other processes without
// seeing or touching anything they did not create. It is imported by test
// files only.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// DefaultURL is the test server's URL when OPENWORKFLOW_TEST_POSTGRES_URL
// is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL is OPENWORKFLOW_TEST_POSTGRES_URL, or [DefaultURL].
func URL() string {
	if u := os.Getenv("OPENWORKFLOW_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Skipped reports whether PostgreSQL tests are to be skipped
// (OPENWORKFLOW_SKIP_POSTGRES=1).
func Skipped() bool { return os.Getenv("OPENWORKFLOW_SKIP_POSTGRES") == "1" }

// NewSchema creates an empty schema with a unique name (prefix "owt_") on
// the test server and drops it, with everything in it, when t ends. It
// skips t when OPENWORKFLOW_SKIP_POSTGRES=1, and fails it when the server
// is unreachable otherwise.
func NewSchema(t testing.TB) string {
	t.Helper()
	if Skipped() {
		t.Skip("OPENWORKFLOW_SKIP_POSTGRES=1")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "owt_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, URL())
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v (set OPENWORKFLOW_TEST_POSTGRES_URL, or OPENWORKFLOW_SKIP_POSTGRES=1 to skip)", URL(), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, URL())
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// Open returns a backend on a new schema of its own (see NewSchema),
// migrated, with opts (its Schema is set here); it is closed when t ends,
// before the schema is dropped.
func Open(t testing.TB, opts postgres.Options) *postgres.Backend {
	t.Helper()
	return OpenURL(t, URL(), opts)
}

// OpenURL is Open through url, e.g. a proxy in front of the test server;
// the schema is still created and dropped through URL().
func OpenURL(t testing.TB, url string, opts postgres.Options) *postgres.Backend {
	t.Helper()
	opts.Schema = NewSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := postgres.Open(ctx, url, opts)
	if err != nil {
		t.Fatalf("open postgres backend (schema %s): %v", opts.Schema, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// Pool returns a new pool on the test server, closed when t ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	if Skipped() {
		t.Skip("OPENWORKFLOW_SKIP_POSTGRES=1")
	}
	pool, err := pgxpool.New(context.Background(), URL())
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", URL(), err)
	}
	t.Cleanup(pool.Close)
	return pool
}
