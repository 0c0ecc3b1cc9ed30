package openflow

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// How a run's durable keys are named (every module execution is a step):
//
//	a                 module a (its first attempt); a#1, a#2 its retries
//	b[3]/c            module c in iteration 3 of loop b
//	d/0/e, d/default/e module e in branch 0 (or the default) of branch d
//	f/g               module g of the flow module f runs by path
//	a@pre, a@post     a container's evaluations before and after its body
//	a@sleep, a@retry.1 durable sleeps after a, before a's retry 1
//	a@suspend, a@resume.0  a suspend's start and its resume waits
//	@outcome          a failed or skipped flow's result
//
// Ids may hold only letters, digits, '_' and '-', so keys never collide.
const (
	outcomeStep    = "@outcome"
	definitionStep = "@definition"
	skipExprStep   = "@skip_expr"
)

// flowRun is the interpreter of one execution pass of one run.
type flowRun struct {
	e        *Engine
	ctx      ow.Context
	runID    string
	started  time.Time
	workRoot string // <WorkDir>/<run id>
}

// frame is the context of one module list: a flow, a branch or a loop
// iteration.
type frame struct {
	prefix    string          // durable-key prefix of its modules
	flowInput json.RawMessage // the (sub)flow's args (with iter in a loop)
	env       json.RawMessage // flow_env
	res       *resultsScope
	parallel  bool // runs on a goroutine of a parallel loop or branchall
	depth     int  // flows by path entered
	shared    bool // same_worker: scripts share ./shared
	extra     map[string]json.RawMessage
	doc       json.RawMessage // the JSON of the (sub)flow the modules are in
}

// child returns a frame for a nested module list.
func (f *frame) child(prefix string, flowInput json.RawMessage, res *resultsScope, parallel bool) *frame {
	c := *f
	c.prefix, c.flowInput, c.res, c.parallel = prefix, flowInput, res, parallel || f.parallel
	c.extra = nil
	return &c
}

// outcome is the result of a module or a module list.
type outcome struct {
	result json.RawMessage
	failed bool
	// stop ends the enclosing flow early (or breaks the enclosing loop).
	stop *stopSignal
	// continued: the list failed only because its last module failed with
	// continue_on_error (no failure module runs then).
	continued bool
	// skipped: skip_if turned the module into an identity.
	skipped bool
	// noRetry: the failure is an early stop's error, never retried.
	noRetry bool
	// sleep is the delay after the module.
	sleep time.Duration
}

type stopSignal struct {
	result  json.RawMessage
	skipped bool
}

// runStep runs fn as a durable step: ow.Run, or ow.Go on a goroutine of a
// parallel loop or branchall (the pass's concurrent steps).
func runStep[T any](r *flowRun, f *frame, name string, fn func(context.Context) (T, error)) (T, error) {
	if f.parallel {
		return ow.Go(r.ctx, name, fn).Get()
	}
	return ow.Run(r.ctx, name, fn)
}

// body runs a flow's modules, then its failure module if a module failed.
func (r *flowRun) body(f *frame, fl *Flow) (outcome, error) {
	o, err := r.list(f, fl.Value.Modules, f.flowInput)
	if err != nil || !o.failed || o.continued || fl.Value.FailureModule == nil {
		return o, err
	}
	fm := fl.Value.FailureModule
	ff := *f
	ff.extra = map[string]json.RawMessage{
		"started_at":  jsonString(r.started.UTC().Format(time.RFC3339Nano)),
		"flow_job_id": jsonString(r.runID),
	}
	fo, _, err := r.module(&ff, fm, o.result, resumeState{})
	if err != nil {
		return outcome{}, err
	}
	f.res.set(fm.ID, fo.result)
	if fo.failed {
		return outcome{result: fo.result, failed: true}, nil
	}
	if rec, ok := field(fo.result, "recover"); ok && truthy(rec) {
		return outcome{result: fo.result}, nil
	}
	return outcome{result: fo.result, failed: true}, nil
}

// list runs modules in sequence; prev is the first module's
// previous_result (the list's args).
func (r *flowRun) list(f *frame, mods []*Module, prev json.RawMessage) (outcome, error) {
	out := outcome{result: prev}
	var rs resumeState
	for _, m := range mods {
		o, next, err := r.module(f, m, prev, rs)
		if err != nil {
			return outcome{}, err
		}
		f.res.set(m.ID, o.result)
		if o.stop != nil {
			return outcome{result: o.stop.result, stop: o.stop}, nil
		}
		if o.failed && (!m.ContinueOnError || o.noRetry) {
			// an early stop's error or a refused suspension ends the flow
			// even with continue_on_error
			return outcome{result: o.result, failed: true}, nil
		}
		out = outcome{result: o.result, failed: o.failed, continued: o.failed}
		prev, rs = o.result, next
	}
	return out, nil
}

// module runs one module with its retries, then its suspend and sleep.
func (r *flowRun) module(f *frame, m *Module, prev json.RawMessage, rs resumeState) (outcome, resumeState, error) {
	key := f.prefix + m.ID
	o, err := r.withRetries(f, m, key, prev, rs)
	if err != nil || o.failed || o.stop != nil {
		return o, resumeState{}, err
	}
	var next resumeState
	if sp := m.Suspend; sp != nil && sp.RequiredEvents > 0 && !o.skipped {
		var failed *outcome
		next, failed, err = r.suspendAfter(f, m, key)
		if err != nil {
			return outcome{}, resumeState{}, err
		}
		if failed != nil {
			return *failed, resumeState{}, nil
		}
	}
	if o.sleep > 0 {
		if err := ow.Sleep(r.ctx, key+"@sleep", o.sleep); err != nil {
			return outcome{}, resumeState{}, err
		}
	}
	return o, next, nil
}

// withRetries runs attempts of m until one succeeds or its retry policy
// (reference §3.11) gives up; a retry runs with the failed attempt's
// args, after a durable sleep.
func (r *flowRun) withRetries(f *frame, m *Module, key string, prev json.RawMessage, rs resumeState) (outcome, error) {
	var args json.RawMessage
	for attempt := 0; ; attempt++ {
		akey := key
		if attempt > 0 {
			akey = fmt.Sprintf("%s#%d", key, attempt)
		}
		o, retryArgs, retryIf, err := r.attempt(f, m, akey, attempt, prev, rs, args)
		if err != nil || !o.failed || o.noRetry || !retryAllowed(m.Retry, attempt, retryIf) {
			return o, err
		}
		args = retryArgs
		if d := retryDelay(m.Retry, attempt+1, r.runID+"/"+key); d > 0 {
			if err := ow.Sleep(r.ctx, fmt.Sprintf("%s@retry.%d", key, attempt+1), d); err != nil {
				return outcome{}, err
			}
		}
	}
}

// attempt runs one attempt of m; it returns the args to retry with and
// the retry_if verdict (nil: no retry_if).
func (r *flowRun) attempt(f *frame, m *Module, akey string, attempt int, prev json.RawMessage, rs resumeState, args json.RawMessage) (outcome, json.RawMessage, *bool, error) {
	switch m.Value.(type) {
	case Identity, RawScript, PathScript:
		rec, err := r.leaf(f, m, akey, attempt, prev, rs, args)
		if err != nil {
			return outcome{}, nil, nil, err
		}
		return rec.outcome(), rec.Args, rec.Retry, nil
	}
	o, err := r.container(f, m, akey, prev, rs)
	if err != nil || !o.failed || m.Retry == nil || m.Retry.RetryIf == "" || o.noRetry {
		return o, nil, nil, err
	}
	retry, err := runStep(r, f, akey+"@retry_if", func(context.Context) (bool, error) {
		return r.retryIf(f, m, o.result), nil
	})
	return o, nil, &retry, err
}

// retryAllowed says whether failed attempt number attempt (0 the first)
// may be followed by another.
func retryAllowed(p *Retry, attempt int, retryIf *bool) bool {
	if p == nil || retryIf != nil && !*retryIf {
		return false
	}
	total := 0
	if p.Constant != nil {
		total += p.Constant.Attempts
	}
	if p.Exponential != nil {
		total += p.Exponential.Attempts
	}
	return attempt < total
}

// maxRetryDelay caps a retry's delay: 6 h, as in Windmill.
const maxRetryDelay = 6 * time.Hour

// retryDelay is Windmill's delay before retry k (1, 2, …): the constant
// seconds for the first constant.attempts retries, then multiplier ×
// seconds^k (k counts the constant retries too), ± random_factor percent
// (drawn from a hash of seed and k, so a replay waits the same), capped at
// 6 h.
func retryDelay(p *Retry, k int, seed string) time.Duration {
	if p == nil {
		return 0
	}
	constant := 0
	if p.Constant != nil {
		constant = p.Constant.Attempts
		if k <= constant {
			return seconds(p.Constant.Seconds)
		}
	}
	e := p.Exponential
	if e == nil {
		return 0
	}
	s := e.Multiplier * math.Pow(e.Seconds, float64(k))
	if e.RandomFactor > 0 {
		h := fnv.New64a()
		fmt.Fprintf(h, "%s#%d", seed, k)
		u := float64(h.Sum64()%10001)/10000*2 - 1 // in [-1, 1]
		s += s * e.RandomFactor / 100 * u
	}
	d := seconds(s)
	return min(d, maxRetryDelay)
}

func seconds(s float64) time.Duration {
	if s <= 0 || math.IsNaN(s) {
		return 0
	}
	if s > maxRetryDelay.Seconds()*4 {
		return maxRetryDelay * 4
	}
	return time.Duration(s * float64(time.Second))
}

// argScope is the scope of a module's input transforms, skip_if, iterator
// and branch predicates (reference §2.1).
func (r *flowRun) argScope(f *frame, prev json.RawMessage, rs resumeState) exprScope {
	vars := map[string]json.RawMessage{
		"flow_input": f.flowInput, "previous_result": prev, "result": prev,
		"flow_env": envOf(f), "params": json.RawMessage("{}"),
	}
	rs.vars(vars)
	for k, v := range f.extra {
		vars[k] = v
	}
	return exprScope{vars: vars, lazy: map[string]func() json.RawMessage{"error": func() json.RawMessage { return errorOf(prev) }},
		results: f.res.get, resultIDs: f.res.ids}
}

// resultScope is the scope of stop_after_if, sleep and the like: the
// module's result, flow_input and flow_env (results is not in scope).
func resultScope(f *frame, result json.RawMessage) exprScope {
	return exprScope{vars: map[string]json.RawMessage{
		"result": result, "previous_result": result, "flow_input": f.flowInput, "flow_env": envOf(f),
	}}
}

func envOf(f *frame) json.RawMessage {
	if len(f.env) == 0 {
		return json.RawMessage("{}")
	}
	return f.env
}

// predicate evaluates expr and converts its value as JavaScript's Boolean().
func (r *flowRun) predicate(expr string, sc exprScope) (bool, error) {
	v, err := r.e.ev.eval(expr, sc)
	if err != nil {
		return false, err
	}
	return truthyJSON(v), nil
}

// truthyJSON is Boolean(v) for a JSON value.
func truthyJSON(v json.RawMessage) bool {
	switch s := string(compact(v)); {
	case s == "" || s == "null" || s == "false" || s == `""`:
		return false
	case jsonKind(v) == "a number":
		var n float64
		_ = json.Unmarshal(v, &n)
		return n != 0
	}
	return true
}

// retryIf evaluates m's retry_if on a failed result: `result` and
// `error` of the attempt, and flow_env, are in scope. An evaluation error
// counts as false.
func (r *flowRun) retryIf(f *frame, m *Module, result json.RawMessage) bool {
	ok, err := r.predicate(m.Retry.RetryIf, exprScope{vars: map[string]json.RawMessage{
		"result": result, "error": errorOf(result), "flow_env": envOf(f), "flow_input": f.flowInput,
	}})
	return err == nil && ok
}

// transformValue evaluates one input transform.
func (r *flowRun) transformValue(t *InputTransform, sc exprScope) (json.RawMessage, error) {
	if t.Static {
		if len(t.Value) == 0 {
			return json.RawMessage("null"), nil
		}
		return t.Value, nil
	}
	return r.e.ev.eval(t.Expr, sc)
}

// numberOf evaluates a transform that must give a number of seconds (or a
// count); what names it in the error.
func (r *flowRun) numberOf(t *InputTransform, sc exprScope, what string) (float64, error) {
	v, err := r.transformValue(t, sc)
	if err != nil {
		return 0, err
	}
	var n float64
	if err := json.Unmarshal(v, &n); err != nil || jsonKind(v) != "a number" {
		return 0, fmt.Errorf("Expected a number value for %s, found: %s", what, v)
	}
	return n, nil
}

var unsafeKeyChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// workDir creates a fresh working directory for the step akey.
func (r *flowRun) workDir(akey string) (string, error) {
	name := unsafeKeyChars.ReplaceAllString(akey, "_")
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	if err := os.MkdirAll(r.workRoot, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(r.workRoot, name+"-")
}

// sharedDir is the ./shared directory of a same_worker run.
func (r *flowRun) sharedDir() (string, error) {
	d := filepath.Join(r.workRoot, "shared")
	return d, os.MkdirAll(d, 0o755)
}

// cleanup removes the run's working directories once it finishes.
func (r *flowRun) cleanup() {
	if err := os.RemoveAll(r.workRoot); err != nil {
		r.e.opts.Logger.Warn("openflow: could not remove a run's work directory", "run", r.runID, "dir", r.workRoot, "error", err)
	}
}
