package openflow

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseErrors: every invalid flow is refused with the JSON path of
// the problem and what was expected.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, doc string
		want      []Problem // each must be among the problems (message: substring)
	}{
		{"not JSON", `{"value": `, []Problem{{"", "not valid JSON"}}},
		{"empty", ``, []Problem{{"", "empty document"}}},
		{"not an object", `[1]`, []Problem{{"", "expected an OpenFlow object"}}},
		{"no value", `{"summary": "x"}`, []Problem{{"value", "missing; expected a FlowValue object"}}},
		{"no modules", `{"value": {}}`, []Problem{{"value.modules", "missing; expected an array of modules"}}},
		{"modules not an array", `{"value": {"modules": {}}}`, []Problem{{"value.modules", "expected an array of modules, found an object"}}},
		{"a loop without an iterator", `{"value": {"modules": [{"id":"a","value":{"type":"identity"}},{"id":"b","value":{"type":"identity"}},
			{"id": "c", "value": {"type": "forloopflow", "modules": []}}]}}`,
			[]Problem{{"value.modules[2].value.iterator", `missing; expected an input transform {"type": "javascript", "expr": …} or {"type": "static", "value": […]}`}}},
		{"an unknown module type", `{"value": {"modules": [{"id": "a", "value": {"type": "loop"}}]}}`,
			[]Problem{{"value.modules[0].value.type", `unknown module type "loop"; expected one of identity, rawscript, script, flow, forloopflow, whileloopflow, branchone, branchall`}}},
		{"an unsupported module type", `{"value": {"modules": [{"id": "a", "value": {"type": "aiagent"}}]}}`,
			[]Problem{{"value.modules[0].value.type", `module type "aiagent" is not supported`}}},
		{"an unsupported language", `{"value": {"modules": [{"id": "a", "value": {"type": "rawscript", "language": "php", "content": "<?php"}}]}}`,
			[]Problem{{"value.modules[0].value.language", `unsupported language "php": this engine runs bash, bun, deno, go, python3 scripts`}}},
		{"an unknown language", `{"value": {"modules": [{"id": "a", "value": {"type": "rawscript", "language": "cobol", "content": ""}}]}}`,
			[]Problem{{"value.modules[0].value.language", `unknown language "cobol"; expected one of bash, bun, deno, go, python3`}}},
		{"a rawscript without content", `{"value": {"modules": [{"id": "a", "value": {"type": "rawscript", "language": "bash"}}]}}`,
			[]Problem{{"value.modules[0].value.content", "missing; expected a string"}}},
		{"a mistyped field", `{"value": {"modules": [{"id": 7, "value": {"type": "identity"}, "continue_on_error": "yes"}]}}`,
			[]Problem{{"value.modules[0].id", "expected a string, found a number"}, {"value.modules[0].continue_on_error", "expected true or false, found a string"}}},
		{"a duplicate id", `{"value": {"modules": [{"id": "a", "value": {"type": "identity"}}, {"id": "x", "value": {"type": "branchall",
			"branches": [{"modules": [{"id": "a", "value": {"type": "identity"}}]}]}}]}}`,
			[]Problem{{"value.modules[1].value.branches[0].modules[0].id", `duplicate id "a": already used by value.modules[0]`}}},
		{"an id with a slash", `{"value": {"modules": [{"id": "a/b", "value": {"type": "identity"}}]}}`,
			[]Problem{{"value.modules[0].id", `invalid id "a/b"`}}},
		{"an unknown transform type", `{"value": {"modules": [{"id": "a", "value": {"type": "rawscript", "language": "bash", "content": "",
			"input_transforms": {"x": {"type": "dynamic"}}}}]}}`,
			[]Problem{{"value.modules[0].value.input_transforms.x.type", `unknown input transform type "dynamic"; expected "static" or "javascript"`}}},
		{"a syntax error in an expression", `{"value": {"modules": [{"id": "a", "value": {"type": "branchone", "default": [],
			"branches": [{"expr": "results.a ===", "modules": []}]}}]}}`,
			[]Problem{{"value.modules[0].value.branches[0].expr", `JavaScript syntax error in "results.a ==="`}}},
		{"a syntax error in a skip_if", `{"value": {"modules": [{"id": "a", "value": {"type": "identity"}, "skip_if": {"expr": "(("}}]}}`,
			[]Problem{{"value.modules[0].skip_if.expr", "JavaScript syntax error"}}},
		{"a bad retry", `{"value": {"modules": [{"id": "a", "value": {"type": "identity"}, "retry": {"constant": {"attempts": -1},
			"exponential": {"attempts": 1, "seconds": 0, "random_factor": 300}}}]}}`,
			[]Problem{{"value.modules[0].retry.constant.attempts", "expected an integer of at least 0"},
				{"value.modules[0].retry.exponential.seconds", "at least 1"}, {"value.modules[0].retry.exponential.random_factor", "from 0 to 100"}}},
		{"a bad timeout", `{"value": {"modules": [{"id": "a", "value": {"type": "identity"}, "timeout": "10"}]}}`,
			[]Problem{{"value.modules[0].timeout", "or a number, found a string"}}},
		{"a branchone without default", `{"value": {"modules": [{"id": "a", "value": {"type": "branchone", "branches": []}}]}}`,
			[]Problem{{"value.modules[0].value.default", "missing; expected an array of modules"}}},
		{"a path script escaping its directory", `{"value": {"modules": [{"id": "a", "value": {"type": "script", "path": "../etc/x", "input_transforms": {}}}]}}`,
			[]Problem{{"value.modules[0].value.path", "invalid path"}}},
		{"an invalid schema", `{"value": {"modules": []}, "schema": {"type": "objekt"}}`,
			[]Problem{{"schema", "invalid JSON Schema"}}},
		{"flow_env not an object", `{"value": {"modules": [], "flow_env": [1]}}`,
			[]Problem{{"value.flow_env", "expected an object of names to values, found an array"}}},
		{"bad YAML", "value:\n  modules: [\n", []Problem{{"", "not valid JSON or YAML"}}},
		{"a YAML flow with a problem", "summary: y\nvalue:\n  modules:\n    - id: a\n      value:\n        type: forloopflow\n        modules: []\n",
			[]Problem{{"value.modules[0].value.iterator", "missing"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse([]byte(c.doc))
			var ve *ValidationError
			if !errors.As(err, &ve) || f != nil {
				t.Fatalf("Parse = %v, %v; want a *ValidationError", f, err)
			}
			for _, w := range c.want {
				found := false
				for _, p := range ve.Problems {
					found = found || p.Path == w.Path && strings.Contains(p.Message, w.Message)
				}
				if !found {
					t.Errorf("no problem %s: %q among:\n%s", w.Path, w.Message, ve)
				}
			}
		})
	}
}

// TestParseDefaults checks Windmill's defaults and the reference's
// decisions (§7): missing skip_failures and skip_failure are false,
// branchall runs in parallel, ids are generated, bare numbers are static
// transforms.
func TestParseDefaults(t *testing.T) {
	f, err := Parse([]byte(`{"summary":"s","value":{"modules":[
		{"value":{"type":"forloopflow","iterator":{"type":"static","value":[]},"modules":[{"value":{"type":"identity"}}]}},
		{"id":"_1","value":{"type":"branchall","branches":[{"modules":[]}]},"timeout":5,"sleep":2},
		{"value":{"type":"rawscript","language":"python3","content":"def main(): pass","input_transform":{"x":{"type":"static"}}}}],
		"failure_module":{"value":{"type":"identity"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	mods := f.Value.Modules
	loop := mods[0].Value.(ForLoop)
	if loop.SkipFailures || loop.Parallel {
		t.Error("forloop skip_failures and parallel default to false")
	}
	all := mods[1].Value.(BranchAll)
	if !all.Parallel || all.Branches[0].SkipFailure {
		t.Error("branchall parallel defaults to true, skip_failure to false")
	}
	if mods[0].ID != "_2" || loop.Modules[0].ID != "_3" || mods[2].ID != "_4" || f.Value.FailureModule.ID != "failure" {
		t.Errorf("generated ids %s %s %s %s; want _2 _3 _4 failure (_1 is taken)", mods[0].ID, loop.Modules[0].ID, mods[2].ID, f.Value.FailureModule.ID)
	}
	if to := mods[1].Timeout; to == nil || !to.Static || string(to.Value) != "5" {
		t.Errorf("timeout 5 is a static transform: %+v", to)
	}
	rs := mods[2].Value.(RawScript)
	if len(rs.InputTransforms) != 1 || string(rs.InputTransforms[0].Value) != "null" {
		t.Errorf("input_transform alias, static without value is null: %+v", rs.InputTransforms)
	}
	// a document parses to the same flow twice (runs parse it every pass)
	g, err := Parse(f.JSON())
	if err != nil || g.Value.Modules[0].ID != "_2" {
		t.Fatalf("reparse: %v", err)
	}
}

// TestParseFileYAMLInline: a YAML flow file in Windmill CLI's layout, with
// !inline script contents.
func TestParseFileYAMLInline(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.py"), []byte("def main():\n    return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flow := "summary: inline\nvalue:\n  modules:\n    - id: a\n      value:\n        type: rawscript\n        language: python3\n        content: '!inline a.py'\n        input_transforms: {}\n"
	p := filepath.Join(dir, "flow.yaml")
	if err := os.WriteFile(p, []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ParseFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Value.Modules[0].Value.(RawScript).Content; got != "def main():\n    return 1\n" {
		t.Errorf("content %q", got)
	}
	var doc map[string]any
	if err := json.Unmarshal(f.JSON(), &doc); err != nil {
		t.Fatalf("JSON(): %v", err)
	}
}

// TestValidateArgs: the flow's JSON Schema checks its input.
func TestValidateArgs(t *testing.T) {
	f, err := Parse([]byte(`{"value":{"modules":[]},"schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
		"properties":{"n":{"type":"integer","format":""},"tags":{"type":"array","items":{"type":"string"}},"db":{"type":"object","format":"resource-postgresql"}},
		"required":["n"],"order":["n"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.ValidateArgs(raw(`{"n": 1, "tags": ["a"], "db": {}}`)); err != nil {
		t.Errorf("valid args: %v", err)
	}
	err = f.ValidateArgs(raw(`{"n": "one", "tags": ["a", 2]}`))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want a ValidationError, got %v", err)
	}
	paths := map[string]bool{}
	for _, p := range ve.Problems {
		paths[p.Path] = true
	}
	if !paths["n"] || !paths["tags[1]"] {
		t.Errorf("problems %v, want paths n and tags[1]", ve.Problems)
	}
	if err := f.ValidateArgs(raw(`[1]`)); err == nil {
		t.Error("an array is not a flow input")
	}
}

// FuzzParse: the parser and validator never panic, and an accepted
// document parses again to the same module ids.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/dirs/f/*/*.flow.yaml")
	corpus, _ := filepath.Glob("testdata/corpus/*.json")
	for _, p := range append(seeds, corpus...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"value":{"modules":[{"value":{"type":"forloopflow","iterator":{"type":"javascript","expr":"[1]"},"modules":[]}}]}}`))
	f.Add([]byte("value:\n  modules:\n    - value: {type: identity}\n      sleep: 1\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte(`{"value":{"modules":[{"id":"a","value":{"type":"branchone","branches":[{"expr":"` + "`${`" + `","modules":[]}],"default":[]}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := Parse(data)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("error %v is not a ValidationError with problems", err)
			}
			return
		}
		again, err := Parse(fl.JSON())
		if err != nil {
			t.Fatalf("an accepted flow's JSON does not parse again: %v", err)
		}
		var ids, ids2 []string
		walkModules(fl, func(m *Module) { ids = append(ids, m.ID) })
		walkModules(again, func(m *Module) { ids2 = append(ids2, m.ID) })
		if strings.Join(ids, ",") != strings.Join(ids2, ",") {
			t.Fatalf("ids %v then %v", ids, ids2)
		}
	})
}

// FuzzExprSyntax: deciding how to wrap an expression and reading a
// script's parameters never panic on any text.
func FuzzExprSyntax(f *testing.F) {
	for _, s := range []string{"a + b", "`${a;}`", "return 1", "/* x", "'unterminated", "export function main(a: {b: string}, c = `)`) {}",
		"export const main = async (x: Array<number>, y?: string) => x", "x=\"$1\"\ny=\"${2:-d}\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = wrapExpr(s)
		_, _ = tsParamNames(s)
		_ = bashArgs(s, raw(`{"x": 1}`))
		_, _ = fastPath(s, exprScope{vars: map[string]json.RawMessage{"flow_input": raw(`{"a":{"b":1}}`)}})
	})
}
