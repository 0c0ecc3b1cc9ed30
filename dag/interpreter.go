package dag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"
	"unicode"

	ow "github.com/openworkflow-go/openworkflow"
)

// Stored error codes of DAG runs and attempts (ow.Error.Code).
const (
	// CodeCompensated is the code of the error of a run that failed and
	// was compensated: stored status failed, DAG status compensated.
	CodeCompensated = "COMPENSATED"
	// CodeCompensationFailed is the code of the error of a run that failed
	// and compensated, but at least one of whose compensations failed for
	// good: stored status failed, DAG status compensation_failed. Its
	// steps were not all undone; see which in the run's status.
	CodeCompensationFailed = "COMPENSATION_FAILED"
	// CodeStepFailed is the code of the error of a run whose step failed
	// for good with nothing to compensate: DAG status failed.
	CodeStepFailed = "STEP_FAILED"
	// CodeNonRetryable marks the stored error of an attempt that is not
	// retried: the handler returned an error wrapped with ow.NonRetryable,
	// its result could not be encoded, or no handler is registered.
	CodeNonRetryable = "NON_RETRYABLE"
)

// Backoff is the delay before retry k (k ≥ 1, the k-th failure just
// happened) of a step or a compensation: min(2^(k−1) s, 30 s), so 1, 2,
// 4, 8, 16, 30, 30 … seconds.
func Backoff(k int) time.Duration {
	if k < 1 {
		k = 1
	}
	if k > 6 {
		return 30 * time.Second
	}
	return min(time.Duration(1<<(k-1))*time.Second, 30*time.Second)
}

// stepState is what a pass knows of one step.
type stepState int

const (
	statePending   stepState = iota // not started, or its next attempt not started
	stateRunning                    // an attempt executes in this pass
	stateWaiting                    // an attempt failed; the next is due at due
	stateCompleted                  // an attempt completed
	stateFailed                     // failed for good: retries spent, or not retryable
)

// step is one step of a run during a pass.
type step struct {
	Step
	index      int
	deps       []int
	state      stepState
	attempts   int             // execution attempts ended (completed or failed)
	output     json.RawMessage // of the completed attempt
	lastErr    *ow.Error       // of the last failed attempt
	lastEnd    time.Time       // when the last failed attempt ended
	due        time.Time       // stateWaiting: when the next attempt may start
	compensate compensation
}

// attemptResult is the outcome of one attempt started by a pass.
type attemptResult struct {
	s   *step
	k   int
	out json.RawMessage
	err error
}

// run is one pass of the interpreter over a DAG run.
type run struct {
	e       *Engine
	ctx     ow.Context
	def     Definition
	input   json.RawMessage
	steps   []*step
	results chan attemptResult
	running int   // attempts started by this pass and not settled
	failed  *step // the first step found failed for good: compensation follows
	fatal   error // a reason the pass stops (parked, lease lost, step limit)
}

// interpret is the body of every DAG workflow: one pass over a run.
//
// The pass first rebuilds each step's state from the run's history
// (ow.LookupStep on the step's attempt keys, in order), so what it does
// next depends only on what was recorded, never on the order in which
// replayed results arrive. It then starts every ready step at once (each
// an ow.Go branch), starts the next one whenever an attempt ends, and
// retries a failed attempt when its backoff has passed; when only
// backoffs remain, the run parks on a durable sleep until the earliest.
// Once a step has failed for good it starts nothing more, lets the
// attempts in flight end, and compensates (see compensate).
func (e *Engine) interpret(ctx ow.Context, in runInput) (map[string]json.RawMessage, error) {
	r, err := newRun(e, ctx, in)
	if err != nil {
		return nil, ow.NonRetryable(err)
	}
	r.replay()
	if err := r.execute(); err != nil {
		return nil, err
	}
	if r.failed == nil {
		e.observeFinished(ctx, StatusCompleted)
		return r.outputs(), nil
	}
	err = r.compensate()
	var final *ow.Error
	if errors.As(err, &final) {
		switch final.Code {
		case CodeCompensated:
			e.observeFinished(ctx, StatusCompensated)
		case CodeCompensationFailed:
			e.observeFinished(ctx, StatusCompensationFailed)
		case CodeStepFailed:
			e.observeFinished(ctx, StatusFailed)
		}
	}
	return nil, err
}

// observeFinished reports the end of the run to the engine's Metrics.
func (e *Engine) observeFinished(ctx ow.Context, status Status) {
	if e.metrics != nil {
		e.metrics.ObserveDAGRunFinished(ctx.RunInfo().WorkflowName, string(status))
	}
}

func newRun(e *Engine, ctx ow.Context, in runInput) (*run, error) {
	name := ctx.RunInfo().WorkflowName
	if in.Definition == nil {
		return nil, fmt.Errorf("dag: run %s of workflow %q holds no DAG definition in its input (start runs with dag.Engine.Start)", ctx.RunInfo().ID, name)
	}
	if in.Format != runFormat {
		return nil, fmt.Errorf("dag: run %s of workflow %q has DAG format %d; this worker executes format %d", ctx.RunInfo().ID, name, in.Format, runFormat)
	}
	d := *in.Definition
	if d.Name != name {
		return nil, fmt.Errorf("dag: run %s of workflow %q holds the definition of workflow %q", ctx.RunInfo().ID, name, d.Name)
	}
	if err := d.Validate(nil); err != nil {
		return nil, fmt.Errorf("dag: run %s: %w", ctx.RunInfo().ID, err)
	}
	d = d.normalized()
	r := &run{e: e, ctx: ctx, def: d, input: in.Input, results: make(chan attemptResult, len(d.Steps))}
	idx := make(map[string]int, len(d.Steps))
	for i, s := range d.Steps {
		idx[s.Name] = i
		r.steps = append(r.steps, &step{Step: s, index: i})
	}
	for _, s := range r.steps {
		for _, dep := range s.DependsOn {
			s.deps = append(s.deps, idx[dep])
		}
	}
	return r, nil
}

// replay rebuilds every step's state from the recorded attempts.
func (r *run) replay() {
	for _, s := range r.steps {
		for k := 1; ; k++ {
			rec, ok := ow.LookupStep(r.ctx, attemptKey(s.Name, k))
			if !ok || rec.Status == ow.StepRunning {
				break // attempt k is next (again, if a crash interrupted it)
			}
			if rec.Status == ow.StepCompleted {
				s.state, s.output = stateCompleted, rec.Output
				break
			}
			r.attemptFailed(s, k, rec)
			if s.state == stateFailed {
				break
			}
		}
	}
}

// attemptFailed records that attempt k of s failed as rec says.
func (r *run) attemptFailed(s *step, k int, rec ow.StepRecord) {
	s.attempts, s.lastErr, s.lastEnd = k, rec.Error, rec.FinishedAt
	if s.lastErr == nil {
		s.lastErr = &ow.Error{Name: "Error", Message: "unknown error"}
	}
	if k > s.retries() || s.lastErr.Code == CodeNonRetryable {
		s.state = stateFailed
		if r.failed == nil {
			r.failed = s
		}
		return
	}
	s.state, s.due = stateWaiting, s.lastEnd.Add(Backoff(k))
}

// execute runs the steps until all completed, one failed for good, or
// the pass must stop (the returned error: ErrSuspended to park until the
// earliest backoff ends, ErrLeaseLost, a step limit). It returns only
// once no attempt it started is in flight.
func (r *run) execute() error {
	for {
		if r.failed == nil && r.fatal == nil {
			if s := r.soleReady(); s != nil {
				r.runInline(s)
				continue
			}
			r.startReady()
		}
		if r.running == 0 {
			if r.fatal != nil || r.failed != nil || r.allCompleted() {
				return r.fatal
			}
			// Only backoffs remain: wait for the earliest, durably.
			s := r.earliestWaiting()
			if s == nil {
				return fmt.Errorf("dag: run %s: no step can start (internal error)", r.ctx.RunInfo().ID)
			}
			if err := ow.SleepUntil(r.ctx, waitKey(attemptKey(s.Name, s.attempts+1)), s.due); err != nil {
				return err
			}
			r.start(s)
			continue
		}
		r.awaitResult()
	}
}

// awaitResult waits for an attempt in flight to end, or for the earliest
// backoff to pass (when no step has failed for good), and settles what
// ended.
func (r *run) awaitResult() {
	var due <-chan time.Time
	if s := r.earliestWaiting(); s != nil && r.failed == nil && r.fatal == nil {
		t := time.NewTimer(s.due.Sub(r.e.now()))
		defer t.Stop()
		due = t.C
	}
	select {
	case res := <-r.results:
		r.running--
		r.settle(res)
	case <-due:
	}
}

// startReady starts every step whose dependencies completed and whose
// first attempt, or next attempt after its backoff, is due.
func (r *run) startReady() {
	now := r.e.now()
	for _, s := range r.steps {
		switch s.state {
		case statePending:
			if r.depsCompleted(s) {
				r.start(s)
			}
		case stateWaiting:
			if !now.Before(s.due) {
				r.start(s)
			}
		}
	}
}

func (r *run) depsCompleted(s *step) bool {
	for _, d := range s.deps {
		if r.steps[d].state != stateCompleted {
			return false
		}
	}
	return true
}

// soleReady returns the step to start when it is the only thing the run
// can do now — nothing in flight, nothing waiting for a backoff, no other
// step ready — or nil. A chain of steps runs this way.
func (r *run) soleReady() *step {
	if r.running > 0 {
		return nil
	}
	var sole *step
	for _, s := range r.steps {
		switch {
		case s.state == stateWaiting:
			return nil
		case s.state == statePending && r.depsCompleted(s):
			if sole != nil {
				return nil
			}
			sole = s
		}
	}
	return sole
}

// runInline runs the next attempt of s on the interpreter's goroutine
// (ow.Run): the same durable key and outcome as start's branch, without
// the goroutines and hand-offs of one, which a chain of steps would pay
// at every step.
func (r *run) runInline(s *step) {
	k := s.attempts + 1
	s.state = stateRunning
	sc := r.stepContext(s.Name, k)
	h := r.e.handler(s.Handler)
	out, err := ow.Run(r.ctx, attemptKey(s.Name, k), func(ctx context.Context) (json.RawMessage, error) {
		return callHandler(ctx, h, s.Handler, sc)
	})
	r.settle(attemptResult{s: s, k: k, out: out, err: err})
}

// start starts the next attempt of s as a parallel branch.
func (r *run) start(s *step) {
	k := s.attempts + 1
	s.state = stateRunning
	sc := r.stepContext(s.Name, k)
	h := r.e.handler(s.Handler)
	f := ow.Go(r.ctx, attemptKey(s.Name, k), func(ctx context.Context) (json.RawMessage, error) {
		return callHandler(ctx, h, s.Handler, sc)
	})
	r.running++
	go func() {
		out, err := f.Get()
		r.results <- attemptResult{s: s, k: k, out: out, err: err}
	}()
}

// settle records the outcome of an attempt started by this pass.
func (r *run) settle(res attemptResult) {
	s := res.s
	if res.err == nil {
		s.state, s.output = stateCompleted, res.out
		return
	}
	var se *ow.StepError
	if !errors.As(res.err, &se) {
		// Not the handler's failure (parked, lease lost, step limit): the
		// attempt was not recorded and is started again by a later pass.
		s.state = statePending
		if s.attempts > 0 {
			s.state = stateWaiting
		}
		if r.fatal == nil {
			r.fatal = res.err
		}
		return
	}
	rec, ok := ow.LookupStep(r.ctx, attemptKey(s.Name, res.k))
	if !ok || rec.Status != ow.StepFailed {
		rec = ow.StepRecord{Status: ow.StepFailed, Error: asStoredError(se.Err), FinishedAt: r.e.now()}
	}
	r.attemptFailed(s, res.k, rec)
}

func (r *run) allCompleted() bool {
	for _, s := range r.steps {
		if s.state != stateCompleted {
			return false
		}
	}
	return true
}

// earliestWaiting is the waiting step whose next attempt is due first
// (the first declared on a tie), or nil.
func (r *run) earliestWaiting() *step {
	var first *step
	for _, s := range r.steps {
		if s.state == stateWaiting && (first == nil || s.due.Before(first.due)) {
			first = s
		}
	}
	return first
}

// outputs returns the completed steps' outputs by step name.
func (r *run) outputs() map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(r.steps))
	for _, s := range r.steps {
		if s.state == stateCompleted {
			out[s.Name] = s.output
		}
	}
	return out
}

// stepContext is the context of attempt k of the named step.
func (r *run) stepContext(name string, k int) StepContext {
	info := r.ctx.RunInfo()
	return StepContext{
		RunID: info.ID, Workflow: info.WorkflowName, Step: name,
		Input: r.input, Attempt: k, PreviousSteps: r.outputs(),
	}
}

// callHandler runs h for one attempt and turns its result into what the
// attempt records: the JSON output, or an *ow.Error whose code says
// whether it may be retried.
func callHandler(ctx context.Context, h Handler, name string, sc StepContext) (json.RawMessage, error) {
	if h == nil {
		return nil, &ow.Error{Name: "Error", Message: fmt.Sprintf("No handler registered for %q", name), Code: CodeNonRetryable}
	}
	out, err := h(ctx, sc)
	if err != nil {
		// When ctx ended (cancel, lease lost, shutdown) the core records
		// nothing of the attempt, whatever the error.
		return nil, asStoredError(err)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, &ow.Error{Name: "Error", Message: fmt.Sprintf("encode the output of handler %q: %v", name, err), Code: CodeNonRetryable}
	}
	return raw, nil
}

// asStoredError is err as a DAG attempt stores it: an *ow.Error with the
// error's type name and message, and CodeNonRetryable when err is
// ow.NonRetryable (the mark must be stored: a later pass decides from the
// stored error alone whether to retry).
func asStoredError(err error) *ow.Error {
	var e ow.Error
	var oe *ow.Error
	if errors.As(err, &oe) {
		e = *oe
	} else {
		e = ow.Error{Name: typeName(err), Message: err.Error()}
	}
	var nr *ow.NonRetryableError
	if errors.As(err, &nr) {
		e.Code = CodeNonRetryable
	}
	var pe *ow.PanicError
	if errors.As(err, &pe) {
		e.Name, e.Message, e.Stack = "PanicError", pe.Error(), pe.Stack
	}
	return &e
}

// typeName names err's type for the stored error: its exported type name
// ("NotFoundError"), else "Error" (errors.New, fmt.Errorf and friends).
func typeName(err error) string {
	for {
		nr, ok := err.(*ow.NonRetryableError)
		if !ok {
			break
		}
		err = nr.Err
	}
	t := reflect.TypeOf(err)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Name() == "" || !unicode.IsUpper([]rune(t.Name())[0]) {
		return "Error"
	}
	return t.Name()
}
