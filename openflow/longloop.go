package openflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// Long loops.
//
// A run records at most ow.StepLimit (1000) step attempts, because every
// pass replays its whole history. A loop whose iterations would take more
// runs them in chunks, each chunk a child run of the [LoopWorkflowName]
// workflow (ow.RunWorkflow, or ow.GoWorkflow for the chunks of a parallel
// loop): the loop's run records one workflow step per chunk, and each
// chunk run records the steps of its own iterations only, under the same
// durable keys as inline iterations ("b[7]/c"). A chunk run gets the loop
// module (the flow's document and the loop's id), its range of
// iterations (and their items), the frame's flow_input, flow_env and the
// results the body can see; it returns the array of its iterations'
// results, whether the loop broke or failed in it, and the body's results
// after its last iteration (the next chunk and the modules after the
// loop see them, as after inline iterations).
//
// The numbers are in steps, estimated per iteration from the body
// ([iterSteps]): a loop runs in its own run the iterations that fit in
// inlineLoopSteps, and a chunk run those that fit in chunkLoopSteps. A
// run starts at most maxLoopChildren chunks of one loop; a loop longer
// than that gives each child a range of maxLoopChildren times more
// iterations, which that child runs in chunks of its own (a tree).
const (
	// LoopWorkflowName is the workflow that runs a chunk of a long loop's
	// iterations as a child run of the loop's run.
	LoopWorkflowName = "openflow.loop"

	inlineLoopSteps   = 250
	chunkLoopSteps    = 500
	maxLoopChildren   = 50
	maxParallelChunks = 4
	// flowModuleSteps is what a flow module (a sub-flow by path) is
	// counted as in [iterSteps]: its flow is only known when it runs.
	flowModuleSteps = 50
)

// chunkInput is the input of a [LoopWorkflowName] run: iterations
// [Lo, Hi) of the loop module Loop of the flow document Flow.
type chunkInput struct {
	Flow json.RawMessage `json:"flow"`
	Loop string          `json:"loop"`
	// Key is the loop attempt's durable key ("b", "a[2]/b#1").
	Key string `json:"key"`
	Lo  int    `json:"lo"`
	Hi  int    `json:"hi"`
	// Items are a forloop's items Lo…Hi-1 (none for a while loop).
	Items []json.RawMessage `json:"items,omitempty"`
	// Parallelism bounds the chunk's concurrent iterations (parallel
	// forloop; 0: none).
	Parallelism int             `json:"parallelism,omitempty"`
	FlowInput   json.RawMessage `json:"flowInput"`
	Env         json.RawMessage `json:"env,omitempty"`
	// Results are the module results the body sees and reads, by id
	// ([resultRefs]).
	Results []scopeEntry `json:"results,omitempty"`
	Depth   int          `json:"depth,omitempty"`
	Shared  bool         `json:"shared,omitempty"`
	// RunID and Started are the flow's run (the root of the chunk tree):
	// WM_FLOW_JOB_ID, retry delays' seeds and same_worker's ./shared
	// are the flow run's.
	RunID   string    `json:"runId"`
	Started time.Time `json:"started"`
}

// chunkOutput is the output of a [LoopWorkflowName] run.
type chunkOutput struct {
	// Results is the JSON array of the chunk's iteration results, in
	// order.
	Results json.RawMessage `json:"results"`
	// Stop: an iteration broke the loop (sequential loops).
	Stop bool `json:"stop,omitempty"`
	// Failed: an iteration failed and ended the loop (sequential), or
	// any iteration failed (parallel).
	Failed bool `json:"failed,omitempty"`
	// Scope is the body's results after the chunk, in order.
	Scope []scopeEntry `json:"scope,omitempty"`
}

type scopeEntry struct {
	ID    string          `json:"id"`
	Value json.RawMessage `json:"value"`
}

// loopSpec is what iterating a loop needs.
type loopSpec struct {
	m            *Module
	akey         string
	body         []*Module
	while        bool
	items        []json.RawMessage // a forloop's items from index itemsLo
	itemsLo      int
	skipFailures bool
	steps        int // estimated steps per iteration
	refs         resultRefs
}

func (s *loopSpec) value(i int) json.RawMessage {
	if s.while {
		return json.RawMessage(strconv.Itoa(i))
	}
	return s.items[i-s.itemsLo]
}

// newLoopSpec describes loop module m (a ForLoop or WhileLoop).
func newLoopSpec(m *Module, akey string, items []json.RawMessage, itemsLo int) (*loopSpec, bool) {
	s := &loopSpec{m: m, akey: akey, items: items, itemsLo: itemsLo}
	switch v := m.Value.(type) {
	case ForLoop:
		s.body, s.skipFailures = v.Modules, v.SkipFailures
	case WhileLoop:
		s.body, s.skipFailures, s.while = v.Modules, v.SkipFailures, true
	default:
		return nil, false
	}
	s.steps = iterSteps(m, s.body)
	s.refs = bodyResultRefs(m, s.body)
	return s, true
}

// iterSteps estimates the step attempts one iteration of loop m records
// at most: its body's modules with their retries, sleeps and
// suspensions, a nested loop as much as it may record in the iteration's
// run (inlineLoopSteps, its chunk steps and evaluations), a flow module
// as flowModuleSteps; plus the loop's own stop_after_if.
func iterSteps(m *Module, body []*Module) int {
	n := listSteps(body)
	if m.StopAfterIf != nil {
		n++
	}
	return max(1, n)
}

func listSteps(ms []*Module) int {
	n := 0
	for _, m := range ms {
		n += moduleSteps(m)
	}
	return n
}

func moduleSteps(m *Module) int {
	one := 1
	switch v := m.Value.(type) {
	case ForLoop, WhileLoop:
		one = 2 + inlineLoopSteps + maxLoopChildren
	case BranchOne:
		most := listSteps(v.Default)
		for _, b := range v.Branches {
			most = max(most, listSteps(b.Modules))
		}
		one = 2 + most
	case BranchAll:
		one = 2
		for _, b := range v.Branches {
			one += listSteps(b.Modules)
		}
	case PathFlow:
		one = flowModuleSteps
	}
	retries := 0
	if p := m.Retry; p != nil {
		if p.Constant != nil {
			retries += p.Constant.Attempts
		}
		if p.Exponential != nil {
			retries += p.Exponential.Attempts
		}
	}
	n := one*(1+retries) + 2*retries // each retry: its delay, its retry_if
	if m.Sleep != nil {
		n++
	}
	if m.Suspend != nil && m.Suspend.RequiredEvents > 0 {
		n += 1 + m.Suspend.RequiredEvents
	}
	return n
}

// childSpan is the number of iterations each child run of a loop gets
// for the remaining n iterations: what fits in a chunk run, times
// maxLoopChildren as often as needed to start at most maxLoopChildren
// children.
func childSpan(n, steps int) int {
	span := max(1, chunkLoopSteps/steps)
	for (n+span-1)/span > maxLoopChildren {
		span *= maxLoopChildren
	}
	return span
}

// chunkKey is the durable key of the child step that runs iterations
// a…b-1 of the loop attempt akey.
func chunkKey(akey string, a, b int) string {
	return fmt.Sprintf("%s@chunk[%d-%d]", akey, a, b-1)
}

// seqRange runs iterations lo…hi-1 of a sequential loop in order,
// appending their results to out and merging each one's results into
// carried: as many as fit in budget steps in this run, the rest in
// chunk runs. It reports whether an iteration broke the loop (brk) or
// failed and ended it (failed).
func (r *flowRun) seqRange(f *frame, s *loopSpec, lo, hi, budget int, carried *resultsScope, out *arrayBuilder) (brk, failed bool, err error) {
	inline := max(1, budget/s.steps)
	i := lo
	for ; i < hi && i < lo+inline; i++ {
		o, scope, err := r.iteration(f, s.m, s.akey, s.body, i, s.value(i), carried, false)
		if err != nil {
			return false, false, err
		}
		scope.mergeInto(carried)
		out.add(o.result)
		if o.stop != nil {
			return true, false, nil
		}
		if o.failed && !s.skipFailures {
			return false, true, nil
		}
	}
	if i >= hi {
		return false, false, nil
	}
	span := childSpan(hi-i, s.steps)
	for a := i; a < hi; a += span {
		b := min(a+span, hi)
		in := r.chunkInput(f, s, a, b, carried, 0)
		var co chunkOutput
		if f.parallel {
			co, err = ow.GoWorkflow(r.ctx, r.e.loopWF, in, ow.WithStepName(chunkKey(s.akey, a, b))).Get()
		} else {
			co, err = ow.RunWorkflow(r.ctx, r.e.loopWF, in, ow.WithStepName(chunkKey(s.akey, a, b)))
		}
		if err != nil {
			return false, false, err
		}
		co.mergeInto(carried)
		out.addAll(co.Results)
		if co.Stop || co.Failed {
			return co.Stop, co.Failed, nil
		}
	}
	return false, false, nil
}

// parRange runs iterations lo…hi-1 of a parallel forloop, at most p at
// once (0: no bound), appending their results to out in order and then
// merging their results into carried in order. It reports whether any
// iteration failed. Iterations that do not fit in budget steps run in
// chunk runs, several at once: with p, ⌈p/span⌉ chunks of at most p/k
// iterations at once each, so that no more than p iterations run at
// once; without, maxParallelChunks chunks at once.
func (r *flowRun) parRange(f *frame, s *loopSpec, lo, hi, budget, p int, carried *resultsScope, out *arrayBuilder) (anyFailed bool, err error) {
	n := hi - lo
	if n <= max(1, budget/s.steps) {
		scopes := make([]*resultsScope, n)
		outs, err := r.fanOut(n, p, func(j int) (outcome, error) {
			o, scope, err := r.iteration(f, s.m, s.akey, s.body, lo+j, s.value(lo+j), carried, true)
			scopes[j] = scope
			return o, err
		})
		if err != nil {
			return false, err
		}
		for j, o := range outs {
			out.add(o.result)
			scopes[j].mergeInto(carried)
			anyFailed = anyFailed || o.failed
		}
		return anyFailed, nil
	}
	span := childSpan(n, s.steps)
	chunks := (n + span - 1) / span
	window, each := chunkWindow(p, span, chunks)
	futs := make([]*ow.Future[chunkOutput], 0, chunks)
	for j := 0; j < chunks; j++ {
		if j >= window {
			// a chunk starts when the one window places before it ends,
			// so replays start the same chunks in the same order
			if _, err := futs[j-window].Get(); err != nil {
				break
			}
		}
		a := lo + j*span
		b := min(a+span, hi)
		futs = append(futs, ow.GoWorkflow(r.ctx, r.e.loopWF, r.chunkInput(f, s, a, b, carried, each), ow.WithStepName(chunkKey(s.akey, a, b))))
	}
	outs := make([]chunkOutput, len(futs))
	errs := make([]error, len(futs))
	for j, fu := range futs {
		outs[j], errs[j] = fu.Get()
	}
	if err := firstError(errs); err != nil {
		return false, err
	}
	for _, co := range outs {
		out.addAll(co.Results)
		co.mergeInto(carried)
		anyFailed = anyFailed || co.Failed
	}
	return anyFailed, nil
}

// chunkWindow is how many chunks of span iterations a parallel loop with
// parallelism p (0: none) runs at once, and the parallelism each gets (0:
// none): with p, window × each <= p.
func chunkWindow(p, span, chunks int) (window, each int) {
	window = maxParallelChunks
	if p > 0 {
		window = (p + span - 1) / span
		each = max(1, p/window)
	}
	return max(1, min(window, chunks)), each
}

// firstError is the first error other than ErrSuspended, else
// ErrSuspended if any, else nil.
func firstError(errs []error) error {
	var suspended error
	for _, err := range errs {
		if err != nil && !errors.Is(err, ow.ErrSuspended) {
			return err
		}
		if err != nil {
			suspended = err
		}
	}
	return suspended
}

// chunkInput is the input of the chunk run of iterations a…b-1.
func (r *flowRun) chunkInput(f *frame, s *loopSpec, a, b int, carried *resultsScope, p int) chunkInput {
	in := chunkInput{Flow: f.doc, Loop: s.m.ID, Key: s.akey, Lo: a, Hi: b, Parallelism: p,
		FlowInput: f.flowInput, Env: f.env, Depth: f.depth, Shared: f.shared, RunID: r.runID, Started: r.started}
	if !s.while {
		in.Items = s.items[a-s.itemsLo : b-s.itemsLo]
	}
	for _, id := range carried.ids() {
		if s.refs.has(id) {
			v, _ := carried.get(id)
			in.Results = append(in.Results, scopeEntry{ID: id, Value: v})
		}
	}
	return in
}

// mergeInto sets the chunk's body results in dst, in order.
func (co chunkOutput) mergeInto(dst *resultsScope) {
	for _, e := range co.Scope {
		dst.set(e.ID, e.Value)
	}
}

// runLoopChunk is the body of the [LoopWorkflowName] workflow.
func (e *Engine) runLoopChunk(ctx ow.Context, in chunkInput) (chunkOutput, error) {
	fl, err := e.parse(in.Flow)
	if err != nil {
		return chunkOutput{}, ow.NonRetryable(err)
	}
	var m *Module
	walkModules(fl, func(x *Module) {
		if x.ID == in.Loop && m == nil {
			m = x
		}
	})
	if m == nil {
		return chunkOutput{}, ow.NonRetryable(fmt.Errorf("openflow: the flow has no module %q", in.Loop))
	}
	s, ok := newLoopSpec(m, in.Key, in.Items, in.Lo)
	if !ok {
		return chunkOutput{}, ow.NonRetryable(fmt.Errorf("openflow: module %q is not a loop", in.Loop))
	}
	if !s.while && len(in.Items) != in.Hi-in.Lo {
		return chunkOutput{}, ow.NonRetryable(fmt.Errorf("openflow: a chunk of %d iterations with %d items", in.Hi-in.Lo, len(in.Items)))
	}
	r := &flowRun{e: e, ctx: ctx, runID: in.RunID, started: in.Started,
		workRoot: filepath.Join(e.opts.WorkDir, unsafeKeyChars.ReplaceAllString(in.RunID, "_"))}
	base := newResultsScope(nil)
	for _, en := range in.Results {
		base.set(en.ID, en.Value)
	}
	f := &frame{flowInput: in.FlowInput, env: in.Env, res: base, depth: in.Depth, shared: in.Shared, doc: in.Flow}
	carried := newResultsScope(base)
	var out arrayBuilder
	var co chunkOutput
	if v, ok := m.Value.(ForLoop); ok && v.Parallel {
		co.Failed, err = r.parRange(f, s, in.Lo, in.Hi, chunkLoopSteps, in.Parallelism, carried, &out)
	} else {
		co.Stop, co.Failed, err = r.seqRange(f, s, in.Lo, in.Hi, chunkLoopSteps, carried, &out)
	}
	if err != nil {
		return chunkOutput{}, err
	}
	co.Results = out.json()
	for _, id := range carried.order {
		co.Scope = append(co.Scope, scopeEntry{ID: id, Value: carried.m[id]})
	}
	return co, nil
}

// arrayBuilder builds a JSON array from items and from the items of
// arrays. It keeps references to what it is given and copies them once,
// into the array json returns: a loop's run replays its memoized chunks
// at every pass, and only the last pass needs the whole array.
type arrayBuilder struct {
	parts []json.RawMessage // items, or several items separated by commas
	size  int
}

func (a *arrayBuilder) add(v json.RawMessage) {
	if len(v) == 0 {
		v = json.RawMessage("null")
	}
	a.parts = append(a.parts, v)
	a.size += len(v) + 1
}

// addAll appends the items of the JSON array arr.
func (a *arrayBuilder) addAll(arr json.RawMessage) {
	t := bytes.TrimSpace(arr)
	if len(t) < 2 || t[0] != '[' {
		return
	}
	if inner := bytes.TrimSpace(t[1 : len(t)-1]); len(inner) > 0 {
		a.add(inner)
	}
}

// json returns the array.
func (a *arrayBuilder) json() json.RawMessage {
	b := make([]byte, 0, a.size+2)
	b = append(b, '[')
	for i, p := range a.parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	return append(b, ']')
}

// resultRefs are the module results a loop body's expressions read: the
// ids named as results.<id>, results?.<id> or results["<id>"], or all
// of them when an expression uses results otherwise (Object.keys(results),
// results[x]). A chunk run's input carries only those, so that an earlier
// module's large result (often the loop's own items) is not copied into
// every chunk.
type resultRefs struct {
	all bool
	ids map[string]bool
}

func bodyResultRefs(m *Module, body []*Module) resultRefs {
	refs := resultRefs{ids: map[string]bool{}}
	var list func([]*Module)
	transform := func(t *InputTransform) {
		if t != nil && !t.Static {
			refs.scan(t.Expr)
		}
	}
	module := func(m *Module) {
		if m.SkipIf != nil {
			refs.scan(m.SkipIf.Expr)
		}
		if m.StopAfterIf != nil {
			refs.scan(m.StopAfterIf.Expr)
		}
		if m.StopAfterAllItersIf != nil {
			refs.scan(m.StopAfterAllItersIf.Expr)
		}
		if m.Retry != nil {
			refs.scan(m.Retry.RetryIf)
		}
		transform(m.Sleep)
		transform(m.Timeout)
		switch v := m.Value.(type) {
		case RawScript:
			for i := range v.InputTransforms {
				transform(&v.InputTransforms[i].InputTransform)
			}
		case PathScript:
			for i := range v.InputTransforms {
				transform(&v.InputTransforms[i].InputTransform)
			}
		case PathFlow: // its modules see their own results only
			for i := range v.InputTransforms {
				transform(&v.InputTransforms[i].InputTransform)
			}
		case ForLoop:
			transform(&v.Iterator)
			transform(v.Parallelism)
			list(v.Modules)
		case WhileLoop:
			list(v.Modules)
		case BranchOne:
			for _, b := range v.Branches {
				refs.scan(b.Expr)
				list(b.Modules)
			}
			list(v.Default)
		case BranchAll:
			for _, b := range v.Branches {
				list(b.Modules)
			}
		}
	}
	list = func(ms []*Module) {
		for _, m := range ms {
			module(m)
		}
	}
	if m.StopAfterIf != nil {
		refs.scan(m.StopAfterIf.Expr)
	}
	list(body)
	return refs
}

// scan adds the results an expression reads.
func (refs *resultRefs) scan(expr string) {
	const name = "results"
	for i := 0; !refs.all; {
		j := strings.Index(expr[i:], name)
		if j < 0 {
			return
		}
		j += i
		end := j + len(name)
		i = end
		if j > 0 && (isIdentRune(rune(expr[j-1])) || expr[j-1] == '.') || end < len(expr) && isIdentRune(rune(expr[end])) {
			continue // another name, or a property named results
		}
		rest := strings.TrimLeft(expr[end:], " \t\r\n")
		rest = strings.TrimPrefix(rest, "?")
		switch {
		case strings.HasPrefix(rest, "."):
			id := strings.TrimLeft(rest[1:], " \t\r\n")
			n := 0
			for n < len(id) && isIdentRune(rune(id[n])) {
				n++
			}
			if n == 0 {
				refs.all = true
				return
			}
			refs.ids[id[:n]] = true
		case strings.HasPrefix(rest, "["):
			key := strings.TrimLeft(rest[1:], " \t\r\n")
			if key == "" || key[0] != '"' && key[0] != '\'' {
				refs.all = true
				return
			}
			k := strings.IndexByte(key[1:], key[0])
			if k < 0 || strings.ContainsRune(key[1:1+k], '\\') || !strings.HasPrefix(strings.TrimLeft(key[2+k:], " \t\r\n"), "]") {
				refs.all = true
				return
			}
			refs.ids[key[1:1+k]] = true
		default:
			refs.all = true
			return
		}
	}
}

func (refs resultRefs) has(id string) bool { return refs.all || refs.ids[id] }
