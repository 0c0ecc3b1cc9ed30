package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

// versions reads a version table of the file.
func versions(t *testing.T, b *Backend, table string) []int {
	t.Helper()
	rows, err := b.db.QueryContext(context.Background(), `SELECT "version" FROM "`+table+`" ORDER BY 1`)
	if err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	return vs
}

func TestGoMigrationLine(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ow.db")
	b, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := versions(t, b, "openworkflow_migrations"); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("OpenWorkflow's line = %v, want exactly its versions 0–5", got)
	}
	if got := versions(t, b, "openworkflow_go_migrations"); !slices.Equal(got, []int{0, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17, 18, 19, 20, 21, 22, 23}) {
		t.Errorf("this SDK's line = %v, want [0 4 5 7 8 9 10 11 12 13 14 15 17 18 19 20 21 22 23]", got)
	}

	// A file on which a higher version of this SDK's line was recorded
	// before version 4 (changes landing out of order) still gets 4.
	if _, err := b.db.ExecContext(ctx, `DROP TABLE "workflow_definitions";
		DELETE FROM "openworkflow_go_migrations" WHERE "version" = 4;
		INSERT INTO "openworkflow_go_migrations" ("version") VALUES (99)`); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer b.Close()
	if got := versions(t, b, "openworkflow_go_migrations"); !slices.Equal(got, []int{0, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17, 18, 19, 20, 21, 22, 23, 99}) {
		t.Errorf("this SDK's line after reopening = %v, want [0 4 5 7 8 9 10 11 12 13 14 15 17 18 19 20 21 22 23 99]", got)
	}
	if _, err := b.ListDefinitions(ctx, backendListAll); err != nil {
		t.Errorf("the definitions table was not created again: %v", err)
	}
}

var backendListAll = backend.ListDefinitionsParams{}
