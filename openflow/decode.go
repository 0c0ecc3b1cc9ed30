package openflow

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strings"
)

// This file decodes the parts of a flow: its value, modules, module
// values and the objects around them (input transforms, stop_after_if,
// suspend, retry), recording problems with their JSON paths.

func (d *decoder) flowValue(path string, raw json.RawMessage) FlowValue {
	var fv FlowValue
	o := d.object(path, raw, "a FlowValue object {modules: [...]}")
	if o == nil {
		return fv
	}
	if v, ok := o.get("modules", "an array of modules"); ok {
		fv.Modules = d.modules(join(path, "modules"), v)
	}
	if v, ok := o.opt("failure_module"); ok {
		fv.FailureModule = d.module(join(path, "failure_module"), v)
	}
	if _, ok := o.opt("preprocessor_module"); ok {
		d.fail(join(path, "preprocessor_module"), "not supported yet: Windmill runs a preprocessor only for runs started by a webhook, email or HTTP trigger, which this engine does not have; remove it (the flow's args reach the first module as they are)")
	}
	fv.SameWorker = o.boolean("same_worker", false)
	if v, ok := o.opt("flow_env"); ok {
		if jsonKind(v) != "an object" {
			d.fail(join(path, "flow_env"), "expected an object of names to values, found %s", jsonKind(v))
		} else {
			fv.FlowEnv = compact(v)
		}
	}
	fv.SkipExpr = o.str("skip_expr", false)
	d.checkExpr(join(path, "skip_expr"), fv.SkipExpr)
	if o.str("early_return", false) != "" {
		d.fail(join(path, "early_return"), "not supported yet: a run here returns only when the flow ends; remove it (the flow's result is its last module's)")
	}
	d.refuseCacheTTL(o)
	if v, ok := o.opt("priority"); ok {
		n := o.number("priority", 0)
		if n != math.Trunc(n) || math.Abs(n) > math.MaxInt32 {
			d.fail(join(path, "priority"), "expected an integer of at most %d in absolute value, found %s", math.MaxInt32, v)
		} else {
			fv.Priority = int(n)
		}
	}
	fv.ConcurrentLimit = o.integer("concurrent_limit", 0)
	fv.ConcurrencyTimeWindowS = o.number("concurrency_time_window_s", 0)
	if fv.ConcurrencyTimeWindowS < 0 {
		d.fail(join(path, "concurrency_time_window_s"), "expected a number of seconds of at least 0, found %v", fv.ConcurrencyTimeWindowS)
	} else if fv.ConcurrencyTimeWindowS > 0 && fv.ConcurrentLimit == 0 {
		d.fail(join(path, "concurrency_time_window_s"), "has no effect without concurrent_limit: set concurrent_limit (the most runs in the window) or remove it")
	}
	if o.str("concurrency_key", false) != "" {
		d.fail(join(path, "concurrency_key"), "not supported yet: a key computed from each run's args needs the runs to be started through this engine, and runs of a flow's workflow are started by name; remove it (concurrent_limit then counts all the flow's runs together, as Windmill does without a key)")
	}
	return fv
}

// refuseCacheTTL records a cache_ttl (on a flow or a module): no result
// cache exists here, and ignoring it would run what Windmill would not.
func (d *decoder) refuseCacheTTL(o *object) {
	if o.number("cache_ttl", 0) != 0 {
		d.fail(join(o.path, "cache_ttl"), "not supported yet: this engine has no result cache, so every run executes every module; remove it")
	}
}

// refuseSecretRefs records a static value that names a Windmill variable
// or resource ("$var:<path>", "$res:<path>", in a string or in an object's
// members, as Windmill resolves them): there is no variables and resources
// store here, and passing the reference on as a string would be wrong.
func (d *decoder) refuseSecretRefs(path string, v json.RawMessage) {
	switch jsonKind(v) {
	case "a string":
		var s string
		if json.Unmarshal(v, &s) == nil && (strings.HasPrefix(s, "$var:") || strings.HasPrefix(s, "$res:")) {
			d.fail(path, "%q: variables and resources ($var:, $res:) are not supported yet: this engine has no store for them; pass the value in the flow's args (or flow_env) instead", s)
		}
	case "an object":
		ms, err := objectMembers(v)
		if err != nil {
			return
		}
		for _, m := range ms {
			d.refuseSecretRefs(join(path, m.key), m.val)
		}
	}
}

func (d *decoder) modules(path string, raw json.RawMessage) []*Module {
	var items []json.RawMessage
	if jsonKind(raw) != "an array" || json.Unmarshal(raw, &items) != nil {
		d.fail(path, "expected an array of modules, found %s", jsonKind(raw))
		return nil
	}
	mods := make([]*Module, 0, len(items))
	for i, it := range items {
		if m := d.module(index(path, i), it); m != nil {
			mods = append(mods, m)
		}
	}
	return mods
}

// idPattern is what a module id may contain: letters, digits, '_' and '-'
// (ids name durable steps and results.<id>).
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func (d *decoder) module(path string, raw json.RawMessage) *Module {
	o := d.object(path, raw, "a module object {id, value: {type, …}}")
	if o == nil {
		return nil
	}
	m := &Module{path: path}
	m.ID = o.str("id", false)
	switch {
	case m.ID == "":
		d.unnamed = append(d.unnamed, m)
	case !idPattern.MatchString(m.ID):
		d.fail(join(path, "id"), "invalid id %q: expected 1 to 128 letters, digits, '_' or '-'", m.ID)
	default:
		if first, dup := d.ids[m.ID]; dup {
			d.fail(join(path, "id"), "duplicate id %q: already used by %s (ids must be unique in a flow)", m.ID, first)
		} else {
			d.ids[m.ID] = path
		}
	}
	m.Summary = o.str("summary", false)
	if v, ok := o.get("value", "a module value {type: identity|rawscript|script|flow|forloopflow|whileloopflow|branchone|branchall, …}"); ok {
		m.Value = d.moduleValue(join(path, "value"), v)
	}
	m.StopAfterIf = d.stopAfterIf(o, "stop_after_if")
	m.StopAfterAllItersIf = d.stopAfterIf(o, "stop_after_all_iters_if")
	if s := o.sub("skip_if", "an object {expr}"); s != nil {
		m.SkipIf = &SkipIf{Expr: s.str("expr", true)}
		d.checkExpr(join(s.path, "expr"), m.SkipIf.Expr)
	}
	if v, ok := o.opt("sleep"); ok {
		m.Sleep = d.transform(join(path, "sleep"), v, true)
	}
	if v, ok := o.opt("timeout"); ok {
		m.Timeout = d.transform(join(path, "timeout"), v, true)
	}
	m.Suspend = d.suspend(o)
	m.Retry = d.retry(o)
	m.ContinueOnError = o.boolean("continue_on_error", false)
	d.refuseCacheTTL(o)
	if o.boolean("delete_after_use", false) {
		d.fail(join(path, "delete_after_use"), "not supported yet: a module's args and result are kept in its recorded step (retries and forks of the run reuse them); remove it")
	}
	if o.number("priority", 0) != 0 {
		d.fail(join(path, "priority"), "a module's priority is not supported: modules run as steps of the flow's run, which has one priority; set the flow's value.priority instead")
	}
	if s := o.sub("mock", "an object {enabled, return_value}"); s != nil {
		rv, _ := s.opt("return_value")
		if rv == nil {
			rv = json.RawMessage("null")
		}
		m.Mock = &Mock{Enabled: s.boolean("enabled", false), ReturnValue: compact(rv)}
	}
	return m
}

// moduleTypes lists the module value types, for messages.
const moduleTypes = "identity, rawscript, script, flow, forloopflow, whileloopflow, branchone, branchall"

func (d *decoder) moduleValue(path string, raw json.RawMessage) ModuleValue {
	o := d.object(path, raw, "a module value {type, …}")
	if o == nil {
		return nil
	}
	typ := o.str("type", true)
	switch typ {
	case "identity":
		return Identity{}
	case "rawscript":
		v := RawScript{Content: o.str("content", true), Language: o.str("language", true), Path: o.str("path", false)}
		d.checkLanguage(join(path, "language"), v.Language)
		for _, k := range []string{"concurrent_limit", "concurrency_time_window_s", "custom_concurrency_key"} {
			if _, ok := o.opt(k); ok {
				d.fail(join(path, k), "a script's own concurrency limit is not supported: modules run as steps of the flow's run; limit the flow's runs with value.concurrent_limit instead")
			}
		}
		v.InputTransforms = d.inputTransforms(o)
		return v
	case "script":
		return PathScript{Path: d.scriptPath(o), InputTransforms: d.inputTransforms(o)}
	case "flow":
		return PathFlow{Path: d.scriptPath(o), InputTransforms: d.inputTransforms(o)}
	case "forloopflow":
		v := ForLoop{SkipFailures: o.boolean("skip_failures", false), Parallel: o.boolean("parallel", false)}
		if it, ok := o.get("iterator", `an input transform {"type": "javascript", "expr": …} or {"type": "static", "value": […]}`); ok {
			if t := d.transform(join(path, "iterator"), it, false); t != nil {
				v.Iterator = *t
			}
		}
		if p, ok := o.opt("parallelism"); ok {
			v.Parallelism = d.transform(join(path, "parallelism"), p, true)
		}
		v.Modules = d.bodyModules(o)
		return v
	case "whileloopflow":
		return WhileLoop{SkipFailures: o.boolean("skip_failures", false), Modules: d.bodyModules(o)}
	case "branchone":
		v := BranchOne{Branches: d.branches(o, true)}
		if def, ok := o.get("default", "an array of modules (run when no branch matches)"); ok {
			v.Default = d.modules(join(path, "default"), def)
		}
		return v
	case "branchall":
		return BranchAll{Branches: d.branches(o, false), Parallel: o.boolean("parallel", true)}
	case "":
		return nil // missing or mistyped: already reported
	case "aiagent", "flowscript", "modules_node", "default_node":
		d.fail(join(path, "type"), "module type %q is not supported by this engine; supported types: %s", typ, moduleTypes)
	default:
		d.fail(join(path, "type"), "unknown module type %q; expected one of %s", typ, moduleTypes)
	}
	return nil
}

func (d *decoder) scriptPath(o *object) string {
	p := o.str("path", true)
	if p != "" && (strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), "..")) {
		d.fail(join(o.path, "path"), "invalid path %q: expected a relative path such as f/folder/name, without '..'", p)
	}
	return p
}

func (d *decoder) bodyModules(o *object) []*Module {
	v, ok := o.get("modules", "an array of modules (the loop body)")
	if !ok {
		return nil
	}
	return d.modules(join(o.path, "modules"), v)
}

func (d *decoder) branches(o *object, one bool) []Branch {
	v, ok := o.get("branches", "an array of branches {modules: [...]}")
	if !ok {
		return nil
	}
	path := join(o.path, "branches")
	var items []json.RawMessage
	if jsonKind(v) != "an array" || json.Unmarshal(v, &items) != nil {
		d.fail(path, "expected an array of branches, found %s", jsonKind(v))
		return nil
	}
	out := make([]Branch, 0, len(items))
	for i, it := range items {
		bp := index(path, i)
		bo := d.object(bp, it, "a branch object {expr, modules: [...]}")
		if bo == nil {
			continue
		}
		b := Branch{Summary: bo.str("summary", false), SkipFailure: bo.boolean("skip_failure", false)}
		if one {
			b.Expr = bo.str("expr", true)
			d.checkExpr(join(bp, "expr"), b.Expr)
		}
		if mv, ok := bo.get("modules", "an array of modules"); ok {
			b.Modules = d.modules(join(bp, "modules"), mv)
		}
		out = append(out, b)
	}
	return out
}

func (d *decoder) inputTransforms(o *object) Transforms {
	key := "input_transforms"
	v, ok := o.opt(key)
	if !ok {
		if v, ok = o.opt("input_transform"); !ok {
			return nil
		}
		key = "input_transform"
	}
	path := join(o.path, key)
	to := d.object(path, v, "an object of argument names to input transforms")
	if to == nil {
		return nil
	}
	ts := make(Transforms, 0, len(to.order))
	for _, name := range to.order {
		if t := d.transform(join(path, name), to.fields[name], false); t != nil {
			ts = append(ts, NamedTransform{Name: name, InputTransform: *t})
		}
	}
	return ts
}

// transform decodes an InputTransform; bareNumber allows a plain number
// (a static value), as Windmill does for timeout, sleep and parallelism.
func (d *decoder) transform(path string, raw json.RawMessage, bareNumber bool) *InputTransform {
	if bareNumber && jsonKind(raw) == "a number" {
		return &InputTransform{Static: true, Value: compact(raw), path: path}
	}
	want := `an input transform {"type": "static", "value": …} or {"type": "javascript", "expr": "…"}`
	if bareNumber {
		want += " or a number"
	}
	o := d.object(path, raw, want)
	if o == nil {
		return nil
	}
	switch typ := o.str("type", true); typ {
	case "static":
		v, ok := o.fields["value"]
		if !ok {
			v = json.RawMessage("null")
		}
		d.refuseSecretRefs(join(path, "value"), v)
		return &InputTransform{Static: true, Value: compact(v), path: path}
	case "javascript":
		t := &InputTransform{Expr: o.str("expr", false), path: path}
		d.checkExpr(join(path, "expr"), t.Expr)
		return t
	case "":
	case "ai":
		d.fail(join(path, "type"), `input transform type "ai" is not supported; expected "static" or "javascript"`)
	default:
		d.fail(join(path, "type"), `unknown input transform type %q; expected "static" or "javascript"`, typ)
	}
	return nil
}

func (d *decoder) stopAfterIf(o *object, key string) *StopAfterIf {
	s := o.sub(key, "an object {expr, skip_if_stopped, error_message}")
	if s == nil {
		return nil
	}
	st := &StopAfterIf{Expr: s.str("expr", true), SkipIfStopped: s.boolean("skip_if_stopped", false), ErrorIncludeResult: s.boolean("error_include_result", false)}
	d.checkExpr(join(s.path, "expr"), st.Expr)
	if _, ok := s.opt("error_message"); ok {
		msg := s.str("error_message", false)
		st.ErrorMessage = &msg
	}
	return st
}

func (d *decoder) suspend(o *object) *Suspend {
	s := o.sub("suspend", "an object {required_events, timeout, …}")
	if s == nil {
		return nil
	}
	sp := &Suspend{RequiredEvents: s.integer("required_events", 0), Timeout: s.number("timeout", 0),
		ContinueOnDisapproveTimeout: s.boolean("continue_on_disapprove_timeout", false)}
	if sp.Timeout < 0 {
		d.fail(join(s.path, "timeout"), "expected a number of seconds of at least 0, found %v", sp.Timeout)
	}
	if rf := s.sub("resume_form", "an object {schema: {…}}"); rf != nil {
		if v, ok := rf.opt("schema"); ok && !isNull(v) {
			path := join(rf.path, "schema")
			if jsonKind(v) != "an object" {
				d.fail(path, "expected a JSON Schema (an object), found %s", jsonKind(v))
			} else if _, err := compileSchema(v); err != nil {
				d.fail(path, "invalid JSON Schema: %v", err)
			} else {
				sp.ResumeForm = compact(v)
			}
		}
	}
	return sp
}

func (d *decoder) retry(o *object) *Retry {
	s := o.sub("retry", "an object {constant: {attempts, seconds}, exponential: {…}, retry_if: {expr}}")
	if s == nil {
		return nil
	}
	r := &Retry{}
	if c := s.sub("constant", "an object {attempts, seconds}"); c != nil {
		r.Constant = &ConstantRetry{Attempts: c.integer("attempts", 0), Seconds: c.number("seconds", 0)}
		if r.Constant.Seconds < 0 {
			d.fail(join(c.path, "seconds"), "expected a number of seconds of at least 0, found %v", r.Constant.Seconds)
		}
	}
	if e := s.sub("exponential", "an object {attempts, multiplier, seconds, random_factor}"); e != nil {
		r.Exponential = &ExponentialRetry{Attempts: e.integer("attempts", 0), Multiplier: e.number("multiplier", 1),
			Seconds: e.number("seconds", 1), RandomFactor: e.number("random_factor", 0)}
		if r.Exponential.Seconds < 1 && r.Exponential.Attempts > 0 {
			d.fail(join(e.path, "seconds"), "expected a number of seconds of at least 1, found %v", r.Exponential.Seconds)
		}
		if f := r.Exponential.RandomFactor; f < 0 || f > 100 {
			d.fail(join(e.path, "random_factor"), "expected a percentage from 0 to 100, found %v", f)
		}
	}
	if ri := s.sub("retry_if", "an object {expr}"); ri != nil {
		r.RetryIf = ri.str("expr", true)
		d.checkExpr(join(ri.path, "expr"), r.RetryIf)
	}
	return r
}
