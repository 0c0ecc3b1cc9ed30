package openworkflow

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Spec names a workflow: the identity its runs are stored and routed by.
type Spec struct {
	// Name identifies the workflow across processes and SDKs; required.
	Name string
	// Version distinguishes incompatible implementations of one name; runs
	// are executed only by a worker that registered the same name and
	// version. Empty means unversioned (stored as NULL), which matches only
	// unversioned registrations.
	Version string
	// RetryPolicy applies to errors the workflow function returns that are
	// not step failures. Nil means [DefaultWorkflowRetryPolicy]: no retry.
	RetryPolicy *RetryPolicy
	// Limits bound how many runs of the workflow run at once and how fast
	// they start, across all workers; workers that register the workflow
	// store and enforce them ([Limits]). The zero value limits nothing.
	// They are per workflow name: versions registered on one worker must
	// agree.
	Limits Limits
	// InputExample is an example input of the workflow as JSON text
	// (e.g. `{"orderId": "o-1"}`), written by the workers that register it
	// to the registry of workers, so that the dashboard's start form
	// offers it and `ow workflows` shows it. Empty: none. Registering a
	// workflow whose example is not JSON fails.
	InputExample string
	// Singleton, when set, makes every start of the workflow through
	// [Workflow.Start] a singleton start of Singleton.Key in
	// Singleton.Mode ([WithSingleton], which overrides it per start): at
	// most one active run of the workflow per key. Nil: none. Registering
	// a workflow whose Singleton is invalid (an unknown mode, a key that
	// is not text or is over 1,024 bytes) fails.
	Singleton *Singleton
	// Fairness, when set, puts every start of the workflow through
	// [Workflow.Start] and [Workflow.StartMany] under fair shares
	// ([Fairness]): an empty Key stands for each start's concurrency key;
	// [WithFairness] overrides it per start. Nil: none. Registering a
	// workflow whose Fairness is invalid (a key over 64 bytes or not
	// text, a negative weight) fails.
	Fairness *Fairness
	// Triggers are the events that start a run of the workflow, each
	// with an optional CEL condition over the event ([EventTrigger]):
	// every published event matching one starts exactly one run, with
	// the event as input ({"id","name","data","key","createdAt"}) and the
	// event's key as concurrency key. Workers that register the workflow
	// store them at start, so any publisher of the namespace sees them.
	// At most 10 (backend.MaxEventTriggersPerWorkflow); a run is started
	// once per event however many triggers match. The workflow's
	// Singleton and Batch apply to triggered runs too, in the publish's
	// transaction (stored with the triggers): with Singleton, each
	// triggered run is a singleton start of its key; with Batch, a
	// matching event is appended to the batch of the event's key instead
	// of starting a run. Not both.
	Triggers []EventTrigger
	// CancelOn are events that cancel the workflow's active runs: a
	// published event whose CEL condition over event and input (the
	// run's input) holds cancels the run, as [Client.CancelRun] does (a
	// queued or parked run at once; an executing step finishes and no
	// further step starts), as Inngest's cancelOn. At most 10.
	CancelOn []EventTrigger
	// Batch, when set, makes the workflow a batched one: items given to
	// [EnqueueBatchItem] are collected per key and flushed into one run
	// whose input is their JSON array ([BatchOptions]). Nil: not batched
	// (its runs are started one by one, as any workflow's can be still).
	Batch *BatchOptions
}

func (s Spec) key() string { return registryKey(s.Name, versionPtr(s.Version)) }

func versionPtr(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

func registryKey(name string, version *string) string {
	if version == nil {
		return name
	}
	return name + "@" + *version
}

// String returns the name, and the version when set, for messages:
// "name" or "name" (version: v).
func (s Spec) String() string {
	if s.Version == "" {
		return fmt.Sprintf("%q", s.Name)
	}
	return fmt.Sprintf("%q (version: %s)", s.Name, s.Version)
}

// Func is the body of a workflow: an ordinary Go function made durable by
// calling step functions ([Run], [Go], [Sleep], [RunWorkflow],
// [SendSignal], [WaitForSignal]) with ctx. It is replayed from the top on
// every pass, so code outside steps must be deterministic.
type Func[I, O any] func(ctx Context, input I) (O, error)

// Workflow is a typed workflow definition, made by [Define]. I and O are
// JSON-encoded into the run's input and output.
type Workflow[I, O any] struct {
	spec Spec
	fn   Func[I, O]
}

// Define makes a workflow from its spec and body. Register it on a
// [Worker] to execute its runs, and start runs with [Workflow.Start].
// Define panics if spec.Name is empty (a programming error).
func Define[I, O any](spec Spec, fn Func[I, O]) *Workflow[I, O] {
	if spec.Name == "" {
		panic("openworkflow.Define: Spec.Name is required")
	}
	return &Workflow[I, O]{spec: spec, fn: fn}
}

// Declare makes a workflow reference without a body, for starting or
// awaiting runs (as child or from a client) of a workflow implemented in
// another process, possibly in another language. Registering it fails.
func Declare[I, O any](spec Spec) *Workflow[I, O] {
	if spec.Name == "" {
		panic("openworkflow.Declare: Spec.Name is required")
	}
	return &Workflow[I, O]{spec: spec}
}

// Spec returns the workflow's spec.
func (w *Workflow[I, O]) Spec() Spec { return w.spec }

// Definition is what a worker registers: any *Workflow[I, O].
type Definition interface {
	Spec() Spec
	execute(ctx Context, input json.RawMessage) (json.RawMessage, error)
	hasBody() bool
}

func (w *Workflow[I, O]) hasBody() bool { return w.fn != nil }

func (w *Workflow[I, O]) execute(ctx Context, raw json.RawMessage) (json.RawMessage, error) {
	var in I
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, NonRetryable(fmt.Errorf("decode input of workflow %s: %w", w.spec, err))
		}
	}
	out, err := w.fn(ctx, in)
	if err != nil {
		return nil, err
	}
	b, err := marshalValue(out)
	if err != nil {
		return nil, NonRetryable(fmt.Errorf("encode output of workflow %s: %w", w.spec, err))
	}
	if err := backend.ValidateJSON(b); err != nil {
		return nil, NonRetryable(fmt.Errorf("output of workflow %s cannot be stored: %w", w.spec, err))
	}
	return b, nil
}

// registry maps name[@version] to definitions.
type registry struct {
	mu   sync.RWMutex
	defs map[string]Definition
}

func (r *registry) register(defs ...Definition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.defs == nil {
		r.defs = make(map[string]Definition)
	}
	for _, d := range defs {
		s := d.Spec()
		if !d.hasBody() {
			return fmt.Errorf("register workflow %s: it was declared without a body (use Define)", s)
		}
		if s.InputExample != "" {
			if err := backend.ValidateJSON([]byte(s.InputExample)); err != nil {
				return fmt.Errorf("register workflow %s: Spec.InputExample is not storable JSON: %w", s, err)
			}
		}
		if s.Singleton != nil {
			if err := s.Singleton.Validate(); err != nil {
				return fmt.Errorf("register workflow %s: Spec.Singleton: %w", s, err)
			}
		}
		if err := checkEventTriggers(s); err != nil {
			return fmt.Errorf("register %w", err)
		}
		if err := checkFairness(s); err != nil {
			return fmt.Errorf("register %w", err)
		}
		if s.Batch != nil {
			if _, err := s.Batch.Validate(); err != nil {
				return fmt.Errorf("register workflow %s: Spec.Batch: %w", s, err)
			}
		}
		if _, dup := r.defs[s.key()]; dup {
			return fmt.Errorf("register workflow %s: %w", s, ErrAlreadyRegistered)
		}
		r.defs[s.key()] = d
	}
	return nil
}

// batched reports whether a registered workflow declares Spec.Batch.
func (r *registry) batched() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, d := range r.defs {
		if d.Spec().Batch != nil {
			return true
		}
	}
	return false
}

// keys lists the registered workflows as claim filter keys (never nil).
func (r *registry) keys() []backend.WorkflowKey {
	r.mu.RLock()
	defer r.mu.RUnlock()
	keys := make([]backend.WorkflowKey, 0, len(r.defs))
	for _, d := range r.defs {
		keys = append(keys, backend.WorkflowKey{Name: d.Spec().Name, Version: versionPtr(d.Spec().Version)})
	}
	return keys
}

func (r *registry) lookup(name string, version *string) (Definition, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.defs[registryKey(name, version)]
	return d, ok
}

// RunInfo describes the run a workflow pass executes. It is the same on
// every replay of the run.
type RunInfo struct {
	// ID is the run id ("wrun_…").
	ID string
	// WorkflowName and Version are the run's (Version "" when unversioned);
	// the version is the run's, which a workflow may branch on.
	WorkflowName string
	Version      string // "" when unversioned
	// CreatedAt and StartedAt are the run's creation and first-claim times.
	CreatedAt time.Time
	StartedAt time.Time // zero before the first claim
	// Attempt is the run's claim count, 1 on its first pass.
	Attempt int
	// Schedule is the schedule that started the run and the tick it is
	// for (ScheduledAt: the tick's time, not when the run started); nil
	// for a run no schedule started. Read from the run's context column
	// (backend.ScheduledRun).
	Schedule *ScheduledRun
	// ContinuedFrom is, for a run started by another run's
	// [ContinueAsNew], that run and this run's generation in the chain (1
	// for the first successor); nil otherwise. Read from the run's
	// context column (backend.ContinuationOf).
	ContinuedFrom *Continuation
}

// Context is the context a workflow function receives: a context.Context
// (canceled when the run is canceled, its lease is lost or the worker
// stops) that also carries the execution pass step functions record to.
type Context interface {
	context.Context
	// RunInfo describes the executing run.
	RunInfo() RunInfo
	exec() *pass
}

type workflowContext struct {
	context.Context
	x *pass
}

func (c *workflowContext) RunInfo() RunInfo { return c.x.info }
func (c *workflowContext) exec() *pass      { return c.x }
