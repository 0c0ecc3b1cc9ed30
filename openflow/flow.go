package openflow

import "encoding/json"

// Flow is a parsed and validated OpenFlow document: the root object of
// Windmill's openflow.openapi.yaml (summary, description, value, schema).
// Make one with [Parse] or [ParseFile]; a Flow is read-only afterwards and
// safe to share between goroutines.
type Flow struct {
	// Summary is the flow's one-line title ("" when absent).
	Summary string
	// Description is free text.
	Description string
	// Value is the flow's definition: its modules and flow-level settings.
	Value FlowValue
	// Schema is the JSON Schema of the flow's input (its args), or nil.
	// [Flow.ValidateArgs] checks args against it.
	Schema json.RawMessage

	raw    json.RawMessage // the document as JSON (YAML converted), for runs
	schema *compiledSchema // Schema compiled, nil when absent
}

// JSON returns the flow document as JSON: the input as given for a JSON
// document, the converted document for YAML (with !inline contents
// substituted by ParseFile). Parsing it again gives an equal Flow.
func (f *Flow) JSON() json.RawMessage { return f.raw }

// FlowValue is OpenFlow's FlowValue: the modules run in sequence and the
// flow-level settings. Settings Windmill uses only for its UI (notes,
// groups) are accepted and ignored; settings this engine cannot honour
// (cache_ttl, early_return, preprocessor_module, concurrency_key) are
// refused by validation; see docs/openflow.md.
type FlowValue struct {
	// Modules run one after another.
	Modules []*Module
	// FailureModule runs when a top-level module fails (after its
	// retries); nil when absent.
	FailureModule *Module
	// SameWorker gives every script of a run a ./shared directory, the
	// same for all of them (Windmill's same_worker).
	SameWorker bool
	// FlowEnv holds read-only values visible to every expression as
	// flow_env.<key>, in document order; nil when absent.
	FlowEnv json.RawMessage
	// SkipExpr, when set, is evaluated before the first module with
	// flow_input in scope; true ends the flow at once, successfully, with
	// the result "stopped early".
	SkipExpr string
	// Priority is the priority of the flow's runs: [Engine.Start] starts
	// them with it (ow.WithPriority: claims take higher priorities first).
	// 0, the default, is the priority of every other run.
	Priority int
	// ConcurrentLimit is the most runs of the flow running at once (0: no
	// limit). It is enforced for a flow of the directories, run as a
	// workflow of its own ([Engine.DirWorkflows]: its ow.Limits); a flow
	// with a limit cannot be started as a run of the generic workflow or
	// called as a flow module.
	ConcurrentLimit int
	// ConcurrencyTimeWindowS, with ConcurrentLimit, also bounds the runs
	// started within any window of that many seconds (the workflow's
	// ow.Limits RateLimit and RatePeriod).
	ConcurrencyTimeWindowS float64
}

// Module is OpenFlow's FlowModule: one step of a flow, its value (what it
// runs) and the behaviours around it.
type Module struct {
	// ID names the module: results.<ID> in expressions. A module without
	// an id in the document gets a generated one ("_1", "_2", … in
	// document order; "failure" for a failure module), as Windmill gives
	// it a random one.
	ID string
	// Summary is display text.
	Summary string
	// Value is what the module runs.
	Value ModuleValue
	// StopAfterIf, evaluated after the module succeeds, stops the flow
	// early (or breaks the enclosing loop) when true.
	StopAfterIf *StopAfterIf
	// StopAfterAllItersIf is evaluated once on a loop's or branchall's
	// result array: true stops the flow with that array, or, with an
	// ErrorMessage, fails the module with an EarlyStopError.
	StopAfterAllItersIf *StopAfterIf
	// SkipIf turns the module into an identity (its result is
	// previous_result) when its expression is true.
	SkipIf *SkipIf
	// Sleep is a delay in seconds after the module, before the next
	// starts; nil for none.
	Sleep *InputTransform
	// Suspend makes the flow wait for resume events after the module.
	Suspend *Suspend
	// Retry retries a failed module.
	Retry *Retry
	// Timeout bounds a script's run, in seconds; nil means the engine's
	// default ([Options].ScriptTimeout).
	Timeout *InputTransform
	// ContinueOnError lets the flow go on after the module failed (its
	// {error} result becomes previous_result).
	ContinueOnError bool
	// Mock, when enabled, replaces the module's execution by its
	// return_value.
	Mock *Mock

	path string // JSON path in the document, for messages
}

// Path returns the module's JSON path in its document, e.g.
// "value.modules[2]".
func (m *Module) Path() string { return m.path }

// ModuleValue is a module's value, one of [Identity], [RawScript],
// [PathScript], [PathFlow], [ForLoop], [WhileLoop], [BranchOne] and
// [BranchAll].
type ModuleValue interface {
	// Type returns the OpenFlow discriminator, e.g. "rawscript".
	Type() string
}

// Identity returns previous_result unchanged (type "identity").
type Identity struct{}

// RawScript runs inline code (type "rawscript").
type RawScript struct {
	// Content is the script's source.
	Content string
	// Language is one of the supported [Languages].
	Language string
	// InputTransforms compute the script's arguments.
	InputTransforms Transforms
	// Path is display text for the script; Lock and Tag are ignored.
	Path string
}

// PathScript runs a script stored under a path of the configured
// directories (type "script"); see [Options].Dirs.
type PathScript struct {
	// Path is the script's path, e.g. "f/system/hello".
	Path string
	// InputTransforms compute the script's arguments.
	InputTransforms Transforms
}

// PathFlow runs a flow stored under a path of the configured directories
// as a sub-flow (type "flow"): its flow_input is the evaluated transforms.
type PathFlow struct {
	// Path is the flow's path, e.g. "f/team/etl".
	Path string
	// InputTransforms compute the sub-flow's args.
	InputTransforms Transforms
}

// ForLoop runs its modules once per element of its iterator (type
// "forloopflow").
type ForLoop struct {
	// Iterator must evaluate to an array.
	Iterator InputTransform
	// Modules are the loop body.
	Modules []*Module
	// SkipFailures keeps going after a failed iteration (its {error}
	// result stays in the array). Default false.
	SkipFailures bool
	// Parallel runs the iterations concurrently. Default false.
	Parallel bool
	// Parallelism bounds the concurrent iterations of a parallel loop; nil
	// means unbounded.
	Parallelism *InputTransform
}

// WhileLoop runs its modules again and again until a stop_after_if ends it
// or an iteration fails (type "whileloopflow").
type WhileLoop struct {
	// Modules are the loop body.
	Modules []*Module
	// SkipFailures keeps going after a failed iteration. Default false.
	SkipFailures bool
}

// BranchOne runs the first branch whose expression is true, else Default
// (type "branchone").
type BranchOne struct {
	// Branches are tried in order.
	Branches []Branch
	// Default runs when no branch's expression is true.
	Default []*Module
}

// BranchAll runs every branch (type "branchall").
type BranchAll struct {
	// Branches all run; the result is the array of their results.
	Branches []Branch
	// Parallel runs the branches concurrently. Default true (as in
	// Windmill).
	Parallel bool
}

// Branch is one branch of a [BranchOne] or [BranchAll].
type Branch struct {
	// Summary is display text.
	Summary string
	// Expr is the branchone predicate (ignored by branchall).
	Expr string
	// SkipFailure lets a branchall succeed although this branch failed.
	// Default false.
	SkipFailure bool
	// Modules are the branch's modules.
	Modules []*Module
}

// Type returns "identity".
func (Identity) Type() string { return "identity" }

// Type returns "rawscript".
func (RawScript) Type() string { return "rawscript" }

// Type returns "script".
func (PathScript) Type() string { return "script" }

// Type returns "flow".
func (PathFlow) Type() string { return "flow" }

// Type returns "forloopflow".
func (ForLoop) Type() string { return "forloopflow" }

// Type returns "whileloopflow".
func (WhileLoop) Type() string { return "whileloopflow" }

// Type returns "branchone".
func (BranchOne) Type() string { return "branchone" }

// Type returns "branchall".
func (BranchAll) Type() string { return "branchall" }

// InputTransform is a value given statically or computed by a JavaScript
// expression: {"type":"static","value":…} or {"type":"javascript","expr":…}.
// A bare number where one is allowed (timeout, sleep, parallelism) is a
// static transform.
type InputTransform struct {
	// Static is true for a static value, false for an expression.
	Static bool
	// Value is the static value (JSON null when absent).
	Value json.RawMessage
	// Expr is the JavaScript expression ("" when absent).
	Expr string

	path string
}

// Transforms are a module's named input transforms, in document order.
type Transforms []NamedTransform

// NamedTransform is one argument of a module and how it is computed.
type NamedTransform struct {
	// Name is the argument's name.
	Name string
	// InputTransform computes its value.
	InputTransform
}

// StopAfterIf is OpenFlow's StopAfterIf.
type StopAfterIf struct {
	// Expr is the predicate; `result` is the module's result.
	Expr string
	// SkipIfStopped marks the flow skipped (still successful) when it stops.
	SkipIfStopped bool
	// ErrorMessage, when non-nil, makes the stop a failure: the flow fails
	// with {"error":{"name":"EarlyStopError","message":<ErrorMessage>}}
	// ("stop after if: <Expr>" when it is empty).
	ErrorMessage *string
	// ErrorIncludeResult adds the module's result to that error as
	// "result".
	ErrorIncludeResult bool
}

// SkipIf is OpenFlow's skip_if: {expr}.
type SkipIf struct {
	// Expr is the predicate.
	Expr string
}

// Suspend is OpenFlow's Suspend: wait for resume events after a module.
type Suspend struct {
	// RequiredEvents is how many approvals resume the flow; 0 means no
	// suspension.
	RequiredEvents int
	// Timeout is how long to wait, in seconds; 0 means 1800 (30 min), as
	// in Windmill.
	Timeout float64
	// ContinueOnDisapproveTimeout continues the flow after a disapproval
	// or a timeout instead of failing it; the error object is appended to
	// resumes.
	ContinueOnDisapproveTimeout bool
	// ResumeForm is the JSON Schema of an approval's payload
	// (resume_form.schema), or nil: a resume event whose payload it
	// refuses is refused when it is sent, and the dashboard shows its
	// properties as the fields of the Approve form.
	ResumeForm json.RawMessage
}

// Retry is OpenFlow's Retry: constant retries first, then exponential.
type Retry struct {
	// Constant retries wait Seconds each.
	Constant *ConstantRetry
	// Exponential retries wait Multiplier × Seconds^(n) each (n counts
	// every retry before, the constant ones included).
	Exponential *ExponentialRetry
	// RetryIf, when set, must evaluate to true for a failure to be
	// retried; `result` and `error` of the failed attempt are in scope.
	RetryIf string
}

// ConstantRetry is Retry.constant.
type ConstantRetry struct {
	// Attempts is the number of retries (not counting the first run).
	Attempts int
	// Seconds is the delay before each.
	Seconds float64
}

// ExponentialRetry is Retry.exponential.
type ExponentialRetry struct {
	// Attempts is the number of retries.
	Attempts int
	// Multiplier scales the delay; default 1.
	Multiplier float64
	// Seconds is the base, at least 1.
	Seconds float64
	// RandomFactor is a jitter in percent (0 to 100).
	RandomFactor float64
}

// Mock replaces a module's execution by a fixed result.
type Mock struct {
	// Enabled turns the mock on.
	Enabled bool
	// ReturnValue is the result (JSON null when absent).
	ReturnValue json.RawMessage
}
