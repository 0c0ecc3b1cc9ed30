package dag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// Handler executes a step (or compensates one). Its result is stored as
// JSON and passed to the handlers of later steps; an error fails the
// attempt, which is retried by the step's policy unless the error is
// wrapped with ow.NonRetryable. ctx is canceled when the run is
// canceled, its lease is lost or the worker stops. Handlers run at least
// once per attempt: a crash between the end of a handler and the commit
// of its result runs it again, so they must be idempotent.
type Handler func(ctx context.Context, sc StepContext) (any, error)

// StepContext is what a handler is told about the step it executes.
type StepContext struct {
	// RunID and Workflow identify the run.
	RunID    string
	Workflow string
	// Step is the step's name.
	Step string
	// Input is the run's input as JSON (see DecodeInput).
	Input json.RawMessage
	// Attempt is the attempt number, 1-based: 1 on the first execution,
	// 2 on the first retry. A compensation counts its own attempts.
	Attempt int
	// PreviousSteps holds the JSON output of every step completed when
	// the attempt started, by step name: the step's dependencies at least
	// (see DecodeOutput).
	PreviousSteps map[string]json.RawMessage
	// Compensation is true when the handler runs as the step's
	// compensate handler.
	Compensation bool
	// FailedStep and Failure are, for a compensation, the step whose
	// final failure started the compensation and its last error.
	FailedStep string
	Failure    *ow.Error
}

// DecodeInput decodes the run's input into v (a pointer).
func (sc StepContext) DecodeInput(v any) error {
	if err := json.Unmarshal(sc.Input, v); err != nil {
		return fmt.Errorf("decode input of run %s into %T: %w", sc.RunID, v, err)
	}
	return nil
}

// DecodeOutput decodes the output of the completed step into v (a
// pointer); it fails if that step has not completed.
func (sc StepContext) DecodeOutput(step string, v any) error {
	raw, ok := sc.PreviousSteps[step]
	if !ok {
		return fmt.Errorf("step %q of run %s has no output: it has not completed", step, sc.RunID)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode output of step %q into %T: %w", step, v, err)
	}
	return nil
}

// Options configure an [Engine]; the zero value is usable.
type Options struct {
	// Handlers are the handlers registered at once, by name (more can be
	// added with [Engine.Handle]).
	Handlers map[string]Handler
	// Now is the clock the interpreter reads to start, within a pass, a
	// retry whose backoff ends while other steps of the run are still
	// executing. Nil means time.Now. The backoff itself is enforced by the
	// worker's clock (a durable sleep), so tests that inject a clock into
	// the worker (ow.WorkerOptions.Now) and the backend set the same one
	// here.
	Now func() time.Time
	// Metrics, when set, is told how each DAG run ends (package metrics'
	// Exporter implements it: openworkflow_dag_runs_finished_total). Nil:
	// nothing is reported.
	Metrics Metrics
}

// Metrics receives what an [Engine] measures. Its methods must be safe
// for concurrent use.
type Metrics interface {
	// ObserveDAGRunFinished reports a DAG run whose interpreter ended it:
	// its workflow's name and its final DAG status — "completed",
	// "compensated", "compensation_failed", or "failed" (a step failed
	// for good with nothing to compensate). It is reported when the
	// interpreter's last pass returns, before the worker commits the
	// run's end, so a pass whose commit is lost (a crash, a lost lease)
	// runs again and reports again: read it as at least once. Runs that
	// end otherwise (canceled, deadline, step limit) are not reported
	// here; the worker's run metrics count them.
	ObserveDAGRunFinished(workflow, status string)
}

// Engine defines, stores, starts, executes and reports DAG workflows on
// one client. Each DAG workflow is executed by an interpreter that is an
// ordinary workflow on the core (register it on a worker with
// [Engine.Workflow]), so runs inherit durability, parking, cancellation,
// the CLI and the API. An Engine is safe for concurrent use.
type Engine struct {
	c       *ow.Client
	now     func() time.Time
	metrics Metrics

	mu       sync.RWMutex
	handlers map[string]Handler
}

// New returns an engine on the client c.
func New(c *ow.Client, opts Options) *Engine {
	e := &Engine{c: c, now: opts.Now, metrics: opts.Metrics, handlers: make(map[string]Handler, len(opts.Handlers))}
	if e.now == nil {
		e.now = time.Now
	}
	for name, h := range opts.Handlers {
		e.handlers[name] = h
	}
	return e
}

// Handle registers h under name. It fails for an empty name, a nil
// handler or a name already registered.
func (e *Engine) Handle(name string, h Handler) error {
	if name == "" || h == nil {
		return errors.New("dag: Handle needs a name and a handler")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, dup := e.handlers[name]; dup {
		return fmt.Errorf("dag: handler %q is already registered", name)
	}
	e.handlers[name] = h
	return nil
}

// handler returns the handler registered under name, or nil.
func (e *Engine) handler(name string) Handler {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.handlers[name]
}

func (e *Engine) hasHandler(name string) bool { return e.handler(name) != nil }

// ErrNotDefined is returned (wrapped, naming the workflow) by
// [Engine.Start] and [Engine.Definition] for a workflow never defined in
// the namespace.
var ErrNotDefined = errors.New("has not been defined")

// Define validates d against the registered handlers (see
// [Definition.Validate]) and stores it in the backend under its name,
// replacing an earlier definition of that name: defining again is
// idempotent. Runs already started keep the definition they started with
// (each run holds a copy). It returns the definition as stored (retries
// explicit). A validation error stores nothing.
func (e *Engine) Define(ctx context.Context, d Definition) (Definition, error) {
	if err := d.Validate(e.hasHandler); err != nil {
		return Definition{}, err
	}
	n := d.normalized()
	body, err := json.Marshal(n)
	if err != nil {
		return Definition{}, fmt.Errorf("define DAG workflow %q: %w", d.Name, err)
	}
	if _, err := e.c.PutDefinition(ctx, Kind, n.Name, body); err != nil {
		return Definition{}, fmt.Errorf("define DAG workflow %q: %w", d.Name, err)
	}
	return n, nil
}

// Definition returns the stored definition of the workflow name, or an
// error wrapping [ErrNotDefined].
func (e *Engine) Definition(ctx context.Context, name string) (Definition, error) {
	stored, err := e.c.GetDefinition(ctx, Kind, name)
	if errors.Is(err, ow.ErrDefinitionNotFound) {
		return Definition{}, fmt.Errorf("dag: workflow %q %w", name, ErrNotDefined)
	}
	if err != nil {
		return Definition{}, fmt.Errorf("dag: read definition of workflow %q: %w", name, err)
	}
	var d Definition
	if err := json.Unmarshal(stored.Body, &d); err != nil {
		return Definition{}, fmt.Errorf("dag: stored definition of workflow %q: %w", name, err)
	}
	return d, nil
}

// Definitions returns every stored DAG definition, by name.
func (e *Engine) Definitions(ctx context.Context) ([]Definition, error) {
	var out []Definition
	p := ow.ListDefinitionsParams{Kind: Kind, Limit: 1000}
	for {
		page, err := e.c.ListDefinitions(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("dag: list definitions: %w", err)
		}
		for _, stored := range page.Data {
			var d Definition
			if err := json.Unmarshal(stored.Body, &d); err != nil {
				return nil, fmt.Errorf("dag: stored definition of workflow %q: %w", stored.Name, err)
			}
			out = append(out, d)
		}
		if page.Next == nil {
			return out, nil
		}
		p.After = *page.Next
	}
}

// Workflow returns the interpreter of the DAG workflow name, an ordinary
// workflow to register on a worker ([ow.Worker.Register]). It executes
// every run of that name with the definition the run started with and the
// handlers registered on this engine; the definition need not exist when
// it is registered.
func (e *Engine) Workflow(name string) ow.Definition {
	return ow.Define(ow.Spec{Name: name}, e.interpret)
}

// Workflows returns the interpreters of every stored DAG definition (see
// [Engine.Workflow]), for a worker that executes them all. Definitions
// stored later need registering then.
func (e *Engine) Workflows(ctx context.Context) ([]ow.Definition, error) {
	ds, err := e.Definitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ow.Definition, len(ds))
	for i, d := range ds {
		out[i] = e.Workflow(d.Name)
	}
	return out, nil
}

// runInput is a DAG run's stored input: a copy of the definition the run
// started with, so that redefining the workflow never changes runs in
// flight, the caller's input, and the format of the run's durable keys
// (runFormat), so that an interpreter that changes them can still tell
// the runs it must execute the old way.
type runInput struct {
	Definition *Definition     `json:"dagDefinition"`
	Input      json.RawMessage `json:"input"`
	Format     int             `json:"dagFormat"`
}

// runFormat is the format of the durable keys this interpreter writes
// (keys.go); a run of another format fails with a clear error rather than
// being executed with keys it does not know.
const runFormat = 1

// Start starts a run of the stored DAG workflow name with input (JSON
// encoded) and returns its handle; the run's Result is the JSON object of
// every step's output by step name. It fails with an error wrapping
// [ErrNotDefined] when the workflow was never defined. opts are the
// core's (idempotency key, delayed start, deadline).
func (e *Engine) Start(ctx context.Context, name string, input any, opts ...ow.StartOption) (*ow.RunHandle, error) {
	d, err := e.Definition(ctx, name)
	if err != nil {
		return nil, err
	}
	in, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("dag: start workflow %q: encode input: %w", name, err)
	}
	return e.c.StartByName(ctx, name, "", runInput{Definition: &d, Input: in, Format: runFormat}, opts...)
}
