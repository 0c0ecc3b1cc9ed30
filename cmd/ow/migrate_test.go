package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/config"
)

// postgresTestURL is OPENWORKFLOW_TEST_POSTGRES_URL or the default test
// database; the test is skipped when it is unreachable and
// OPENWORKFLOW_SKIP_POSTGRES=1.
func postgresTestURL(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	url := os.Getenv("OPENWORKFLOW_TEST_POSTGRES_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if os.Getenv("OPENWORKFLOW_SKIP_POSTGRES") == "1" {
			t.Skipf("PostgreSQL unreachable and OPENWORKFLOW_SKIP_POSTGRES=1: %v", err)
		}
		t.Fatalf("this test needs PostgreSQL at %s (set OPENWORKFLOW_TEST_POSTGRES_URL, or OPENWORKFLOW_SKIP_POSTGRES=1 to skip): %v", url, err)
	}
	t.Cleanup(pool.Close)
	return url, pool
}

// On PostgreSQL, ow migrate reports OpenWorkflow's migration line and the
// Go SDK's own. A schema migrated by the TypeScript SDK has the first
// only: migrating it applies the Go line alone, which ow migrate must
// report instead of "nothing applied".
func TestMigratePostgresReportsBothLines(t *testing.T) {
	t.Parallel()
	url, pool := postgresTestURL(t)
	schema := fmt.Sprintf("ow_cli_migrate_%d", time.Now().UnixNano())
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`) })
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := execute(context.Background(), append([]string{"--postgres-url", url, "--schema", schema}, args...), &out, &errOut, dir); code != 0 {
			t.Fatalf("ow %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		}
		return out.String()
	}
	goLatest := postgres.LatestGoMigrationVersion

	out := run("migrate")
	mustContain(t, "first migrate", out,
		fmt.Sprintf("OpenWorkflow's migrations (openworkflow_migrations): applied migrations 0 to %d (none yet → version %d)", postgres.LatestMigrationVersion, postgres.LatestMigrationVersion),
		fmt.Sprintf("the Go SDK's migrations (openworkflow_go_migrations): applied migrations 0 to %d (none yet → version %d)", goLatest, goLatest))

	// What the TypeScript SDK leaves: OpenWorkflow's line only. (The
	// interop suite does this with the TypeScript SDK itself.)
	if _, err := pool.Exec(context.Background(), `DROP TABLE "`+schema+`"."openworkflow_go_migrations"`); err != nil {
		t.Fatal(err)
	}
	m := decode[config.Migration](t, result{stdout: run("migrate", "--json")})
	if len(m.Lines) != 2 || m.Lines[0].Name != "openworkflow" || m.Lines[1].Name != "go" {
		t.Fatalf("migrate --json lines = %+v, want openworkflow's and go's", m.Lines)
	}
	if ow := m.Lines[0]; len(ow.Applied) != 0 || ow.Before != postgres.LatestMigrationVersion || ow.After != ow.Before ||
		len(m.Applied) != 0 || m.Before != ow.Before || m.After != ow.After {
		t.Errorf("OpenWorkflow's line after the TypeScript SDK migrated: %+v (top level before %d after %d applied %v); want up to date", ow, m.Before, m.After, m.Applied)
	}
	if g := m.Lines[1]; g.Table != "openworkflow_go_migrations" || g.Before != -1 || g.After != goLatest || len(g.Applied) != len(postgres.GoMigrationVersions()) {
		t.Errorf("the Go line on a schema the TypeScript SDK migrated: %+v; want applied %v", g, postgres.GoMigrationVersions())
	}

	out = run("migrate")
	mustContain(t, "migrate of an up-to-date schema", out,
		fmt.Sprintf("OpenWorkflow's migrations (openworkflow_migrations): up to date (version %d)", postgres.LatestMigrationVersion),
		fmt.Sprintf("the Go SDK's migrations (openworkflow_go_migrations): up to date (version %d)", goLatest))
}
