package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// testPostgresURL is OPENWORKFLOW_TEST_POSTGRES_URL, or the default test
// database.
func testPostgresURL() string {
	if u := os.Getenv("OPENWORKFLOW_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// adminPool connects to the test server. An unreachable server fails the
// test unless OPENWORKFLOW_SKIP_POSTGRES=1, which skips it.
func adminPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := testPostgresURL()
	pool, err := pgxpool.New(ctx, url)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		if os.Getenv("OPENWORKFLOW_SKIP_POSTGRES") == "1" {
			t.Skipf("postgres unreachable and OPENWORKFLOW_SKIP_POSTGRES=1: %v", err)
		}
		t.Fatalf("these tests need PostgreSQL at %s (set OPENWORKFLOW_TEST_POSTGRES_URL, or OPENWORKFLOW_SKIP_POSTGRES=1 to skip): %v", url, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// uniqueName returns prefix followed by the time and a random number, a
// name no other test or process uses.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s_%d_%d", prefix, time.Now().UnixNano(), rand.Uint32())
}

// newPostgresEnv is an env on a PostgreSQL schema of its own, dropped
// after the test.
func newPostgresEnv(t *testing.T) *env {
	pool := adminPool(t)
	schema := uniqueName("ow_cli_test")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	})
	url, dir := testPostgresURL(), t.TempDir()
	return &env{t: t, name: "postgres", dir: dir, flags: []string{"--postgres-url", url, "--schema", schema},
		open: func(ctx context.Context) (backend.Backend, error) {
			return postgres.Open(ctx, url, postgres.Options{Schema: schema})
		},
		openAt: func(ctx context.Context, now func() time.Time) (backend.Backend, error) {
			return postgres.Open(ctx, url, postgres.Options{Schema: schema, Now: now})
		}}
}

// bothEnvs runs f on SQLite and on PostgreSQL, as parallel subtests.
func bothEnvs(t *testing.T, f func(t *testing.T, e *env)) {
	for _, b := range []struct {
		name string
		mk   func(*testing.T) *env
	}{{"sqlite", newEnv}, {"postgres", newPostgresEnv}} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b.mk(t))
		})
	}
}
