// Package eventexpr compiles and evaluates the CEL expressions that match
// events: the conditions of event triggers and the match of
// [openworkflow.WaitForEvent].
//
// An expression sees two variables:
//
//   - event, a map(string, dyn) with the keys name (string), data (the
//     event's JSON payload: maps, lists, strings, doubles, bools, null),
//     key (string), id (string) and time (timestamp);
//   - input, the run's input (dyn; null for a trigger, which has no run
//     yet).
//
// It must have type bool. For example
//
//	event.data.orderId == input.orderId && event.data.total > 100.0
//
// Missing map keys are CEL errors ("no such key"), not false: an
// expression that reads event.data.coupon errors on an event without a
// coupon. Test first, with has(event.data.coupon) (which tests only the
// last field), "coupon" in event.data, or optional selection
// event.data.?coupon.orValue("") — as cel-go documents
// (cel-expr/cel-spec#65, cel-expr/cel-go#912). JSON numbers are doubles:
// compare with 100.0 or rely on CEL's heterogeneous numeric equality
// (1 == 1.0 is true).
//
// Limits: sources longer than [MaxSourceBytes] are rejected, the parser
// stops at [MaxRecursionDepth] nested expressions, and an evaluation stops
// with an error after [CostLimit] units of CEL runtime cost (about a tenth
// of a second of CPU, Kubernetes' per-call budget) or when its context is
// done. Compiled programs are cached by source in a bounded LRU
// ([CacheSize] entries); a cel.Program is stateless and safe for
// concurrent use.
//
// [Expression.IndexKeys] extracts the equality conjuncts
// event.<path> == <expression over input only> that let a backend index
// waits by (event name, path, value) instead of evaluating every wait on
// every publish.
package eventexpr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	lru "github.com/hashicorp/golang-lru/v2"
)

const (
	// MaxSourceBytes is the longest expression source accepted: 4 KiB, as
	// control-and-events.md §7.5 recommends.
	MaxSourceBytes = 4 << 10
	// MaxRecursionDepth bounds the parser's nesting (cel-go's default is 250).
	MaxRecursionDepth = 64
	// CostLimit is the CEL runtime cost budget of one evaluation
	// (Kubernetes' PerCallLimit, about 0.1 s of CPU).
	CostLimit = 1_000_000
	// CacheSize is the number of compiled programs kept, least recently used
	// first out.
	CacheSize = 4096
)

// Event is what an expression sees as the variable event.
type Event struct {
	// Name is the event's name, e.g. "order.paid".
	Name string
	// ID is the event's id (its deduplication key), may be empty.
	ID string
	// Key is the event's key, may be empty.
	Key string
	// Data is the event's payload as decoded from JSON by encoding/json
	// into an any (map[string]any, []any, string, float64, bool, nil).
	Data any
	// Time is when the event happened.
	Time time.Time
}

// activation returns the value bound to the variable event.
func (e Event) activation() map[string]any {
	return map[string]any{
		"name": e.Name,
		"id":   e.ID,
		"key":  e.Key,
		"data": e.Data,
		"time": e.Time,
	}
}

// ErrTooLong is returned (wrapped in a *CompileError) for a source longer
// than MaxSourceBytes.
var ErrTooLong = errors.New("expression longer than 4096 bytes")

// Issue is one problem found compiling an expression, at a 1-based line
// and column of its source (0 when unknown).
type Issue struct {
	Line, Column int
	Message      string
}

// CompileError is returned by [Compile] for a source that does not parse,
// does not type-check, is not of type bool, or is too long.
type CompileError struct {
	// Source is the expression as given (truncated to 200 bytes).
	Source string
	// Issues lists what is wrong and where.
	Issues []Issue
	err    error
}

// Error says what is wrong and where, e.g.
// `eventexpr: 1:12: undeclared reference to 'evnt'`.
func (e *CompileError) Error() string {
	parts := make([]string, 0, len(e.Issues))
	for _, is := range e.Issues {
		if is.Line > 0 {
			parts = append(parts, fmt.Sprintf("%d:%d: %s", is.Line, is.Column, is.Message))
		} else {
			parts = append(parts, is.Message)
		}
	}
	return "eventexpr: " + strings.Join(parts, "; ") + " (in " + quoteShort(e.Source) + ")"
}

// Unwrap returns ErrTooLong for a too long source, nil otherwise.
func (e *CompileError) Unwrap() error { return e.err }

// EvalError is returned by [Expression.Match] when evaluation fails: a
// missing key, a type mismatch found at run time, the cost limit, a done
// context.
type EvalError struct {
	// Source is the expression (truncated to 200 bytes).
	Source string
	// Err is cel-go's error, e.g. "no such key: coupon".
	Err error
}

func (e *EvalError) Error() string {
	return fmt.Sprintf("eventexpr: evaluating %s: %v", quoteShort(e.Source), e.Err)
}

// Unwrap returns the underlying error.
func (e *EvalError) Unwrap() error { return e.Err }

func quoteShort(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return fmt.Sprintf("%q", s)
}

var (
	env      *cel.Env // event and input
	inputEnv *cel.Env // input only: the right-hand sides of index keys
	cache    *lru.Cache[string, *Expression]
)

func init() {
	var err error
	limits := []cel.EnvOption{
		cel.ParserRecursionLimit(MaxRecursionDepth),
		cel.ParserExpressionSizeLimit(MaxSourceBytes),
		cel.OptionalTypes(),
	}
	env, err = cel.NewEnv(append(limits,
		cel.Variable("event", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("input", cel.DynType))...)
	if err != nil {
		panic(fmt.Sprintf("eventexpr: %v", err))
	}
	inputEnv, err = cel.NewEnv(append(limits, cel.Variable("input", cel.DynType))...)
	if err != nil {
		panic(fmt.Sprintf("eventexpr: %v", err))
	}
	cache, err = lru.New[string, *Expression](CacheSize)
	if err != nil {
		panic(fmt.Sprintf("eventexpr: %v", err))
	}
}

// Expression is a compiled, type-checked expression of type bool. It is
// immutable and safe for concurrent use.
type Expression struct {
	source string
	prg    cel.Program
	keys   []IndexKey
}

// Source returns the expression's source text.
func (x *Expression) Source() string { return x.source }

// Compile parses and type-checks source, once per distinct source (the
// result is cached). Errors are *CompileError values that name the line
// and column of each problem; an expression whose type is not bool is
// rejected ("must be a bool, is string").
func Compile(source string) (*Expression, error) {
	if x, ok := cache.Get(source); ok {
		return x, nil
	}
	if len(source) > MaxSourceBytes {
		return nil, &CompileError{Source: source, Issues: []Issue{{Message: ErrTooLong.Error()}}, err: ErrTooLong}
	}
	if strings.TrimSpace(source) == "" {
		return nil, &CompileError{Source: source, Issues: []Issue{{Message: "empty expression"}}}
	}
	ast, iss := env.Compile(source)
	if iss != nil && iss.Err() != nil {
		ce := &CompileError{Source: source}
		for _, e := range iss.Errors() {
			ce.Issues = append(ce.Issues, Issue{Line: e.Location.Line(), Column: e.Location.Column() + 1, Message: e.Message})
		}
		return nil, ce
	}
	if !ast.OutputType().IsExactType(types.BoolType) && !ast.OutputType().IsExactType(types.DynType) {
		return nil, &CompileError{Source: source, Issues: []Issue{{Line: 1, Column: 1,
			Message: fmt.Sprintf("expression must be a bool, is %s", ast.OutputType())}}}
	}
	prg, err := env.Program(ast,
		cel.CostLimit(CostLimit),
		cel.InterruptCheckFrequency(100),
		cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, &CompileError{Source: source, Issues: []Issue{{Message: err.Error()}}}
	}
	x := &Expression{source: source, prg: prg, keys: extractKeys(ast)}
	cache.Add(source, x)
	return x, nil
}

// Match evaluates the expression for event and input (the run's input as
// decoded from JSON into an any; nil for none). A dyn-typed expression
// that yields a non-bool, a missing key, the cost limit or a done ctx give
// an *EvalError and false.
func (x *Expression) Match(ctx context.Context, event Event, input any) (bool, error) {
	out, _, err := x.prg.ContextEval(ctx, map[string]any{"event": event.activation(), "input": input})
	if err != nil {
		return false, &EvalError{Source: x.source, Err: err}
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, &EvalError{Source: x.source, Err: fmt.Errorf("result is %s, not bool", out.Type().TypeName())}
	}
	return b, nil
}
