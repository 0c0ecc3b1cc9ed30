package runquery

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, src string) *Query {
	t.Helper()
	q, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return q
}

func TestParseTheIssuesExampleVerbatim(t *testing.T) {
	q := mustParse(t, `status = "failed" AND workflow = "sync-account" AND attrs.customer = "c-42" AND created > "2026-11-01"`)
	and, ok := q.Root.(*And)
	if !ok || len(and.Terms) != 4 {
		t.Fatalf("root = %#v, want an AND of four predicates", q.Root)
	}
	var got []string
	Walk(q.Root, func(p *Predicate) { got = append(got, p.Field.String()+" "+string(p.Op)) })
	want := []string{"status =", "workflow =", "attrs.customer =", "created >"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("predicates = %v, want %v", got, want)
	}
	created := and.Terms[3].(*Predicate)
	if v := created.Values[0]; v != time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) {
		t.Fatalf("created value = %v, want 2026-11-01 midnight UTC", v)
	}
	if attr := and.Terms[2].(*Predicate); attr.Field.Attr != "customer" || attr.Values[0] != "c-42" {
		t.Fatalf("attrs predicate = %+v", attr)
	}
}

func TestParseOperatorsAndValues(t *testing.T) {
	ts := time.Date(2026, 11, 1, 12, 30, 0, 500e6, time.UTC)
	cases := []struct {
		name, src string
		op        Op
		values    []any
	}{
		{"double equals reads as equals", `workflow == "a"`, Eq, []any{"a"}},
		{"not equal", `workflow != "a"`, Ne, []any{"a"}},
		{"sql not equal", `workflow <> "a"`, Ne, []any{"a"}},
		{"less than on an int", `priority < 5`, Lt, []any{int64(5)}},
		{"at most", `priority <= -5`, Le, []any{int64(-5)}},
		{"greater than an RFC 3339 time", `created > "2026-11-01T12:30:00.5Z"`, Gt, []any{ts}},
		{"a time with an offset is read in UTC", `finished >= "2026-11-01T13:30:00.5+01:00"`, Ge, []any{ts}},
		{"in", `status IN ("failed", "canceled")`, In, []any{"failed", "canceled"}},
		{"not in, lower case", `status not in ('failed')`, NotIn, []any{"failed"}},
		{"starts with", `workflow STARTS_WITH "sync-"`, StartsWith, []any{"sync-"}},
		{"not starts with", `id NOT STARTS_WITH "wrun_"`, NotStartsWith, []any{"wrun_"}},
		{"is null", `parent IS NULL`, IsNull, nil},
		{"is not null, mixed case", `schedule Is Not Null`, IsNotNull, nil},
		{"single quotes with an escaped quote", `idempotency_key = 'it\'s "x"'`, Eq, []any{`it's "x"`}},
		{"an attribute keeps its literal: float", `attrs.score > 1.5`, Gt, []any{1.5}},
		{"an attribute keeps its literal: bool", `attrs.vip = TRUE`, Eq, []any{true}},
		{"a legacy status", `status = "succeeded"`, Eq, []any{"succeeded"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, ok := mustParse(t, c.src).Root.(*Predicate)
			if !ok {
				t.Fatalf("root is not a predicate")
			}
			if p.Op != c.op || !reflect.DeepEqual(p.Values, c.values) {
				t.Fatalf("got %s %#v, want %s %#v", p.Op, p.Values, c.op, c.values)
			}
		})
	}
}

func TestParsePrecedence(t *testing.T) {
	q := mustParse(t, `NOT status = "failed" OR workflow = "a" and (priority > 1 OR priority < -1)`)
	or, ok := q.Root.(*Or)
	if !ok || len(or.Terms) != 2 {
		t.Fatalf("root = %#v, want OR of two", q.Root)
	}
	if _, ok := or.Terms[0].(*Not); !ok {
		t.Fatalf("first OR term = %#v, want NOT (NOT binds tighter than OR)", or.Terms[0])
	}
	and, ok := or.Terms[1].(*And)
	if !ok || len(and.Terms) != 2 {
		t.Fatalf("second OR term = %#v, want AND of two (AND binds tighter than OR)", or.Terms[1])
	}
	if _, ok := and.Terms[1].(*Or); !ok {
		t.Fatalf("parenthesised group = %#v, want OR", and.Terms[1])
	}
}

func TestParseBlankIsNoFilter(t *testing.T) {
	for _, src := range []string{"", "  \n\t"} {
		q, err := Parse(src)
		if q != nil || err != nil {
			t.Fatalf("Parse(%q) = %v, %v; want nil, nil", src, q, err)
		}
	}
}

func TestParseErrorsNameThePosition(t *testing.T) {
	cases := []struct {
		name, src  string
		line, col  int
		msgContain string
	}{
		{"unknown field", `status = "failed" AND colour = "red"`, 1, 23, `unknown field "colour"`},
		{"unknown dotted field", `workflow.name = "x"`, 1, 1, `unknown field "workflow.name"`},
		{"attrs without a name", `attrs = "x"`, 1, 1, "attrs.<name>"},
		{"int field given a string", `priority = "high"`, 1, 12, `"high" is not an integer`},
		{"int field given a fraction", `priority = 1.5`, 1, 12, "1.5 is not an integer"},
		{"time field given a bad time", `created > "yesterday"`, 1, 11, "not an RFC 3339 time"},
		{"time field given a number", `created > 20261101`, 1, 11, "not a time string"},
		{"unknown status", `status = "done"`, 1, 10, `unknown status "done"`},
		{"unknown status in a list, second line", "workflow = \"a\"\n  AND status IN (\"failed\", \"exploded\")", 2, 28, `unknown status "exploded"`},
		{"operator the type lacks", `priority STARTS_WITH "1"`, 1, 10, "operator STARTS_WITH is not supported for priority"},
		{"missing value", `status =`, 1, 9, "unexpected"},
		{"unclosed parenthesis", `(status = "failed"`, 1, 19, `")"`},
		{"unterminated string", `status = "failed`, 1, 10, ""},
		{"trailing garbage", `status = "failed" LIMIT 10`, 1, 19, "unexpected"},
		{"null as a value", `version = NULL`, 1, 11, "unexpected"},
		{"a bare word as a value", `status = failed`, 1, 10, "unexpected"},
		{"a function call", `lower(workflow) = "a"`, 1, 6, "unexpected"},
		{"empty IN list", `status IN ()`, 1, 12, "unexpected"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.src)
			var qe *Error
			if !errors.As(err, &qe) {
				t.Fatalf("Parse(%q) = %v, want an *Error", c.src, err)
			}
			if !errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("error %v does not wrap ErrInvalidQuery", err)
			}
			if qe.Pos.Line != c.line || qe.Pos.Column != c.col {
				t.Fatalf("Parse(%q) error at %s (%v), want %d:%d", c.src, qe.Pos, err, c.line, c.col)
			}
			if !strings.Contains(qe.Msg, c.msgContain) {
				t.Fatalf("error %q does not contain %q", qe.Msg, c.msgContain)
			}
		})
	}
}

func TestParseRejectsTooLongQuery(t *testing.T) {
	_, err := Parse(`workflow = "` + strings.Repeat("a", MaxLength) + `"`)
	if !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), "allowed") {
		t.Fatalf("err = %v, want a length error", err)
	}
}

func TestAttrValuesChecksTheDeclaredType(t *testing.T) {
	ts := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ok := []struct {
		src  string
		typ  Type
		want []any
	}{
		{`attrs.a = "x"`, Keyword, []any{"x"}},
		{`attrs.a IN ("x", "y")`, KeywordList, []any{"x", "y"}},
		{`attrs.a >= 3`, Int, []any{int64(3)}},
		{`attrs.a < 3`, Float, []any{3.0}},
		{`attrs.a != false`, Bool, []any{false}},
		{`attrs.a > "2026-11-01"`, Time, []any{ts}},
		{`attrs.a IS NULL`, Int, []any{}},
	}
	for _, c := range ok {
		p := mustParse(t, c.src).Root.(*Predicate)
		got, err := p.AttrValues(c.typ)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s as %s: %#v, %v; want %#v", c.src, c.typ, got, err, c.want)
		}
	}
	bad := []struct {
		src      string
		typ      Type
		col      int
		contains string
	}{
		{`attrs.a = 3`, Keyword, 11, "attrs.a has type keyword; 3 is not a string"},
		{`attrs.a > "x"`, KeywordList, 9, "operator > is not supported for attrs.a (a keyword_list search attribute)"},
		{`attrs.a = 1.5`, Int, 11, "not an integer"},
		{`attrs.a = "1"`, Float, 11, "not a number"},
		{`attrs.a < true`, Bool, 9, "operator < is not supported"},
		{`attrs.a = "soon"`, Time, 11, "not an RFC 3339 time"},
		{`attrs.a IN (1, "x")`, Int, 16, `"x" is not an integer`},
	}
	for _, c := range bad {
		p := mustParse(t, c.src).Root.(*Predicate)
		_, err := p.AttrValues(c.typ)
		var qe *Error
		if !errors.As(err, &qe) || qe.Pos.Column != c.col || !strings.Contains(qe.Msg, c.contains) {
			t.Errorf("%s as %s: err = %v, want at 1:%d containing %q", c.src, c.typ, err, c.col, c.contains)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`status = "failed" AND workflow = "sync-account" AND attrs.customer = "c-42" AND created > "2026-11-01"`,
		`NOT (priority > 1 OR attrs.x IN (1, 2.5, "a", true))`, `parent IS NOT NULL`, `'`, `(((`, `attrs.`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		q, err := Parse(src)
		if err != nil {
			var qe *Error
			if !errors.As(err, &qe) || qe.Pos.Line < 1 || qe.Pos.Column < 1 {
				t.Fatalf("Parse(%q) = %v: not an *Error with a position", src, err)
			}
			return
		}
		if q != nil {
			Walk(q.Root, func(p *Predicate) {
				for _, typ := range Types {
					_, _ = p.AttrValues(typ)
				}
			})
		}
	})
}
