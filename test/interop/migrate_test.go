package interop

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/config"
)

// newSchema returns a fresh schema name, dropped when the test ends.
func newSchema(t *testing.T) string {
	t.Helper()
	s := randomName("interop_")
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+s+`" CASCADE`)
	})
	return s
}

func migrationVersions(t *testing.T, schema string) []int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT "version" FROM "`+schema+`"."openworkflow_migrations" ORDER BY 1`)
	must(t, err)
	defer rows.Close()
	var vs []int64
	for rows.Next() {
		var v int64
		must(t, rows.Scan(&v))
		vs = append(vs, v)
	}
	must(t, rows.Err())
	return vs
}

func migrateTS(t *testing.T, schema string) {
	t.Helper()
	p := startTS(t, randomName("mig-"), tsOptions{Schema: schema, Migrate: true})
	p.call("ping", nil, nil)
}

func migrateGo(t *testing.T, schema string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := postgres.Open(ctx, pgURL, postgres.Options{Schema: schema, NamespaceID: "mig"})
	must(t, err)
	must(t, b.Close())
}

// Migrating with one SDK and then opening with the other applies nothing
// again (migration 2's ADD CONSTRAINT would fail if it did), leaves
// openworkflow_migrations at versions 0-5, and both SDKs work on the
// schema afterwards.
func TestMigrationsInEitherOrder(t *testing.T) {
	setup(t)
	for _, order := range []string{"TS then Go", "Go then TS"} {
		t.Run(order, func(t *testing.T) {
			schema := newSchema(t)
			if order == "TS then Go" {
				migrateTS(t, schema)
				migrateGo(t, schema)
			} else {
				migrateGo(t, schema)
				migrateTS(t, schema)
			}
			if got, want := migrationVersions(t, schema), []int64{0, 1, 2, 3, 4, 5}; !reflect.DeepEqual(got, want) {
				t.Errorf("openworkflow_migrations versions %v, want %v", got, want)
			}
			// Both open again (nothing to apply) and work together.
			migrateGo(t, schema)
			migrateTS(t, schema)
			e := newEnvIn(t, schema, randomName("mig-"))
			ts := startTS(t, e.ns, tsOptions{Schema: schema})
			e.goWorker(goEcho(ow.Spec{Name: "mig-echo"}))
			var run tsRun
			ts.call("start", map[string]any{"name": "mig-echo", "input": map[string]any{"msg": "m"}}, &run)
			var out echoOut
			must(t, json.Unmarshal(ts.resultOf(run.ID, 20*time.Second), &out))
			if out.By != "go" || out.Echo.Msg != "m" {
				t.Errorf("echo in schema %s: %+v", schema, out)
			}
		})
	}
}

// Every column, index and constraint OpenWorkflow's migrations create is
// created identically by Go's. Go may add objects of its own (its own
// migration table, extra indexes), but never a column TypeScript's INSERTs
// would have to fill (NOT NULL without a default).
func TestGoSchemaContainsTheTSSchema(t *testing.T) {
	setup(t)
	tsSchema, goSchema := newSchema(t), newSchema(t)
	migrateTS(t, tsSchema)
	migrateGo(t, goSchema)
	tsObjs, goObjs := describeSchema(t, tsSchema), describeSchema(t, goSchema)
	have := map[string]bool{}
	for _, o := range goObjs {
		have[o] = true
	}
	want := map[string]bool{}
	for _, o := range tsObjs {
		want[o] = true
		if !have[o] {
			t.Errorf("the Go-migrated schema lacks: %s", o)
		}
	}
	owTables := []string{"workflow_runs.", "step_attempts.", "workflow_signals.", "openworkflow_migrations."}
	for _, o := range goObjs {
		if want[o] {
			continue
		}
		t.Logf("Go-only: %s", o)
		if col, ok := strings.CutPrefix(o, "column "); ok && strings.Contains(o, " null=NO default=") && strings.HasSuffix(o, "default=") {
			for _, tbl := range owTables {
				if strings.HasPrefix(col, tbl) {
					t.Errorf("Go adds a NOT NULL column without default to an OpenWorkflow table (TypeScript inserts would fail): %s", o)
				}
			}
		}
	}
}

// describeSchema lists a schema's columns, indexes and constraints as
// sorted lines, with the schema name replaced by "S".
func describeSchema(t *testing.T, schema string) []string {
	t.Helper()
	q := `
SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' null=' || is_nullable || ' default=' || coalesce(column_default, '')
FROM information_schema.columns WHERE table_schema = $1
UNION ALL
SELECT 'index ' || indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname = $1
UNION ALL
SELECT 'constraint ' || c.conname || ' ' || pg_get_constraintdef(c.oid) || ' validated=' || c.convalidated
FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1
ORDER BY 1`
	rows, err := pool.Query(context.Background(), q, schema)
	must(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		must(t, rows.Scan(&s))
		out = append(out, strings.ReplaceAll(s, schema, "S"))
	}
	must(t, rows.Err())
	if len(out) == 0 {
		t.Fatalf("schema %s is empty", schema)
	}
	return out
}

// `ow migrate` (config.Migrate) on a schema the TypeScript SDK migrated
// finds OpenWorkflow's line up to date and applies the Go SDK's own line,
// and reports both: before, it said nothing was applied.
func TestOwMigrateOnTSMigratedSchemaReportsBothLines(t *testing.T) {
	setup(t)
	schema := newSchema(t)
	migrateTS(t, schema)
	c, err := config.LoadWith(config.Options{Dir: t.TempDir(), Overrides: config.Overrides{PostgresURL: &pgURL, Schema: &schema}})
	must(t, err)
	m, err := c.Migrate(contextWithTimeout(t, 30*time.Second))
	must(t, err)
	if len(m.Lines) != 2 {
		t.Fatalf("ow migrate reported %d migration lines, want 2 (OpenWorkflow's and Go's): %+v", len(m.Lines), m)
	}
	owLine, goLine := m.Lines[0], m.Lines[1]
	if owLine.Table != "openworkflow_migrations" || owLine.Before != postgres.LatestMigrationVersion || len(owLine.Applied) != 0 {
		t.Errorf("OpenWorkflow's line after TypeScript migrated: %+v; want up to date at %d", owLine, postgres.LatestMigrationVersion)
	}
	var wantGo []int
	for _, v := range postgres.GoMigrationVersions() {
		wantGo = append(wantGo, int(v))
	}
	if goLine.Table != "openworkflow_go_migrations" || goLine.Before != -1 || goLine.After != postgres.LatestGoMigrationVersion || !reflect.DeepEqual(goLine.Applied, wantGo) {
		t.Errorf("the Go line on a schema TypeScript migrated: %+v; want -1 → %d, applied %v", goLine, postgres.LatestGoMigrationVersion, wantGo)
	}
	var goVersions int
	must(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM "`+schema+`"."openworkflow_go_migrations"`).Scan(&goVersions))
	if goVersions != len(wantGo) {
		t.Errorf("openworkflow_go_migrations holds %d versions, want %d", goVersions, len(wantGo))
	}
}
