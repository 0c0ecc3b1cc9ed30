// Package sqlset loads a backend's SQL from embedded .sql files: named
// statements, and fragments they share, checked when the backend starts
// rather than when a statement first runs.
//
// A file is a sequence of blocks, each opened by a header line:
//
//	-- name: claim_runs
//	-- What the statement does (comment lines document the file; they are
//	-- not part of the statement).
//	WITH expired AS (...) ...
//
//	-- fragment: owned_run(ns, run, worker)
//	owned_run AS (
//	  SELECT 1 FROM {{schema}}."workflow_runs" AS wr
//	  WHERE wr."namespace_id" = {{ns}} AND wr."id" = {{run}} ...
//	)
//
// A statement or fragment uses {{value}} for a value the backend gives at
// load time (the schema's quoted name, say), {{fragment}} for a fragment
// without parameters, and {{fragment(arg, ...)}} for one with parameters;
// a fragment refers to its parameters as {{param}}, and an argument may be
// any SQL text (commas inside parentheses or quotes do not split it).
// Loading fails, naming the file and the name, when a placeholder names
// nothing, a fragment gets the wrong number of arguments, a fragment
// parameter is unused in its body, a fragment or a value is never used, a
// name is defined twice, or a statement is not bound to the backend's
// queries struct (or one of its fields names no statement).
package sqlset

import (
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strings"
)

// block is one statement or fragment as written.
type block struct {
	file, name string
	params     []string // a fragment's parameters
	fragment   bool
	body       string
}

// Set is the statements of a backend, expanded.
type Set struct {
	stmts map[string]string
}

// Load reads every file of fsys matching pattern (fs.Glob), expands every
// statement with values (name → SQL text) and the files' fragments, and
// returns the statements, or the first error it found.
func Load(fsys fs.FS, pattern string, values map[string]string) (*Set, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("sqlset: no file matches %s", pattern)
	}
	blocks := map[string]*block{}
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		bs, err := parseFile(name, string(data))
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			if prev, dup := blocks[b.name]; dup {
				return nil, fmt.Errorf("sqlset: %s: %q is defined twice (also in %s)", b.file, b.name, prev.file)
			}
			if _, clash := values[b.name]; clash {
				return nil, fmt.Errorf("sqlset: %s: %q is both a block and a value given at load", b.file, b.name)
			}
			blocks[b.name] = b
		}
	}
	x := &expander{blocks: blocks, values: values, used: map[string]bool{}}
	set := &Set{stmts: map[string]string{}}
	for _, b := range blocks {
		if b.fragment {
			continue
		}
		out, err := x.expand(b, b.body, nil, nil, 0)
		if err != nil {
			return nil, err
		}
		set.stmts[b.name] = strings.TrimSpace(out)
	}
	for _, b := range sortedBlocks(blocks) {
		if b.fragment && !x.used[b.name] {
			return nil, fmt.Errorf("sqlset: %s: fragment %q is never used", b.file, b.name)
		}
	}
	for _, name := range sortedKeys(values) {
		if !x.used[name] {
			return nil, fmt.Errorf("sqlset: the value %q given at load is never used", name)
		}
	}
	return set, nil
}

// LoadInto is Load, then Bind of the statements to dst: what a backend
// calls once when it opens.
func LoadInto(fsys fs.FS, pattern string, values map[string]string, dst any) error {
	set, err := Load(fsys, pattern, values)
	if err != nil {
		return err
	}
	return set.Bind(dst)
}

// Bind sets each string field of the struct *dst tagged `sql:"name"` to
// the statement of that name. It fails when a tag names no statement, or a
// statement is bound to no field (dead SQL).
func (s *Set) Bind(dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("sqlset: Bind wants a pointer to a struct, got %T", dst)
	}
	v = v.Elem()
	bound := map[string]bool{}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name, ok := f.Tag.Lookup("sql")
		if !ok {
			continue
		}
		stmt, ok := s.stmts[name]
		if !ok {
			return fmt.Errorf("sqlset: field %s wants statement %q, which no file defines", f.Name, name)
		}
		if f.Type.Kind() != reflect.String {
			return fmt.Errorf("sqlset: field %s (statement %q) is not a string", f.Name, name)
		}
		v.Field(i).SetString(stmt)
		bound[name] = true
	}
	for _, name := range sortedKeys(s.stmts) {
		if !bound[name] {
			return fmt.Errorf("sqlset: statement %q is bound to no field of %T", name, dst)
		}
	}
	return nil
}

// Statement returns the statement name and whether there is one.
func (s *Set) Statement(name string) (string, bool) {
	st, ok := s.stmts[name]
	return st, ok
}

// parseFile cuts a file into its blocks.
func parseFile(file, text string) ([]*block, error) {
	var blocks []*block
	var cur *block
	var body strings.Builder
	flush := func() {
		if cur != nil {
			cur.body = body.String()
			blocks = append(blocks, cur)
		}
		body.Reset()
	}
	for n, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "-- name:"):
			flush()
			name := strings.TrimSpace(strings.TrimPrefix(trimmed, "-- name:"))
			if !isIdent(name) {
				return nil, fmt.Errorf("sqlset: %s:%d: bad statement name %q", file, n+1, name)
			}
			cur = &block{file: file, name: name}
		case strings.HasPrefix(trimmed, "-- fragment:"):
			flush()
			head := strings.TrimSpace(strings.TrimPrefix(trimmed, "-- fragment:"))
			name, params, err := parseHead(head)
			if err != nil {
				return nil, fmt.Errorf("sqlset: %s:%d: %w", file, n+1, err)
			}
			cur = &block{file: file, name: name, params: params, fragment: true}
		case cur == nil:
			if trimmed != "" && !strings.HasPrefix(trimmed, "--") {
				return nil, fmt.Errorf("sqlset: %s:%d: SQL before the first -- name: or -- fragment: line", file, n+1)
			}
		case strings.HasPrefix(trimmed, "--"):
			// A comment line documents the block in the file; it is not
			// sent (inside a fragment it would comment out what follows).
		default:
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	flush()
	return blocks, nil
}

// parseHead parses "name" or "name(a, b)".
func parseHead(head string) (string, []string, error) {
	name, rest, hasParams := strings.Cut(head, "(")
	name = strings.TrimSpace(name)
	if !isIdent(name) {
		return "", nil, fmt.Errorf("bad fragment name %q", name)
	}
	if !hasParams {
		return name, nil, nil
	}
	if !strings.HasSuffix(rest, ")") {
		return "", nil, fmt.Errorf("fragment %q: no closing parenthesis", name)
	}
	var params []string
	for _, p := range strings.Split(strings.TrimSuffix(rest, ")"), ",") {
		p = strings.TrimSpace(p)
		if !isIdent(p) {
			return "", nil, fmt.Errorf("fragment %q: bad parameter %q", name, p)
		}
		params = append(params, p)
	}
	return name, params, nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || (i > 0 && r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

// expander expands placeholders.
type expander struct {
	blocks map[string]*block
	values map[string]string
	used   map[string]bool
}

// maxDepth bounds fragments expanding fragments (a cycle otherwise).
const maxDepth = 16

// expand replaces the placeholders of text, which belongs to block in,
// with args the arguments of the fragment in (nil for a statement);
// usedParams records which of args text used (nil: a new record, checked
// here).
func (x *expander) expand(in *block, text string, args map[string]string, usedParams map[string]bool, depth int) (string, error) {
	if depth > maxDepth {
		return "", fmt.Errorf("sqlset: %s: %q: fragments nested more than %d deep (a cycle?)", in.file, in.name, maxDepth)
	}
	var out strings.Builder
	top := usedParams == nil
	if top {
		usedParams = map[string]bool{}
	}
	for {
		i := strings.Index(text, "{{")
		if i < 0 {
			if strings.Contains(text, "}}") {
				return "", fmt.Errorf("sqlset: %s: %q: '}}' without '{{'", in.file, in.name)
			}
			out.WriteString(text)
			break
		}
		out.WriteString(text[:i])
		j := closing(text, i+2)
		if j < 0 {
			return "", fmt.Errorf("sqlset: %s: %q: '{{' without '}}'", in.file, in.name)
		}
		ref := strings.TrimSpace(text[i+2 : j])
		text = text[j+2:]
		name, rawArgs, call := strings.Cut(ref, "(")
		name = strings.TrimSpace(name)
		if !call {
			if v, ok := args[name]; ok {
				usedParams[name] = true
				out.WriteString(v)
				continue
			}
			if v, ok := x.values[name]; ok {
				x.used[name] = true
				out.WriteString(v)
				continue
			}
		}
		b, ok := x.blocks[name]
		if !ok || !b.fragment {
			return "", fmt.Errorf("sqlset: %s: %q: {{%s}} names no value, parameter or fragment", in.file, in.name, ref)
		}
		var callArgs []string
		if call {
			if !strings.HasSuffix(rawArgs, ")") {
				return "", fmt.Errorf("sqlset: %s: %q: {{%s}}: no closing parenthesis", in.file, in.name, ref)
			}
			expandedArgs, err := x.expand(in, strings.TrimSuffix(rawArgs, ")"), args, usedParams, depth+1)
			if err != nil {
				return "", err
			}
			callArgs = splitArgs(expandedArgs)
		}
		if len(callArgs) != len(b.params) {
			return "", fmt.Errorf("sqlset: %s: %q: fragment %q takes %d arguments, given %d: %q", in.file, in.name, name, len(b.params), len(callArgs), callArgs)
		}
		bound := map[string]string{}
		for k, p := range b.params {
			bound[p] = callArgs[k]
		}
		x.used[name] = true
		body, err := x.expand(b, strings.TrimRight(b.body, "\n"), bound, nil, depth+1)
		if err != nil {
			return "", err
		}
		out.WriteString(body)
	}
	if top && in.fragment && args != nil {
		for _, p := range in.params {
			if !usedParams[p] {
				return "", fmt.Errorf("sqlset: %s: fragment %q never uses its parameter %q", in.file, in.name, p)
			}
		}
	}
	return out.String(), nil
}

// closing returns the index of the "}}" closing a placeholder opened
// before from, skipping nested "{{…}}" in arguments; -1 if none.
func closing(s string, from int) int {
	depth := 0
	for i := from; i+1 < len(s); i++ {
		switch {
		case s[i] == '{' && s[i+1] == '{':
			depth++
			i++
		case s[i] == '}' && s[i+1] == '}':
			if depth == 0 {
				return i
			}
			depth--
			i++
		}
	}
	return -1
}

// splitArgs splits a call's arguments at the commas outside parentheses
// and quotes.
func splitArgs(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var args []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			args = append(args, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(args, strings.TrimSpace(s[start:]))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedBlocks(m map[string]*block) []*block {
	var out []*block
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}
