package openflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// DefaultExprTimeout bounds one evaluation of an expression: 10 s, as in
// Windmill.
const DefaultExprTimeout = 10 * time.Second

// exprScope is what an expression sees: named JSON values, and the lazy
// results.<id> lookup when the context has it. Names not in vars are not
// defined (a ReferenceError if used).
type exprScope struct {
	vars map[string]json.RawMessage
	// lazy are values computed only when an expression mentions them.
	lazy map[string]func() json.RawMessage
	// results looks up results.<id>; nil when results is not in scope.
	// An id it does not know gives null.
	results func(id string) (json.RawMessage, bool)
	// resultIDs lists the ids results knows (for Object.keys(results)).
	resultIDs func() []string
}

// evaluator evaluates expressions with goja, one fresh runtime per
// evaluation (so nothing leaks from one to the next), compiled programs
// cached by their text.
type evaluator struct {
	timeout time.Duration

	mu       sync.Mutex
	programs map[string]*goja.Program
}

func newEvaluator(timeout time.Duration) *evaluator {
	if timeout <= 0 {
		timeout = DefaultExprTimeout
	}
	return &evaluator{timeout: timeout, programs: map[string]*goja.Program{}}
}

// maxCachedPrograms bounds the program cache; it is emptied when full.
const maxCachedPrograms = 4096

// compile returns the program evaluating expr (see wrapExpr), from the
// cache when it was compiled before. The error is goja's syntax error.
func (ev *evaluator) compile(expr string) (*goja.Program, error) {
	ev.mu.Lock()
	p, ok := ev.programs[expr]
	ev.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := goja.Compile("expression", wrapExpr(expr), false)
	if err != nil {
		return nil, syntaxError(expr, err)
	}
	ev.mu.Lock()
	if len(ev.programs) >= maxCachedPrograms {
		ev.programs = map[string]*goja.Program{}
	}
	ev.programs[expr] = p
	ev.mu.Unlock()
	return p, nil
}

// statementKeywords start an expression that is used as a function body
// as it is (it must return its value itself).
var statementKeywords = []string{"const", "let", "var", "if", "for", "while", "do", "switch", "try", "throw", "function", "class", "return"}

// wrapExpr makes the body of the function an expression is evaluated in
// (async when it uses await), as Windmill does: a block of statements (it starts with a
// statement keyword, or has a top-level ';' or 'return') is used as it
// is; anything else becomes "return (<expr>)". Trailing semicolons are
// dropped first, so "x;" is the expression x.
func wrapExpr(expr string) string {
	e := strings.TrimSpace(expr)
	for strings.HasSuffix(e, ";") {
		e = strings.TrimSpace(strings.TrimSuffix(e, ";"))
	}
	// Without await the function need not be async: no promise to settle.
	fn := "(() => {\n"
	if mentions(e, "await") {
		fn = "(async () => {\n"
	}
	if isStatements(e) {
		return fn + e + "\n})()"
	}
	if e == "" {
		e = "undefined"
	}
	return fn + "return (\n" + e + "\n);\n})()"
}

// syntaxLine finds goja's "Line L:C" positions.
var syntaxLine = regexp.MustCompile(`Line (\d+):(\d+)`)

// syntaxError rewrites a compile error of the wrapped expression so its
// line numbers count from the expression's first line, without goja's
// "(and N more errors)" tail.
func syntaxError(expr string, err error) error {
	msg := err.Error()
	if i := strings.Index(msg, " (and "); i > 0 {
		msg = msg[:i]
	}
	msg = strings.Replace(msg, "SyntaxError: expression: ", "SyntaxError: ", 1)
	offset := 2 // "(async () => {" and "return (" precede an expression
	if isStatements(strings.TrimSpace(expr)) {
		offset = 1
	}
	msg = syntaxLine.ReplaceAllStringFunc(msg, func(m string) string {
		sub := syntaxLine.FindStringSubmatch(m)
		line, _ := strconv.Atoi(sub[1])
		if line-offset < 1 {
			return m
		}
		return fmt.Sprintf("line %d:%s", line-offset, sub[2])
	})
	return errors.New(msg)
}

func isStatements(e string) bool {
	first := e
	if i := strings.IndexFunc(e, func(r rune) bool { return !isIdentRune(r) }); i >= 0 {
		first = e[:i]
	}
	for _, k := range statementKeywords {
		if first == k {
			return true
		}
	}
	semi, ret := topLevelTokens(e)
	return semi || ret
}

func isIdentRune(r rune) bool {
	return r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// topLevelTokens reports whether e has a ';' or a 'return' keyword outside
// brackets, strings, template literals and comments. Regular expression
// literals are not recognised (a ';' inside one at top level is rare).
func topLevelTokens(e string) (semicolon, ret bool) {
	depth := 0
	var tmpl []int // depths at which a template literal's ${ opened
	for i := 0; i < len(e); i++ {
		c := e[i]
		switch {
		case c == '"' || c == '\'':
			i = skipQuoted(e, i)
		case c == '`':
			i = skipTemplate(e, i, &tmpl, depth)
		case c == '/' && i+1 < len(e) && e[i+1] == '/':
			for i < len(e) && e[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(e) && e[i+1] == '*':
			end := strings.Index(e[i+2:], "*/")
			if end < 0 {
				return
			}
			i += end + 3
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']':
			depth--
		case c == '}':
			if n := len(tmpl); n > 0 && tmpl[n-1] == depth-1 {
				// the end of a ${…} substitution: the template goes on
				tmpl = tmpl[:n-1]
				depth--
				i = skipTemplate(e, i, &tmpl, depth)
				continue
			}
			depth--
		case depth == 0 && c == ';':
			semicolon = true
		case depth == 0 && c == 'r' && strings.HasPrefix(e[i:], "return") &&
			(i == 0 || !isIdentRune(rune(e[i-1]))) && (i+6 == len(e) || !isIdentRune(rune(e[i+6]))):
			ret = true
		case isIdentRune(rune(c)):
			for i+1 < len(e) && isIdentRune(rune(e[i+1])) {
				i++
			}
		}
	}
	return
}

// skipQuoted returns the index of the quote closing the string at i.
func skipQuoted(e string, i int) int {
	q := e[i]
	for i++; i < len(e); i++ {
		switch e[i] {
		case '\\':
			i++
		case q, '\n':
			return i
		}
	}
	return i
}

// skipTemplate skips template literal text from i (a backquote, or the
// '}' ending a substitution) to its closing backquote, or to a "${" whose
// depth it pushes on tmpl; it returns the index of that last character.
func skipTemplate(e string, i int, tmpl *[]int, depth int) int {
	for i++; i < len(e); i++ {
		switch {
		case e[i] == '\\':
			i++
		case e[i] == '`':
			return i
		case e[i] == '$' && i+1 < len(e) && e[i+1] == '{':
			*tmpl = append(*tmpl, depth)
			return i // the caller's next step reads the '{' and counts it
		}
	}
	return i
}

// ExprError is an expression that failed to evaluate: it threw, it timed
// out, or its value could not be turned into JSON. Message is the
// JavaScript error ("ReferenceError: x is not defined").
type ExprError struct {
	// Expr is the expression's text.
	Expr string
	// Message describes the failure.
	Message string
}

// Error returns Windmill's text for a failed evaluation.
func (e *ExprError) Error() string {
	return fmt.Sprintf("Error during isolated evaluation of expression `%s`:\n%s", e.Expr, e.Message)
}

var errExprTimeout = errors.New("expression timeout")

// eval evaluates expr in sc and returns its value as JSON:
// JSON.stringify(value ?? null), so undefined is null and key order is
// kept. The expression may use await and statement blocks with return.
func (ev *evaluator) eval(expr string, sc exprScope) (out json.RawMessage, err error) {
	if v, ok := fastPath(expr, sc); ok {
		return v, nil
	}
	prog, err := ev.compile(expr)
	if err != nil {
		return nil, &ExprError{Expr: expr, Message: err.Error()}
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &ExprError{Expr: expr, Message: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	rt := goja.New()
	parse, stringify := jsonFuncs(rt)
	for name, raw := range sc.vars {
		if !mentions(expr, name) {
			continue
		}
		v, err := parseJSON(rt, parse, raw)
		if err != nil {
			return nil, &ExprError{Expr: expr, Message: fmt.Sprintf("bind %s: %v", name, err)}
		}
		if err := rt.Set(name, v); err != nil {
			return nil, &ExprError{Expr: expr, Message: err.Error()}
		}
	}
	for name, fn := range sc.lazy {
		if _, bound := sc.vars[name]; bound || !mentions(expr, name) {
			continue
		}
		v, err := parseJSON(rt, parse, fn())
		if err != nil {
			return nil, &ExprError{Expr: expr, Message: fmt.Sprintf("bind %s: %v", name, err)}
		}
		if err := rt.Set(name, v); err != nil {
			return nil, &ExprError{Expr: expr, Message: err.Error()}
		}
	}
	if sc.results != nil && mentions(expr, "results") {
		_ = rt.Set("results", rt.NewDynamicObject(&resultsObject{rt: rt, parse: parse, sc: sc, cache: map[string]goja.Value{}}))
	}
	timer := time.AfterFunc(ev.timeout, func() { rt.Interrupt(errExprTimeout) })
	v, err := rt.RunProgram(prog)
	timer.Stop()
	if err != nil {
		return nil, ev.jsError(expr, err)
	}
	if p, ok := v.Export().(*goja.Promise); ok {
		switch p.State() {
		case goja.PromiseStateFulfilled:
			v = p.Result()
		case goja.PromiseStateRejected:
			return nil, &ExprError{Expr: expr, Message: jsValueText(p.Result())}
		default:
			return nil, &ExprError{Expr: expr, Message: "the expression awaits a promise that never settles"}
		}
	}
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return json.RawMessage("null"), nil
	}
	s, err := stringify(goja.Undefined(), v)
	if err != nil {
		return nil, ev.jsError(expr, err)
	}
	if goja.IsUndefined(s) {
		return json.RawMessage("null"), nil // a function, a symbol
	}
	return json.RawMessage(s.String()), nil
}

func (ev *evaluator) jsError(expr string, err error) error {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		return &ExprError{Expr: expr, Message: fmt.Sprintf("The expression of evaluation `%s` took too long to execute (>%dms)", expr, ev.timeout.Milliseconds())}
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return &ExprError{Expr: expr, Message: jsValueText(ex.Value())}
	}
	return &ExprError{Expr: expr, Message: err.Error()}
}

// jsValueText is the text of a thrown value: "TypeError: message" for an
// Error, the value's string otherwise.
func jsValueText(v goja.Value) string {
	if v == nil {
		return "undefined"
	}
	return v.String()
}

func jsonFuncs(rt *goja.Runtime) (parse, stringify goja.Callable) {
	j := rt.Get("JSON").ToObject(rt)
	parse, _ = goja.AssertFunction(j.Get("parse"))
	stringify, _ = goja.AssertFunction(j.Get("stringify"))
	return parse, stringify
}

func parseJSON(rt *goja.Runtime, parse goja.Callable, raw json.RawMessage) (goja.Value, error) {
	if len(raw) == 0 {
		return goja.Null(), nil
	}
	return parse(goja.Undefined(), rt.ToValue(string(raw)))
}

// mentions reports whether name appears in expr as a word; a name that
// does not appear cannot be referenced, so it is not bound (binding means
// parsing its JSON).
func mentions(expr, name string) bool {
	for i := 0; ; {
		j := strings.Index(expr[i:], name)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(name)
		if (j == 0 || !isIdentRune(rune(expr[j-1]))) && (end == len(expr) || !isIdentRune(rune(expr[end]))) {
			return true
		}
		i = j + 1
	}
}

// resultsObject is the results proxy: results.<id> is the JSON result of
// module <id>, parsed afresh for this evaluation, or null for an unknown
// id (as in Windmill).
type resultsObject struct {
	rt    *goja.Runtime
	parse goja.Callable
	sc    exprScope
	cache map[string]goja.Value
}

// Get returns results.<key>: the module's result, or null.
func (r *resultsObject) Get(key string) goja.Value {
	if v, ok := r.cache[key]; ok {
		return v
	}
	v := goja.Null()
	if raw, ok := r.sc.results(key); ok {
		if pv, err := parseJSON(r.rt, r.parse, raw); err == nil {
			v = pv
		}
	}
	r.cache[key] = v
	return v
}

// Set shadows a result for the rest of this evaluation only.
func (r *resultsObject) Set(key string, val goja.Value) bool {
	r.cache[key] = val
	return true
}

// Has reports whether a module of that id has a result.
func (r *resultsObject) Has(key string) bool {
	_, ok := r.sc.results(key)
	return ok
}

// Delete hides a result for the rest of this evaluation.
func (r *resultsObject) Delete(key string) bool {
	r.cache[key] = goja.Null()
	return true
}

// Keys lists the ids with results, sorted.
func (r *resultsObject) Keys() []string {
	if r.sc.resultIDs == nil {
		return nil
	}
	ids := r.sc.resultIDs()
	sort.Strings(ids)
	return ids
}

// fastPath evaluates the commonest expressions without JavaScript: a bare
// name in scope (previous_result, flow_input, resume…) or a chain of
// property names on one (flow_input.x, results.a.b, flow_env.KEY). It
// declines (ok false) whenever JavaScript could behave differently: an
// intermediate value that is not an object, a name not in scope.
func fastPath(expr string, sc exprScope) (json.RawMessage, bool) {
	e := strings.TrimSpace(expr)
	if e == "" || len(e) > 200 {
		return nil, false
	}
	parts := strings.Split(e, ".")
	for _, p := range parts {
		if p == "" || !isIdent(p) {
			return nil, false
		}
	}
	var cur json.RawMessage
	rest := parts[1:]
	raw, ok := sc.vars[parts[0]]
	if fn, lazy := sc.lazy[parts[0]]; !ok && lazy {
		raw, ok = fn(), true
	}
	switch {
	case ok:
		cur = raw
	case parts[0] == "results" && sc.results != nil && len(parts) > 1:
		v, found := sc.results(parts[1])
		if !found {
			if len(parts) > 2 {
				return nil, false // null.x: a TypeError, which JavaScript reports
			}
			return json.RawMessage("null"), true
		}
		cur, rest = v, parts[2:]
	default:
		return nil, false
	}
	for i, key := range rest {
		if len(cur) == 0 || cur[0] != '{' {
			return nil, false
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(cur, &m) != nil {
			return nil, false
		}
		v, ok := m[key]
		if !ok {
			// undefined: null at the end of the chain; a TypeError
			// (undefined.x) or an inherited property otherwise
			if i < len(rest)-1 || isObjectPrototypeKey(key) {
				return nil, false
			}
			return json.RawMessage("null"), true
		}
		cur = v
	}
	if len(cur) == 0 {
		return json.RawMessage("null"), true
	}
	return cur, true
}

func isIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !isIdentRune(r) {
			return false
		}
	}
	return true
}

func isObjectPrototypeKey(k string) bool {
	switch k {
	case "constructor", "toString", "valueOf", "hasOwnProperty", "isPrototypeOf",
		"propertyIsEnumerable", "toLocaleString", "__proto__", "__defineGetter__",
		"__defineSetter__", "__lookupGetter__", "__lookupSetter__":
		return true
	}
	return false
}
