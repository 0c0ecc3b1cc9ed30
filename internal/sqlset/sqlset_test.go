package sqlset

import (
	"strings"
	"testing"
	"testing/fstest"
)

func load(t *testing.T, files map[string]string, values map[string]string) (*Set, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, text := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(text)}
	}
	return Load(fsys, "*.sql", values)
}

func TestStatementsExpandValuesAndFragmentsWithArguments(t *testing.T) {
	set, err := load(t, map[string]string{
		"runs.sql": `
-- fragment: owned(ns, run)
owned AS (SELECT 1 FROM {{schema}}.runs WHERE ns = {{ns}} AND id = {{run}})

-- fragment: now
date_trunc('ms', NOW())

-- name: complete_run
-- Completes a run.
WITH {{owned($1, lower(concat($2, ',')))}}
UPDATE {{schema}}.runs SET at = {{now}} WHERE id = $2
`,
	}, map[string]string{"schema": `"ow"`})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := set.Statement("complete_run")
	want := `WITH owned AS (SELECT 1 FROM "ow".runs WHERE ns = $1 AND id = lower(concat($2, ',')))
UPDATE "ow".runs SET at = date_trunc('ms', NOW()) WHERE id = $2`
	if got != want {
		t.Fatalf("expanded:\n%s\nwant:\n%s", got, want)
	}
	var q struct {
		CompleteRun string `sql:"complete_run"`
	}
	if err := set.Bind(&q); err != nil || q.CompleteRun != want {
		t.Fatalf("Bind: %v, %q", err, q.CompleteRun)
	}
}

func TestLoadRefusesWhatWouldFailOnlyAtRunTime(t *testing.T) {
	cases := []struct {
		name, text, want string
		values           map[string]string
	}{
		{"an unknown placeholder", "-- name: a\nSELECT {{nope}}", `{{nope}} names no value`, nil},
		{"a fragment given too few arguments", "-- fragment: f(x, y)\n{{x}}{{y}}\n-- name: a\nSELECT {{f(1)}}", "takes 2 arguments, given 1", nil},
		{"a fragment parameter never used", "-- fragment: f(x, y)\n{{x}}\n-- name: a\nSELECT {{f(1, 2)}}", `never uses its parameter "y"`, nil},
		{"a fragment never used", "-- fragment: f\n1\n-- name: a\nSELECT 2", `fragment "f" is never used`, nil},
		{"a value never used", "-- name: a\nSELECT 1", `value "schema" given at load is never used`, map[string]string{"schema": "s"}},
		{"a name defined twice", "-- name: a\nSELECT 1\n-- name: a\nSELECT 2", `"a" is defined twice`, nil},
		{"an unclosed placeholder", "-- name: a\nSELECT {{x", "'{{' without '}}'", nil},
		{"a stray closing", "-- name: a\nSELECT '{\"a\":{\"b\":1}}'", "'}}' without '{{'", nil},
		{"SQL before any header", "SELECT 1\n-- name: a\nSELECT 2", "SQL before the first", nil},
		{"a fragment expanding itself", "-- fragment: f\n{{f}}\n-- name: a\nSELECT {{f}}", "nested more than", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, map[string]string{"q.sql": c.text}, c.values)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Load = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestBindRefusesUnboundStatementsAndUnknownNames(t *testing.T) {
	set, err := load(t, map[string]string{"q.sql": "-- name: a\nSELECT 1\n-- name: b\nSELECT 2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var onlyA struct {
		A string `sql:"a"`
	}
	if err := set.Bind(&onlyA); err == nil || !strings.Contains(err.Error(), `statement "b" is bound to no field`) {
		t.Fatalf("Bind with b unbound = %v", err)
	}
	var unknown struct {
		A, B string `sql:"a"`
		C    string `sql:"c"`
	}
	if err := set.Bind(&unknown); err == nil || !strings.Contains(err.Error(), `wants statement "c"`) {
		t.Fatalf("Bind with an unknown name = %v", err)
	}
}
