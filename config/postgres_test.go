package config

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// testPostgresURL is OPENWORKFLOW_TEST_POSTGRES_URL, or the default test
// database.
func testPostgresURL() string {
	if u := os.Getenv("OPENWORKFLOW_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// postgresSchema returns the test database's URL and a fresh schema name
// dropped after the test. An unreachable server fails the test unless
// OPENWORKFLOW_SKIP_POSTGRES=1, which skips it.
func postgresSchema(t *testing.T) (string, string) {
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
	schema := fmt.Sprintf("ow_config_test_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		pool.Close()
	})
	return url, schema
}

func TestPostgresMigrateAndDiagnose(t *testing.T) {
	t.Parallel()
	url, schema := postgresSchema(t)
	c, err := LoadWith(Options{Dir: t.TempDir(), Overrides: Overrides{PostgresURL: &url, Schema: &schema}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := c.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Backend != BackendPostgres || m.Before != -1 || m.After < 5 || len(m.Applied) != m.After+1 {
		t.Errorf("first migration: %+v", m)
	}
	if m, err = c.Migrate(ctx); err != nil || len(m.Applied) != 0 {
		t.Errorf("second migration: %+v, %v; want nothing applied", m, err)
	}
	d, err := c.Diagnose(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Reachable || d.SchemaVersion != m.After || d.Notifications != "ok" {
		t.Errorf("diagnosis: %+v", d)
	}
}
