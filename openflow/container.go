package openflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	ow "github.com/openworkflow-go/openworkflow"
)

// preRecord is the output of a container's "@pre" step: what it evaluates
// before its body (skip_if, then the iterator, the branch chosen or the
// sub-flow's args and definition), so replays take the same path.
type preRecord struct {
	Skipped bool `json:"skipped,omitempty"`
	// Failure is the container's failure result when an evaluation failed.
	Failure     json.RawMessage   `json:"failure,omitempty"`
	Items       []json.RawMessage `json:"items,omitempty"`
	Parallelism int               `json:"parallelism,omitempty"`
	// Branch is branchone's choice: a branch index, or -1 for the default.
	Branch int             `json:"branch"`
	Args   json.RawMessage `json:"args,omitempty"`
	Flow   json.RawMessage `json:"flow,omitempty"`
}

// postRecord is the output of a container's "@post" step.
type postRecord struct {
	Stop    bool            `json:"stop,omitempty"`
	Failure json.RawMessage `json:"failure,omitempty"`
	SleepS  float64         `json:"sleep_s,omitempty"`
}

// container runs one attempt of a loop, branch or flow module.
func (r *flowRun) container(f *frame, m *Module, akey string, prev json.RawMessage, rs resumeState) (outcome, error) {
	pre, err := r.pre(f, m, akey, prev, rs)
	if err != nil {
		return outcome{}, err
	}
	if pre.Skipped {
		return outcome{result: prev, skipped: true}, nil
	}
	if pre.Failure != nil {
		return outcome{result: pre.Failure, failed: true}, nil
	}
	var o outcome
	switch v := m.Value.(type) {
	case ForLoop:
		o, err = r.forLoop(f, m, akey, v, pre)
	case WhileLoop:
		o, err = r.whileLoop(f, m, akey, v)
	case BranchOne:
		o, err = r.branchOne(f, akey, v, pre.Branch, prev)
	case BranchAll:
		o, err = r.branchAll(f, akey, v)
	case PathFlow:
		o, err = r.subflow(f, m, akey, pre)
	default:
		return outcome{}, fmt.Errorf("module %s: no value", m.ID)
	}
	if err != nil || o.failed || o.stop != nil {
		return o, err
	}
	return r.post(f, m, akey, o)
}

// pre evaluates what a container needs before its body, in a durable step
// when anything is evaluated.
func (r *flowRun) pre(f *frame, m *Module, akey string, prev json.RawMessage, rs resumeState) (preRecord, error) {
	switch m.Value.(type) {
	case WhileLoop, BranchAll:
		if m.SkipIf == nil {
			return preRecord{}, nil
		}
	}
	return runStep(r, f, akey+"@pre", func(context.Context) (preRecord, error) {
		sc := r.argScope(f, prev, rs)
		fail := func(err error) (preRecord, error) {
			return preRecord{Failure: executionErr(m.ID, err.Error())}, nil
		}
		if m.SkipIf != nil {
			skip, err := r.predicate(m.SkipIf.Expr, sc)
			if err != nil {
				return fail(err)
			}
			if skip {
				return preRecord{Skipped: true}, nil
			}
		}
		var rec preRecord
		switch v := m.Value.(type) {
		case ForLoop:
			items, err := r.iterator(&v.Iterator, sc)
			if err != nil {
				return fail(err)
			}
			rec.Items = items
			if v.Parallelism != nil {
				n, err := r.numberOf(v.Parallelism, sc, "parallelism")
				if err != nil {
					return fail(err)
				}
				rec.Parallelism = int(n)
			}
		case BranchOne:
			rec.Branch = -1
			for i, b := range v.Branches {
				ok, err := r.predicate(b.Expr, sc)
				if err != nil {
					return fail(err)
				}
				if ok {
					rec.Branch = i
					break
				}
			}
		case PathFlow:
			args, err := r.evalTransforms(v.InputTransforms, sc)
			if err != nil {
				return fail(err)
			}
			def, err := r.e.dirs.flowJSON(v.Path)
			if err != nil {
				return fail(err)
			}
			rec.Args, rec.Flow = args, def
		}
		return rec, nil
	})
}

// iterator evaluates a forloop's iterator, which must give an array.
func (r *flowRun) iterator(t *InputTransform, sc exprScope) ([]json.RawMessage, error) {
	v, err := r.transformValue(t, sc)
	if err != nil {
		return nil, err
	}
	items, ok := arrayItems(v)
	if !ok {
		return nil, fmt.Errorf("Expected an array value in the iterator expression, found: %s", serdeSequenceError(v))
	}
	for i := range items {
		items[i] = compact(items[i])
	}
	return items, nil
}

// serdeSequenceError is the message Windmill's deserializer gives for a
// value that is not an array.
func serdeSequenceError(v json.RawMessage) string {
	var desc string
	switch jsonKind(v) {
	case "an object":
		desc = "map"
	case "a string":
		var s string
		_ = json.Unmarshal(v, &s)
		desc = fmt.Sprintf("string %q", s)
	case "a boolean":
		desc = fmt.Sprintf("boolean `%s`", v)
	case "a number":
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			desc = fmt.Sprintf("integer `%s`", v)
		} else {
			desc = fmt.Sprintf("floating point `%s`", v)
		}
	default:
		desc = "null"
	}
	return "invalid type: " + desc + ", expected a sequence at line 1 column 0"
}

// post evaluates stop_after_all_iters_if and a computed sleep after a
// container's body (a durable step, when there is anything to evaluate).
// A stop_after_all_iters_if with an error_message fails the module with an
// EarlyStopError (holding the loop's or branchall's array with
// error_include_result), as stop_after_if does for a step.
func (r *flowRun) post(f *frame, m *Module, akey string, o outcome) (outcome, error) {
	st := m.StopAfterAllItersIf
	if _, isLoop := m.Value.(ForLoop); !isLoop {
		if _, isWhile := m.Value.(WhileLoop); !isWhile {
			if _, isAll := m.Value.(BranchAll); !isAll {
				st = nil
			}
		}
	}
	if st == nil && (m.Sleep == nil || m.Sleep.Static) {
		if m.Sleep != nil {
			var s float64
			_ = json.Unmarshal(m.Sleep.Value, &s)
			o.sleep = seconds(s)
		}
		return o, nil
	}
	rec, err := runStep(r, f, akey+"@post", func(context.Context) (postRecord, error) {
		sc := resultScope(f, o.result)
		var rec postRecord
		if st != nil {
			stop, err := r.predicate(st.Expr, sc)
			if err != nil {
				return postRecord{Failure: executionErr(m.ID, err.Error())}, nil
			}
			rec.Stop = stop
		}
		if m.Sleep != nil {
			s, err := r.numberOf(m.Sleep, sc, "sleep")
			if err != nil {
				return postRecord{Failure: executionErr(m.ID, err.Error())}, nil
			}
			rec.SleepS = s
		}
		return rec, nil
	})
	if err != nil {
		return outcome{}, err
	}
	if rec.Failure != nil {
		return outcome{result: rec.Failure, failed: true}, nil
	}
	o.sleep = seconds(rec.SleepS)
	if rec.Stop {
		if st.ErrorMessage != nil {
			// as stop_after_if's: a failure of the module, never retried
			return outcome{result: earlyStopError(st, o.result), failed: true, noRetry: true}, nil
		}
		o.stop = &stopSignal{result: o.result, skipped: st.SkipIfStopped}
	}
	return o, nil
}

// iterFlowInput is a loop iteration's flow_input: the enclosing one with
// iter = {index, value}, an enclosing iter renamed iter_parent (and so on
// up: iter_parent_parent…).
func iterFlowInput(parent json.RawMessage, index int, value json.RawMessage) json.RawMessage {
	ms, err := objectMembers(parent)
	if err != nil {
		ms = nil
	}
	out := make([]member, 0, len(ms)+1)
	for _, m := range ms {
		if isIterKey(m.key) {
			m.key += "_parent"
		}
		out = append(out, m)
	}
	iter := encodeObject([]member{{key: "index", val: json.RawMessage(strconv.Itoa(index))}, {key: "value", val: value}})
	return encodeObject(append(out, member{key: "iter", val: iter}))
}

func isIterKey(k string) bool {
	for k != "iter" {
		var ok bool
		if k, ok = strings.CutSuffix(k, "_parent"); !ok {
			return false
		}
	}
	return true
}

// iteration runs a loop body once: its flow_input has iter, its
// previous_result starts as that flow_input, and its results scope sees
// the loop's carried results. A stop_after_if on the loop module itself
// is evaluated on the iteration's result (in a step "<key>[i]@stop").
func (r *flowRun) iteration(f *frame, m *Module, akey string, body []*Module, i int, value json.RawMessage, carried *resultsScope, parallel bool) (outcome, *resultsScope, error) {
	in := iterFlowInput(f.flowInput, i, value)
	scope := newResultsScope(carried)
	fi := f.child(fmt.Sprintf("%s[%d]/", akey, i), in, scope, parallel)
	o, err := r.list(fi, body, in)
	if err != nil || o.failed || o.stop != nil || m.StopAfterIf == nil {
		return o, scope, err
	}
	stop, err := runStep(r, fi, fmt.Sprintf("%s[%d]@stop", akey, i), func(context.Context) (bool, error) {
		ok, err := r.predicate(m.StopAfterIf.Expr, resultScope(f, o.result))
		return err == nil && ok, nil
	})
	if err != nil {
		return outcome{}, scope, err
	}
	if stop {
		o.stop = &stopSignal{result: o.result}
	}
	return o, scope, nil
}

// forLoop runs a forloopflow's iterations (reference §3.4): the result is
// the array of iteration results in iteration order; a stop inside an
// iteration only breaks the loop. A long loop runs in chunk runs
// (longloop.go).
func (r *flowRun) forLoop(f *frame, m *Module, akey string, v ForLoop, pre preRecord) (outcome, error) {
	s, _ := newLoopSpec(m, akey, pre.Items, 0)
	carried := newResultsScope(f.res)
	var out arrayBuilder
	var failed bool
	var err error
	if !v.Parallel {
		_, failed, err = r.seqRange(f, s, 0, len(pre.Items), inlineLoopSteps, carried, &out)
	} else {
		failed, err = r.parRange(f, s, 0, len(pre.Items), inlineLoopSteps, pre.Parallelism, carried, &out)
		failed = failed && !v.SkipFailures
	}
	if err != nil {
		return outcome{}, err
	}
	carried.mergeInto(f.res)
	return outcome{result: out.json(), failed: failed}, nil
}

// whileLoop runs a whileloopflow until a stop_after_if (in the body or on
// the loop module) breaks it, or an iteration fails (reference §3.5);
// iter is {index: n, value: n}. It fails after MaxLoopIterations. A long
// loop runs in chunk runs (longloop.go).
func (r *flowRun) whileLoop(f *frame, m *Module, akey string, v WhileLoop) (outcome, error) {
	s, _ := newLoopSpec(m, akey, nil, 0)
	carried := newResultsScope(f.res)
	var out arrayBuilder
	limit := r.e.opts.MaxLoopIterations
	brk, failed, err := r.seqRange(f, s, 0, limit, inlineLoopSteps, carried, &out)
	if err != nil {
		return outcome{}, err
	}
	carried.mergeInto(f.res)
	if !brk && !failed {
		return outcome{result: executionErr(m.ID, fmt.Sprintf("the while loop ran %d iterations without a stop_after_if ending it (the limit is Options.MaxLoopIterations)", limit)), failed: true}, nil
	}
	return outcome{result: out.json(), failed: failed}, nil
}

// branchOne runs the chosen branch, or the default (reference §3.6), with
// the enclosing flow_input; an empty branch passes previous_result
// through, and a stop inside stops the enclosing flow.
func (r *flowRun) branchOne(f *frame, akey string, v BranchOne, chosen int, prev json.RawMessage) (outcome, error) {
	mods, label := v.Default, "default"
	if chosen >= 0 && chosen < len(v.Branches) {
		mods, label = v.Branches[chosen].Modules, strconv.Itoa(chosen)
	}
	if len(mods) == 0 {
		return outcome{result: prev}, nil
	}
	scope := newResultsScope(f.res)
	o, err := r.list(f.child(akey+"/"+label+"/", f.flowInput, scope, false), mods, f.flowInput)
	if err != nil {
		return outcome{}, err
	}
	scope.mergeInto(f.res)
	o.continued = false
	return o, nil
}

// branchAll runs every branch (reference §3.7), concurrently unless
// parallel is false; the result is the array of branch results in branch
// order. A stop inside a branch passes up to the enclosing flow (or breaks
// the enclosing loop), as in Windmill, with the branchall's array as the
// stop's result: at once when the branches run in sequence (the array of
// the branches run so far), once all have finished when they run in
// parallel (the first stopping branch, in branch order, gives
// skip_if_stopped).
func (r *flowRun) branchAll(f *frame, akey string, v BranchAll) (outcome, error) {
	n := len(v.Branches)
	run := func(j int, parallel bool) (outcome, *resultsScope, error) {
		scope := newResultsScope(f.res)
		if len(v.Branches[j].Modules) == 0 {
			return outcome{result: f.flowInput}, scope, nil
		}
		o, err := r.list(f.child(fmt.Sprintf("%s/%d/", akey, j), f.flowInput, scope, parallel), v.Branches[j].Modules, f.flowInput)
		return o, scope, err
	}
	results := make([]json.RawMessage, 0, n)
	failedAny := false
	if !v.Parallel {
		for j := 0; j < n; j++ {
			o, scope, err := run(j, false)
			if err != nil {
				return outcome{}, err
			}
			scope.mergeInto(f.res)
			results = append(results, o.result)
			if o.stop != nil {
				return stopWith(encodeArray(results), o.stop), nil
			}
			if o.failed && !v.Branches[j].SkipFailure {
				return outcome{result: encodeArray(results), failed: true}, nil
			}
		}
		return outcome{result: encodeArray(results)}, nil
	}
	scopes := make([]*resultsScope, n)
	outs, err := r.fanOut(n, 0, func(j int) (outcome, error) {
		o, scope, err := run(j, true)
		scopes[j] = scope
		return o, err
	})
	if err != nil {
		return outcome{}, err
	}
	var stop *stopSignal
	for j, o := range outs {
		scopes[j].mergeInto(f.res)
		results = append(results, o.result)
		failedAny = failedAny || o.failed && !v.Branches[j].SkipFailure
		if stop == nil && o.stop != nil {
			stop = o.stop
		}
	}
	if stop != nil && !failedAny {
		return stopWith(encodeArray(results), stop), nil
	}
	return outcome{result: encodeArray(results), failed: failedAny}, nil
}

// stopWith is the outcome of a branchall a branch's stop passes through:
// the stop goes on up with the branchall's result in place of the
// branch's.
func stopWith(result json.RawMessage, st *stopSignal) outcome {
	return outcome{result: result, stop: &stopSignal{result: result, skipped: st.skipped}}
}

// subflow runs a flow module: the flow found by path, recorded in the
// @pre step, with the evaluated transforms as its flow_input, its own
// results, its own flow_env if it has one (else the caller's), and its
// own failure module. A stop inside ends only the sub-flow.
func (r *flowRun) subflow(f *frame, m *Module, akey string, pre preRecord) (outcome, error) {
	if f.depth >= maxSubflowDepth {
		return outcome{result: executionErr(m.ID, fmt.Sprintf("flows nest more than %d deep", maxSubflowDepth)), failed: true}, nil
	}
	sub, err := r.e.parse(pre.Flow)
	if err != nil {
		return outcome{result: executionErr(m.ID, err.Error()), failed: true}, nil
	}
	if msg := sub.runSettings(); msg != "" {
		// changed since the run was checked: Engine.Check refuses it
		return outcome{result: executionErr(m.ID, fmt.Sprintf("flow %s %s, which a flow module cannot honour: it runs inside its caller's run", m.Value.(PathFlow).Path, msg)), failed: true}, nil
	}
	args := pre.Args
	if err := sub.ValidateArgs(args); err != nil {
		return outcome{result: executionErr(m.ID, err.Error()), failed: true}, nil
	}
	sf := f.child(akey+"/", args, newResultsScope(nil), false)
	sf.depth = f.depth + 1
	sf.doc = pre.Flow
	if sub.Value.FlowEnv != nil {
		sf.env = sub.Value.FlowEnv
	}
	o, err := r.body(sf, sub)
	if err != nil {
		return outcome{}, err
	}
	return outcome{result: o.result, failed: o.failed}, nil
}

// fanOut runs body(0…n-1) on goroutines, at most limit at once (0: all),
// and waits for all. An error other than ErrSuspended wins over
// ErrSuspended, which is returned when any body parked the pass.
func (r *flowRun) fanOut(n, limit int, body func(i int) (outcome, error)) ([]outcome, error) {
	if limit <= 0 || limit > n {
		limit = n
	}
	outs := make([]outcome, n)
	errs := make([]error, n)
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("openflow: panic in a parallel branch: %v", p)
				}
			}()
			outs[i], errs[i] = body(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, ow.ErrSuspended) {
			return nil, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return outs, nil
}
