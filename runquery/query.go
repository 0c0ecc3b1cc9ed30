// Package runquery parses and type-checks the query language of run
// lists: `GET /v1/runs?q=`, `ow runs list --query`, the dashboard's search
// box and the bulk actions. The language is the subset of Temporal's List
// Filter (https://docs.temporal.io/list-filter) that docs/queries.md
// describes, e.g.
//
//	status = "failed" AND workflow = "sync-account" AND attrs.customer = "c-42" AND created > "2026-11-01"
//
// [Parse] turns the text into a tree of [Node]s whose predicates carry
// values of the field's Go type; every error is an [*Error] giving the
// line and column of what was wrong. Search attributes (attrs.<name>) are
// typed by what their namespace declared, which only a backend knows: a
// backend checks them when it compiles the query, with
// [Predicate.AttrValues]. The package knows no backend and writes no SQL:
// each backend compiles the tree to its own dialect, binding every value
// as a parameter.
package runquery

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// MaxLength is the longest query accepted, in bytes (longer text fails
// with an [*Error] at 1:1): it bounds the work a query costs and the bind
// parameters it needs (well under SQLite's 32,766).
const MaxLength = 4096

// ErrInvalidQuery is wrapped by every [*Error].
var ErrInvalidQuery = errors.New("invalid query")

// Position is where in the query text an error is: Line and Column count
// from 1, Column in bytes; Offset is the byte offset from 0.
type Position struct {
	Offset int `json:"offset"`
	Line   int `json:"line"`
	Column int `json:"column"`
}

// String is "line:column".
func (p Position) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Column) }

func positionOf(p lexer.Position) Position {
	return Position{Offset: p.Offset, Line: p.Line, Column: p.Column}
}

// Error is a query that cannot be run: a syntax error, an unknown field,
// an operator the field's type has no use for, or a value of the wrong
// type. Its message names what was wrong and Pos where. It wraps
// [ErrInvalidQuery].
type Error struct {
	Pos Position
	Msg string
}

// Error is "invalid query at line:column: message".
func (e *Error) Error() string { return fmt.Sprintf("invalid query at %s: %s", e.Pos, e.Msg) }

// Unwrap returns [ErrInvalidQuery].
func (e *Error) Unwrap() error { return ErrInvalidQuery }

// Errorf returns an [*Error] at pos (backends use it for what only they
// can check, such as an undeclared search attribute).
func Errorf(pos Position, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// Query is a parsed, type-checked query. A nil *Query matches every run.
type Query struct {
	// Source is the text as given.
	Source string
	// Root is the tree of the whole query.
	Root Node
}

// String returns the query's text.
func (q *Query) String() string {
	if q == nil {
		return ""
	}
	return q.Source
}

// Node is one node of a query's tree: [*And], [*Or], [*Not] or
// [*Predicate].
type Node interface{ node() }

// And holds when every term does.
type And struct{ Terms []Node }

// Or holds when any term does.
type Or struct{ Terms []Node }

// Not holds when X does not. As in SQL, a predicate on a null field is
// neither true nor false, so NOT of it does not hold either (use IS NULL).
type Not struct{ X Node }

func (*And) node()       {}
func (*Or) node()        {}
func (*Not) node()       {}
func (*Predicate) node() {}

// Predicate compares one field with values.
type Predicate struct {
	// Field is the field compared.
	Field Field
	// Op is the comparison.
	Op Op
	// Values are the operands (none for IS NULL and IS NOT NULL, one for
	// comparisons and STARTS_WITH, one or more for IN and NOT IN). For a
	// run field they are of its type's Go type ([Type.GoType]); for a
	// search attribute they are the literals as written (string, int64,
	// float64 or bool) until [Predicate.AttrValues] converts them.
	Values []any
	// Pos is where the predicate starts; ValuePos where each value does.
	Pos      Position
	ValuePos []Position
	// OpPos is where the operator is.
	OpPos Position
}

// Op is a comparison operator.
type Op string

// The operators. Eq also reads "==".
const (
	Eq            Op = "="
	Ne            Op = "!="
	Lt            Op = "<"
	Le            Op = "<="
	Gt            Op = ">"
	Ge            Op = ">="
	In            Op = "IN"
	NotIn         Op = "NOT IN"
	StartsWith    Op = "STARTS_WITH"
	NotStartsWith Op = "NOT STARTS_WITH"
	IsNull        Op = "IS NULL"
	IsNotNull     Op = "IS NOT NULL"
)

// Parse parses and type-checks src. Blank text gives (nil, nil): no
// filter. Any fault gives an [*Error] with its position.
func Parse(src string) (*Query, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	if len(src) > MaxLength {
		return nil, Errorf(Position{Line: 1, Column: 1}, "the query is %d bytes long, more than the %d allowed", len(src), MaxLength)
	}
	tree, err := queryParser.ParseString("", src)
	if err != nil {
		var perr participle.Error
		if errors.As(err, &perr) {
			return nil, &Error{Pos: positionOf(perr.Position()), Msg: perr.Message()}
		}
		return nil, &Error{Pos: Position{Line: 1, Column: 1}, Msg: err.Error()}
	}
	root, err := checkOr(tree)
	if err != nil {
		return nil, err
	}
	return &Query{Source: src, Root: root}, nil
}

func checkOr(n *orNode) (Node, error) {
	var terms []Node
	for _, t := range n.Terms {
		c, err := checkAnd(t)
		if err != nil {
			return nil, err
		}
		terms = append(terms, c)
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	return &Or{Terms: terms}, nil
}

func checkAnd(n *andNode) (Node, error) {
	var terms []Node
	for _, f := range n.Factors {
		c, err := checkUnary(f)
		if err != nil {
			return nil, err
		}
		terms = append(terms, c)
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	return &And{Terms: terms}, nil
}

func checkUnary(n *unaryNode) (Node, error) {
	switch {
	case n.Not != nil:
		x, err := checkUnary(n.Not)
		if err != nil {
			return nil, err
		}
		return &Not{X: x}, nil
	case n.Group != nil:
		return checkOr(n.Group)
	default:
		return checkPredicate(n.Pred)
	}
}

func checkPredicate(n *predicateNode) (*Predicate, error) {
	f, err := lookupField(n.Field)
	if err != nil {
		return nil, err
	}
	p := &Predicate{Field: f, Pos: positionOf(n.Pos)}
	var lits []*valueNode
	switch {
	case n.Cmp != nil:
		p.OpPos = positionOf(n.Cmp.Pos)
		switch n.Cmp.Op {
		case "=", "==":
			p.Op = Eq
		case "!=", "<>":
			p.Op = Ne
		default:
			p.Op = Op(n.Cmp.Op)
		}
		lits = []*valueNode{n.Cmp.Value}
	case n.IsNull != nil:
		p.OpPos = positionOf(n.IsNull.Pos)
		p.Op = IsNull
		if n.IsNull.Not {
			p.Op = IsNotNull
		}
	default:
		p.OpPos = positionOf(n.Set.Pos)
		if n.Set.In != nil {
			p.Op, lits = In, n.Set.In
			if n.Set.Not {
				p.Op = NotIn
			}
		} else {
			p.Op, lits = StartsWith, []*valueNode{n.Set.Starts}
			if n.Set.Not {
				p.Op = NotStartsWith
			}
		}
	}
	if f.Attr == "" {
		if !f.Type.allows(p.Op) {
			return nil, Errorf(p.OpPos, "operator %s is not supported for %s (a %s field); use %s", p.Op, f, f.Type, f.Type.opList())
		}
	}
	for _, l := range lits {
		v, err := literal(l)
		if err != nil {
			return nil, err
		}
		pos := positionOf(l.Pos)
		if f.Attr == "" {
			if v, err = convert(v, f.Type, pos, f.String()); err != nil {
				return nil, err
			}
			if f.check != nil {
				if err := f.check(v, pos); err != nil {
					return nil, err
				}
			}
		}
		p.Values = append(p.Values, v)
		p.ValuePos = append(p.ValuePos, pos)
	}
	return p, nil
}

// literal is the Go value of a literal as written: string, int64, float64
// or bool.
func literal(n *valueNode) (any, error) {
	pos := positionOf(n.Pos)
	switch {
	case n.String != nil:
		s, err := unquote(*n.String)
		if err != nil {
			return nil, Errorf(pos, "bad string %s: %v", *n.String, err)
		}
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			// No stored text has such bytes (backend.ValidText).
			return nil, Errorf(pos, "the string holds a NUL byte or invalid UTF-8")
		}
		return s, nil
	case n.Number != nil:
		if i, err := strconv.ParseInt(*n.Number, 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(*n.Number, 64)
		if err != nil {
			return nil, Errorf(pos, "bad number %s: out of range", *n.Number)
		}
		return f, nil
	default:
		return strings.EqualFold(*n.Bool, "true"), nil
	}
}

// unquote reads a double- or single-quoted string with Go's backslash
// escapes (\" and \' both allowed).
func unquote(s string) (string, error) {
	if s[0] == '\'' {
		body := s[1 : len(s)-1]
		body = strings.ReplaceAll(body, `\'`, `'`)
		var b strings.Builder
		for i := 0; i < len(body); i++ {
			switch {
			case body[i] == '\\' && i+1 < len(body):
				b.WriteByte(body[i])
				b.WriteByte(body[i+1])
				i++
			case body[i] == '"':
				b.WriteString(`\"`)
			default:
				b.WriteByte(body[i])
			}
		}
		s = `"` + b.String() + `"`
	}
	return strconv.Unquote(s)
}

// convert turns a literal into a value of type t, or fails naming what.
func convert(v any, t Type, pos Position, what string) (any, error) {
	bad := func() (any, error) {
		return nil, Errorf(pos, "%s has type %s; %s is not %s", what, t, describe(v), t.literalName())
	}
	switch t {
	case Keyword, KeywordList:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case Int:
		if i, ok := v.(int64); ok {
			return i, nil
		}
	case Float:
		switch n := v.(type) {
		case int64:
			return float64(n), nil
		case float64:
			return n, nil
		}
	case Bool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case Time:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		tm, err := ParseTime(s)
		if err != nil {
			return nil, Errorf(pos, "%s has type time; %q is not an RFC 3339 time or a date (2026-11-01 or 2026-11-01T12:00:00Z)", what, s)
		}
		return tm, nil
	}
	return bad()
}

// ParseTime reads a time literal: an RFC 3339 time (fractional seconds
// allowed) or a date "YYYY-MM-DD", which means its midnight UTC. Relative
// times ("-7d") are not accepted: a query stored by a bulk action must
// mean the same runs whenever it is read.
func ParseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	return time.Parse(time.DateOnly, s)
}

func describe(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case bool:
		return strconv.FormatBool(v)
	default:
		return fmt.Sprint(v)
	}
}

// AttrValues checks an attrs.<name> predicate against the attribute's
// declared type t and returns its values converted to t's Go type
// ([Type.GoType]); an operator the type has no use for or a value of
// another type gives an [*Error] at its position.
func (p *Predicate) AttrValues(t Type) ([]any, error) {
	if !t.allows(p.Op) {
		return nil, Errorf(p.OpPos, "operator %s is not supported for %s (a %s search attribute); use %s", p.Op, p.Field, t, t.opList())
	}
	out := make([]any, len(p.Values))
	for i, v := range p.Values {
		c, err := convert(v, t, p.ValuePos[i], fmt.Sprintf("%s", p.Field))
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// Walk calls fn for every predicate of the tree under n, in text order.
func Walk(n Node, fn func(*Predicate)) {
	switch n := n.(type) {
	case *And:
		for _, t := range n.Terms {
			Walk(t, fn)
		}
	case *Or:
		for _, t := range n.Terms {
			Walk(t, fn)
		}
	case *Not:
		Walk(n.X, fn)
	case *Predicate:
		fn(n)
	}
}
