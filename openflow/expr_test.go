package openflow

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// stepScope is a module's argument scope in the middle of a flow: two
// modules ran (a, and loop l whose body ran b), the previous one
// suspended and was resumed twice.
func stepScope() exprScope {
	res := newResultsScope(nil)
	res.set("a", raw(`{"value":42,"items":[1,2,3]}`))
	res.set("l", raw(`[1,2]`))
	res.set("b", raw(`"last b"`))
	f := &frame{flowInput: raw(`{"n":3,"iter":{"index":1,"value":"x"},"iter_parent":{"index":0,"value":"o"}}`),
		env: raw(`{"ENV":"prod","LIMITS":{"max":5}}`), res: res}
	r := &flowRun{}
	return r.argScope(f, raw(`{"error":{"name":"Error","message":"boom"}}`),
		resumeState{Resumes: []json.RawMessage{raw(`"first"`), raw(`{"ok":true}`)}, Approvers: []string{"ada", "bob"}})
}

// TestExprScope checks every name Windmill gives a module's expressions.
func TestExprScope(t *testing.T) {
	ev := newEvaluator(time.Second)
	sc := stepScope()
	cases := []struct{ expr, want string }{
		{"flow_input.n", `3`},
		{"flow_input.iter.value", `"x"`},
		{"flow_input.iter_parent.value", `"o"`},
		{"results.a.value", `42`},
		{"results.a.items.map(x => x * 2)", `[2,4,6]`},
		{"results.l", `[1,2]`},
		{"results.b", `"last b"`},
		{"results.nonexistent", `null`},
		{"results.nonexistent ?? 'default'", `"default"`},
		{"results.nonexistent?.value ?? 'nested'", `"nested"`},
		{"previous_result", `{"error":{"name":"Error","message":"boom"}}`},
		{"result", `{"error":{"name":"Error","message":"boom"}}`},
		{"error.message", `"boom"`},
		{"resume", `{"ok":true}`},
		{"resumes", `["first",{"ok":true}]`},
		{"approvers", `["ada","bob"]`},
		{"flow_env.ENV", `"prod"`},
		{"flow_env.LIMITS.max + 1", `6`},
		{"params", `{}`},
		{"typeof all_iters", `"undefined"`},
		{"flow_input.missing", `null`},
		{"undefined", `null`},
		{"`n=${flow_input.n}`", `"n=3"`},
		{"2 ** 10", `1024`},
		{"const x = results.a.value; return x + 1", `43`},
		{"let s = 0;\nfor (const i of results.a.items) { s += i }\nreturn s", `6`},
		{"await Promise.resolve(flow_input.n)", `3`},
		{"flow_input.n;", `3`},
		{"{ a: 1 }", `{"a":1}`},
		{"({...results.a, value: 0}).value", `0`},
		{"Object.keys(results).sort()", `["a","b","l"]`},
		{"(() => { return 7 })()", `7`},
		{"'a;b'.split(';')", `["a","b"]`},
		{"`x ${ 'return' } ${ [1,2].map(v => { return v }) }`", `"x return 1,2"`},
		{"9007199254740993 > 9007199254740992", `false`},
		{"() => 1", `null`},
	}
	for _, c := range cases {
		got, err := ev.eval(c.expr, sc)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if !jsonSame(got, raw(c.want)) {
			t.Errorf("%s = %s, want %s", c.expr, got, c.want)
		}
	}
}

func jsonSame(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xa) == string(yb)
}

// TestExprFastPathAgrees: the evaluations answered without JavaScript
// give what JavaScript gives.
func TestExprFastPathAgrees(t *testing.T) {
	sc := stepScope()
	for _, expr := range []string{"flow_input", "flow_input.n", "flow_input.iter.index", "flow_input.missing",
		"results.a", "results.a.value", "results.nonexistent", "flow_env.ENV", "previous_result.error.name",
		"resume.ok", "error", "error.name"} {
		fast, ok := fastPath(expr, sc)
		if !ok {
			t.Errorf("%s: not on the fast path", expr)
			continue
		}
		prog, err := newEvaluator(0).compile(expr)
		if err != nil || prog == nil {
			t.Fatal(err)
		}
		slow, err := newEvaluator(0).eval("("+expr+")", sc) // parenthesised: not a fast-path shape
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if !jsonSame(fast, slow) {
			t.Errorf("%s: fast path %s, JavaScript %s", expr, fast, slow)
		}
	}
	for _, expr := range []string{"results.nonexistent.value", "flow_input.n.toString", "flow_input.constructor", "a.b", "results.a.items.length"} {
		if v, ok := fastPath(expr, sc); ok {
			t.Errorf("%s took the fast path (%s); JavaScript must answer it", expr, v)
		}
	}
}

// TestExprScopesOfContexts: stop_after_if and sleep see result,
// flow_input and flow_env but not results (as in Windmill).
func TestExprScopesOfContexts(t *testing.T) {
	ev := newEvaluator(time.Second)
	f := &frame{flowInput: raw(`{"n":1}`), env: raw(`{"STOP":true}`), res: newResultsScope(nil)}
	sc := resultScope(f, raw(`{"status":"done"}`))
	for expr, want := range map[string]string{
		"result.status": `"done"`, "previous_result.status": `"done"`, "flow_input.n": `1`, "flow_env.STOP": `true`,
	} {
		if got, err := ev.eval(expr, sc); err != nil || !jsonSame(got, raw(want)) {
			t.Errorf("%s = %s, %v; want %s", expr, got, err, want)
		}
	}
	_, err := ev.eval("results.a", sc)
	var ee *ExprError
	if !errors.As(err, &ee) || ee.Message != "ReferenceError: results is not defined" {
		t.Errorf("results in stop_after_if: %v, want a ReferenceError", err)
	}
}

// TestExprErrors checks the error texts of failed evaluations.
func TestExprErrors(t *testing.T) {
	ev := newEvaluator(200 * time.Millisecond)
	sc := exprScope{vars: map[string]json.RawMessage{"flow_input": raw(`{}`)}}
	cases := []struct{ expr, want string }{
		{"nope", "Error during isolated evaluation of expression `nope`:\nReferenceError: nope is not defined"},
		{"flow_input.a.b", "Error during isolated evaluation of expression `flow_input.a.b`:\nTypeError: Cannot read property 'b' of undefined"},
		{"throw new RangeError('too big')", "Error during isolated evaluation of expression `throw new RangeError('too big')`:\nRangeError: too big"},
		{"await Promise.reject(new Error('no'))", "Error during isolated evaluation of expression `await Promise.reject(new Error('no'))`:\nError: no"},
		{"while (true) {}", "Error during isolated evaluation of expression `while (true) {}`:\nThe expression of evaluation `while (true) {}` took too long to execute (>200ms)"},
		{"1 +", "Error during isolated evaluation of expression `1 +`:\nSyntaxError: line 2:1 Unexpected token )"},
		{"await new Promise(() => {})", "Error during isolated evaluation of expression `await new Promise(() => {})`:\nthe expression awaits a promise that never settles"},
	}
	for _, c := range cases {
		_, err := ev.eval(c.expr, sc)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.expr, err, c.want)
		}
	}
	// a module's failed transform: Windmill's ExecutionErr shape
	got := executionErr("step_a", (&ExprError{Expr: "x", Message: "ReferenceError: x is not defined"}).Error())
	want := "{\"error\":{\"name\":\"ExecutionErr\",\"message\":\"execution error:\\nError during isolated evaluation of expression `x`:\\nReferenceError: x is not defined\",\"step_id\":\"step_a\"}}"
	if string(got) != want {
		t.Errorf("executionErr = %s, want %s", got, want)
	}
}

// TestExprIsolation: evaluations share nothing: a global set by one is
// gone in the next, and mutating a result does not change it.
func TestExprIsolation(t *testing.T) {
	ev := newEvaluator(time.Second)
	sc := stepScope()
	if _, err := ev.eval("globalThis.leak = 1; results.a.value = 0; return 1", sc); err != nil {
		t.Fatal(err)
	}
	got, err := ev.eval("[typeof leak, results.a.value]", sc)
	if err != nil || string(got) != `["undefined",42]` {
		t.Errorf("second evaluation saw %s (%v)", got, err)
	}
}

func TestErrorOfCombinesArrayErrors(t *testing.T) {
	got := errorOf(raw(`[1,{"error":{"name":"A","message":"one"}},{"error":{"name":"B","message":"two"}}]`))
	want := `{"errors":[{"name":"A","message":"one"},{"name":"B","message":"two"}],"message":"one\ntwo","name":"MultipleErrors"}`
	if !jsonSame(got, raw(want)) {
		t.Errorf("errorOf = %s, want %s", got, want)
	}
	if got := errorOf(raw(`[1,{"error":{"name":"A","message":"one"}}]`)); !jsonSame(got, raw(`{"name":"A","message":"one"}`)) {
		t.Errorf("one error: %s", got)
	}
	if got := errorOf(raw(`{"ok":1}`)); string(got) != "null" {
		t.Errorf("no error: %s", got)
	}
}

func TestWrapExpr(t *testing.T) {
	for expr, statements := range map[string]bool{
		"a + b": false, "a;": false, "const x = 1; return x": true, "return 1": true, "if (a) { return 1 }": true,
		"x.map(v => { return v; })": false, "`a;${b}`": false, "'a;b'": false, "a // c;\n": false, "a; b": true,
		"/* ; */ a": false, "[1,2].map(v => v);": false,
	} {
		got := strings.Contains(wrapExpr(expr), "=> {\nreturn (")
		if got == statements {
			t.Errorf("wrapExpr(%q): statements = %v, want %v:\n%s", expr, !got, statements, wrapExpr(expr))
		}
	}
}

func TestRetryDelay(t *testing.T) {
	p := &Retry{Constant: &ConstantRetry{Attempts: 2, Seconds: 3}, Exponential: &ExponentialRetry{Attempts: 3, Multiplier: 2, Seconds: 2}}
	// constant first, then multiplier × seconds^k where k counts every retry
	want := []time.Duration{3 * time.Second, 3 * time.Second, 16 * time.Second, 32 * time.Second, 64 * time.Second}
	for k := 1; k <= 5; k++ {
		if got := retryDelay(p, k, "seed"); got != want[k-1] {
			t.Errorf("retry %d: %s, want %s", k, got, want[k-1])
		}
	}
	j := &Retry{Exponential: &ExponentialRetry{Attempts: 30, Multiplier: 1, Seconds: 10, RandomFactor: 50}}
	for k := 1; k <= 3; k++ {
		base := time.Duration(float64(time.Second) * pow(10, k))
		got := retryDelay(j, k, "seed")
		if got < base/2 || got > base*3/2 || got != retryDelay(j, k, "seed") {
			t.Errorf("jittered retry %d: %s, want within ±50%% of %s and the same on replay", k, got, base)
		}
	}
	if got := retryDelay(j, 20, "seed"); got != maxRetryDelay {
		t.Errorf("retry 20: %s, want the 6 h cap", got)
	}
	if retryAllowed(p, 5, nil) || !retryAllowed(p, 4, nil) || retryAllowed(p, 0, ptrBool(false)) {
		t.Error("retryAllowed: 5 retries allowed, none when retry_if is false")
	}
}

func pow(b float64, e int) float64 {
	r := 1.0
	for i := 0; i < e; i++ {
		r *= b
	}
	return r
}

func ptrBool(b bool) *bool { return &b }

func TestIterFlowInput(t *testing.T) {
	got := iterFlowInput(raw(`{"x":1,"iter":{"index":0,"value":"a"},"iter_parent":{"index":2,"value":"b"}}`), 3, raw(`"c"`))
	want := `{"x":1,"iter_parent":{"index":0,"value":"a"},"iter_parent_parent":{"index":2,"value":"b"},"iter":{"index":3,"value":"c"}}`
	if string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
