package eventexpr

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/parser"
)

// IndexKey is an equality conjunct event.<Path> == <expression over input
// only> of an expression: whenever the whole expression is true, the
// event's value at Path equals the right-hand side. A backend evaluates
// the right-hand side once, when the wait is created ([IndexKey.Value]),
// stores (event name, [IndexKey.PathKey], value) with the wait, and on
// publish looks up only the waits whose value equals the event's value at
// that path ([PathValue]).
type IndexKey struct {
	// Path is the field path under event, e.g. ["data", "orderId"].
	Path []string
	// RHS is the right-hand side as CEL source, e.g. "input.orderId".
	RHS string
	// InputPath is the field path under input when RHS is nothing but a
	// selection of it (input.orderId: ["orderId"]), so that a backend
	// can look up the inputs equal to an event's value instead of
	// evaluating RHS per input (cancelOn); nil for any other RHS.
	InputPath []string
	prg       cel.Program
}

// PathKey is Path encoded as a JSON array, the form stored with a wait,
// e.g. `["data","orderId"]`.
func (k IndexKey) PathKey() string {
	b, _ := json.Marshal(k.Path)
	return string(b)
}

// Value evaluates the right-hand side for input and returns its canonical
// form (see [Canonical]). ok is false when the value is not a scalar
// (list, map, timestamp, bytes …) and so cannot be indexed; err is
// non-nil when the evaluation fails (e.g. a key missing from input).
func (k IndexKey) Value(ctx context.Context, input any) (value string, ok bool, err error) {
	out, _, err := k.prg.ContextEval(ctx, map[string]any{"input": input})
	if err != nil {
		return "", false, &EvalError{Source: k.RHS, Err: err}
	}
	value, ok = Canonical(out)
	return value, ok, nil
}

// IndexKeys returns the expression's top-level equality conjuncts of the
// form event.<path> == <expr over input> (either side order; paths of
// field selections and constant string indexes), in source order. Empty
// when there is none: a backend must then evaluate the expression for
// every event of the name.
func (x *Expression) IndexKeys() []IndexKey { return x.keys }

// extractKeys walks the top-level && tree of a checked AST.
func extractKeys(a *cel.Ast) []IndexKey {
	native := a.NativeRep()
	var keys []IndexKey
	var walk func(e ast.Expr)
	walk = func(e ast.Expr) {
		if e.Kind() != ast.CallKind {
			return
		}
		c := e.AsCall()
		switch c.FunctionName() {
		case operators.LogicalAnd:
			for _, arg := range c.Args() {
				walk(arg)
			}
		case operators.Equals:
			args := c.Args()
			if len(args) != 2 {
				return
			}
			for _, side := range [][2]ast.Expr{{args[0], args[1]}, {args[1], args[0]}} {
				path, ok := eventPath(side[0])
				if !ok {
					continue
				}
				if k, ok := rhsKey(path, side[1], native.SourceInfo()); ok {
					keys = append(keys, k)
					return
				}
			}
		}
	}
	walk(native.Expr())
	return keys
}

// eventPath returns the path of event.a.b / event["a"]["b"], and false for
// anything else (including presence tests and optional selections).
func eventPath(e ast.Expr) ([]string, bool) { return selectionPath("event", e) }

// selectionPath returns the path of root.a.b / root["a"]["b"], and false
// for anything else.
func selectionPath(root string, e ast.Expr) ([]string, bool) {
	var rev []string
	for {
		switch e.Kind() {
		case ast.IdentKind:
			if e.AsIdent() != root || len(rev) == 0 {
				return nil, false
			}
			path := make([]string, len(rev))
			for i := range rev {
				path[i] = rev[len(rev)-1-i]
			}
			return path, true
		case ast.SelectKind:
			s := e.AsSelect()
			if s.IsTestOnly() {
				return nil, false
			}
			rev = append(rev, s.FieldName())
			e = s.Operand()
		case ast.CallKind:
			c := e.AsCall()
			if c.FunctionName() != operators.Index || len(c.Args()) != 2 || c.Args()[1].Kind() != ast.LiteralKind {
				return nil, false
			}
			s, ok := c.Args()[1].AsLiteral().Value().(string)
			if !ok {
				return nil, false
			}
			rev = append(rev, s)
			e = c.Args()[0]
		default:
			return nil, false
		}
	}
}

// rhsKey compiles the right-hand side in the input-only environment: a
// side that reads event (or anything else undeclared) does not compile and
// is not a key.
func rhsKey(path []string, rhs ast.Expr, info *ast.SourceInfo) (IndexKey, bool) {
	src, err := parser.Unparse(rhs, info)
	if err != nil {
		return IndexKey{}, false
	}
	a, iss := inputEnv.Compile(src)
	if iss != nil && iss.Err() != nil {
		return IndexKey{}, false
	}
	prg, err := inputEnv.Program(a, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return IndexKey{}, false
	}
	k := IndexKey{Path: path, RHS: src, prg: prg}
	if in, ok := selectionPath("input", rhs); ok {
		k.InputPath = in
	}
	return k, true
}

// Canonical returns the index form of a scalar CEL value, such that two
// values CEL finds equal (==) have the same form: numbers (int, uint,
// double; CEL compares them across types) become "n:" and the float64's
// shortest text, -0 as 0; strings "s:" and the string; bools "b:true" /
// "b:false"; null "null". Two different numbers may share a form (ints
// beyond 2^53): a lookup by form finds candidates, not matches, and the
// full expression decides. ok is false for lists, maps, timestamps,
// durations, bytes, NaN and errors.
func Canonical(v ref.Val) (form string, ok bool) {
	switch t := v.(type) {
	case types.String:
		return "s:" + string(t), true
	case types.Bool:
		return "b:" + strconv.FormatBool(bool(t)), true
	case types.Null:
		return "null", true
	case types.Int:
		return number(float64(t))
	case types.Uint:
		return number(float64(t))
	case types.Double:
		return number(float64(t))
	}
	return "", false
}

func number(f float64) (string, bool) {
	if math.IsNaN(f) {
		return "", false
	}
	if f == 0 {
		f = 0 // -0 == 0
	}
	return "n:" + strconv.FormatFloat(f, 'g', -1, 64), true
}

// PathValue returns the canonical form (see [Canonical]) of event's value
// at path (an [IndexKey.Path]), and false when the path is missing or the
// value is not a scalar.
func PathValue(event Event, path []string) (string, bool) {
	v, ok := PathScalar(event, path)
	if !ok {
		return "", false
	}
	return Canonical(types.DefaultTypeAdapter.NativeToValue(v))
}

// PathScalar returns event's value at path (an [IndexKey.Path]) as Go
// holds it — a string, a JSON number (float64, or json.Number), a bool
// or nil — and false when the path is missing or the value is a map, a
// list or a time.
func PathScalar(event Event, path []string) (any, bool) {
	if len(path) == 0 {
		return nil, false
	}
	var v any
	switch path[0] {
	case "name":
		v = event.Name
	case "id":
		v = event.ID
	case "key":
		v = event.Key
	case "time":
		v = event.Time
	case "data":
		v = event.Data
	default:
		return nil, false
	}
	for _, p := range path[1:] {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	switch v.(type) {
	case map[string]any, []any, time.Time:
		return nil, false
	}
	return v, true
}

// ParsePathKey decodes an [IndexKey.PathKey].
func ParsePathKey(s string) ([]string, error) {
	var p []string
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return nil, fmt.Errorf("eventexpr: bad path key %q: %w", s, err)
	}
	return p, nil
}
