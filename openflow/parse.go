package openflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Problem is one reason a flow is invalid: where (a JSON path such as
// "value.modules[2].value.iterator"; "" for the document itself) and
// what was wrong or expected.
type Problem struct {
	// Path is the JSON path of the problem ("" for the whole document).
	Path string `json:"path"`
	// Message says what was wrong and what was expected.
	Message string `json:"message"`
}

// String returns "path: message".
func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// ValidationError is an invalid flow or invalid flow input. It lists every
// problem found, in document order. Nothing has run when it is returned.
type ValidationError struct {
	// What names the thing validated, e.g. "flow" or "flow input".
	What string `json:"what"`
	// Problems lists every problem found, at least one.
	Problems []Problem `json:"problems"`
}

// Error lists the problems, one per line after the first.
func (e *ValidationError) Error() string {
	what := e.What
	if what == "" {
		what = "flow"
	}
	if len(e.Problems) == 1 {
		return fmt.Sprintf("invalid %s: %s", what, e.Problems[0])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid %s: %d problems:", what, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// maxDocumentSize bounds a flow document: 16 MiB.
const maxDocumentSize = 16 << 20

// Parse parses and validates an OpenFlow document, JSON or YAML (a
// document whose first non-blank character is '{' is JSON). It returns a
// *[ValidationError] listing every problem with its JSON path when the
// document is not a valid flow: a missing or mistyped field, an unknown
// module or transform type, an unsupported script language, a duplicate
// or malformed module id, or a JavaScript expression with a syntax error.
// Unknown keys are ignored, as Windmill does.
func Parse(data []byte) (*Flow, error) {
	return parse(data, "")
}

// ParseFile reads and parses the flow file path, JSON or YAML. In a YAML
// file, a rawscript content "!inline <file>" (the layout of Windmill's
// CLI) is replaced by the contents of <file>, relative to the flow file's
// directory.
func ParseFile(path string) (*Flow, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(data, filepath.Dir(path))
}

func parse(data []byte, inlineDir string) (*Flow, error) {
	if len(data) > maxDocumentSize {
		return nil, &ValidationError{Problems: []Problem{{Message: fmt.Sprintf("document is %d bytes, more than the %d allowed", len(data), maxDocumentSize)}}}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	raw, err := toJSON(data, inlineDir)
	if err != nil {
		return nil, &ValidationError{Problems: []Problem{{Message: err.Error()}}}
	}
	return decodeFlow(raw)
}

// toJSON returns the document as JSON: JSON as is (checked), YAML
// converted.
func toJSON(data []byte, inlineDir string) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("empty document: expected an OpenFlow object {summary, value: {modules: [...]}, schema}")
	}
	if trimmed[0] == '{' {
		if !json.Valid(trimmed) {
			var v any
			err := json.Unmarshal(trimmed, &v)
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		return trimmed, nil
	}
	return yamlToJSON(data, inlineDir)
}

// decoder walks a JSON document, building the typed flow and collecting
// problems with their paths.
type decoder struct {
	problems []Problem
	ids      map[string]string // module id → path of its first use
	unnamed  []*Module         // modules without an id, in document order
	exprs    *evaluator        // compiles expressions for syntax checks
}

func (d *decoder) fail(path, format string, args ...any) {
	d.problems = append(d.problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// syntaxCheckEvaluator compiles expressions during validation (its
// program cache then serves evaluations of the same texts).
var syntaxCheckEvaluator = newEvaluator(0)

func decodeFlow(raw json.RawMessage) (*Flow, error) {
	d := &decoder{ids: map[string]string{}, exprs: syntaxCheckEvaluator}
	f := &Flow{raw: raw}
	root := d.object("", raw, "an OpenFlow object {summary, value, schema}")
	if root != nil {
		f.Summary = root.str("summary", false)
		f.Description = root.str("description", false)
		if v, ok := root.get("value", "a FlowValue object {modules: [...]}"); ok {
			f.Value = d.flowValue(join("", "value"), v)
		}
		if s, ok := root.fields["schema"]; ok && !isNull(s) {
			if jsonKind(s) != "an object" && jsonKind(s) != "a boolean" {
				d.fail("schema", "expected a JSON Schema (an object), found %s", jsonKind(s))
			} else if cs, err := compileSchema(s); err != nil {
				d.fail("schema", "invalid JSON Schema: %v", err)
			} else {
				f.Schema, f.schema = compact(s), cs
			}
		}
	}
	d.nameUnnamed(f)
	if len(d.problems) > 0 {
		return nil, &ValidationError{What: "flow", Problems: d.problems}
	}
	return f, nil
}

// nameUnnamed gives modules without an id "_1", "_2", … in document order
// (skipping ids in use), and an unnamed failure module "failure".
func (d *decoder) nameUnnamed(f *Flow) {
	n := 0
	for _, m := range d.unnamed {
		if fm := f.Value.FailureModule; fm == m {
			if _, used := d.ids["failure"]; !used {
				m.ID = "failure"
				d.ids[m.ID] = m.path
				continue
			}
		}
		for {
			n++
			id := "_" + strconv.Itoa(n)
			if _, used := d.ids[id]; !used {
				m.ID = id
				d.ids[id] = m.path
				break
			}
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// object is a decoded JSON object with its path.
type object struct {
	d      *decoder
	path   string
	fields map[string]json.RawMessage
	order  []string
}

// object decodes raw as an object, or records that one (described by
// want) was expected.
func (d *decoder) object(path string, raw json.RawMessage, want string) *object {
	if jsonKind(raw) != "an object" {
		d.fail(path, "expected %s, found %s", want, jsonKind(raw))
		return nil
	}
	ms, err := objectMembers(raw)
	if err != nil {
		d.fail(path, "malformed object: %v", err)
		return nil
	}
	o := &object{d: d, path: path, fields: make(map[string]json.RawMessage, len(ms))}
	for _, m := range ms {
		o.fields[m.key] = m.val
		o.order = append(o.order, m.key)
	}
	return o
}

// get returns a required field, recording its absence (want describes it).
func (o *object) get(key, want string) (json.RawMessage, bool) {
	v, ok := o.fields[key]
	if !ok {
		o.d.fail(join(o.path, key), "missing; expected %s", want)
		return nil, false
	}
	return v, true
}

// opt returns an optional field; null counts as absent.
func (o *object) opt(key string) (json.RawMessage, bool) {
	v, ok := o.fields[key]
	if !ok || isNull(v) {
		return nil, false
	}
	return v, true
}

func (o *object) str(key string, required bool) string {
	var v json.RawMessage
	var ok bool
	if required {
		v, ok = o.get(key, "a string")
	} else {
		v, ok = o.opt(key)
	}
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		o.d.fail(join(o.path, key), "expected a string, found %s", jsonKind(v))
	}
	return s
}

func (o *object) boolean(key string, def bool) bool {
	v, ok := o.opt(key)
	if !ok {
		return def
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		o.d.fail(join(o.path, key), "expected true or false, found %s", jsonKind(v))
		return def
	}
	return b
}

func (o *object) number(key string, def float64) float64 {
	v, ok := o.opt(key)
	if !ok {
		return def
	}
	var n float64
	if err := json.Unmarshal(v, &n); err != nil {
		o.d.fail(join(o.path, key), "expected a number, found %s", jsonKind(v))
		return def
	}
	return n
}

func (o *object) integer(key string, min int) int {
	n := o.number(key, float64(min))
	if n != float64(int(n)) || n < float64(min) || n > 1e9 {
		o.d.fail(join(o.path, key), "expected an integer of at least %d, found %v", min, n)
		return min
	}
	return int(n)
}

func (o *object) sub(key, want string) *object {
	v, ok := o.opt(key)
	if !ok {
		return nil
	}
	return o.d.object(join(o.path, key), v, want)
}

// checkExpr records a syntax error in a non-empty expression.
func (d *decoder) checkExpr(path, expr string) {
	if strings.TrimSpace(expr) == "" {
		return
	}
	if _, err := d.exprs.compile(expr); err != nil {
		d.fail(path, "JavaScript syntax error in %q: %v", expr, err)
	}
}

// checkLanguage records a language this engine cannot run.
func (d *decoder) checkLanguage(path, lang string) {
	switch {
	case lang == "":
	case slices.Contains(Languages, lang):
	case slices.Contains(windmillLanguages, lang):
		d.fail(path, "unsupported language %q: this engine runs %s scripts", lang, strings.Join(Languages, ", "))
	default:
		d.fail(path, "unknown language %q; expected one of %s", lang, strings.Join(Languages, ", "))
	}
}

// Languages are the rawscript languages this engine runs, each as a
// subprocess (see docs/openflow.md for the runners and how to install
// them).
var Languages = []string{"bash", "bun", "deno", "go", "python3"}

// windmillLanguages are Windmill's other languages: valid OpenFlow, not
// run here.
var windmillLanguages = []string{"powershell", "postgresql", "mysql", "bigquery", "snowflake", "mssql",
	"oracledb", "graphql", "nativets", "bunnative", "php", "rust", "ansible", "csharp", "nu", "java",
	"ruby", "duckdb", "rlang"}
