package openworkflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Errors of the storage layer a caller of [Client] tests for with
// errors.Is, re-exported from package backend so that it need not import
// it.
var (
	// ErrRunNotFound: no run has that id in the client's namespace (GetRun,
	// CancelRun, RunHandle.Result).
	ErrRunNotFound = backend.ErrRunNotFound
	// ErrRunTerminal: the run already completed or failed, so it cannot be
	// canceled (CancelRun), or it is terminal, so it cannot be paused
	// (PauseRun), or it completed, so it cannot be resumed (ResumeRun).
	ErrRunTerminal = backend.ErrRunTerminal
	// ErrInvalidArgument: a malformed request — an empty workflow or signal
	// name, a value no backend can store, a bad cursor. The message names
	// what was wrong.
	ErrInvalidArgument = backend.ErrInvalidArgument
	// ErrRunPaused: the run is paused (PauseRun). A worker's heartbeat
	// meets it and hands the run back; see PauseRun.
	ErrRunPaused = backend.ErrRunPaused
	// ErrRunNotCanceled: ResumeRun resumes paused and canceled runs; a
	// failed run is retried instead (RetryRun).
	ErrRunNotCanceled = backend.ErrRunNotCanceled
	// ErrDeadlinePassed: ResumeRun refuses a canceled run whose deadline
	// has passed, since it would only fail again (fork it instead).
	ErrDeadlinePassed = backend.ErrDeadlinePassed
)

// ErrSuspended is returned by a wait point (Sleep, RunWorkflow,
// WaitForSignal, Future.Get) when the run must park until a timer, a child
// or a signal wakes it. Return it from the workflow function as you would
// any error: the worker parks the run, frees its slot, and replays the
// workflow from the top when it wakes. Once a pass is suspended, every
// further step call of that pass returns ErrSuspended without executing.
var ErrSuspended = errors.New("openworkflow: run suspended until woken")

// ErrNotInWorkflow is returned by step functions called with a context that
// does not belong to an executing workflow pass.
var ErrNotInWorkflow = errors.New("openworkflow: step called outside a workflow execution")

// ErrLeaseLost is returned by step functions once the worker no longer owns
// the run: it was canceled, its lease moved to another worker, or the
// worker is shutting down. Nothing more is committed for this pass.
var ErrLeaseLost = errors.New("openworkflow: run no longer owned by this worker (canceled, lease lost or shutting down)")

// ErrAbandonedSteps is wrapped by the errors of a worker that abandoned
// user code ignoring its context (see WorkerOptions.AbandonStepAfter)
// whose goroutines still run: a claim refused because the worker has
// WorkerOptions.MaxAbandonedSteps of them, and [Worker.Stop] returning
// while some still run. The error says how many. Make step functions and
// workflow code return when their context is done; until they do, restart
// the process to be rid of them.
var ErrAbandonedSteps = errors.New("openworkflow: user code that ignores its context was abandoned and still runs")

// ErrRunCanceled is returned (wrapped) by a handle's Result when the run
// was canceled.
var ErrRunCanceled = errors.New("workflow run was canceled")

// ErrAlreadyRegistered is returned (wrapped) when a workflow name and
// version is registered twice on one worker.
var ErrAlreadyRegistered = errors.New("workflow already registered")

// Error is an error as stored in a run or step attempt: JSON
// {"name","message","stack"?,"code"?} as in OpenWorkflow. Errors read back
// from storage (a failed child run, a failed run's Result) are *Error.
type Error struct {
	// Name is the error's type name, e.g. "Error", "PanicError",
	// "StepLimitExceededError".
	Name string `json:"name,omitempty"`
	// Message is the human-readable message.
	Message string `json:"message"`
	// Stack is a stack trace, when one was captured (panics).
	Stack string `json:"stack,omitempty"`
	// Code is a machine-readable code, e.g. "STEP_LIMIT_EXCEEDED".
	Code string `json:"code,omitempty"`
}

// Error returns "Name: Message", or Message alone for the generic name
// "Error".
func (e *Error) Error() string {
	if e.Name != "" && e.Name != "Error" {
		return e.Name + ": " + e.Message
	}
	return e.Message
}

// decodeError parses stored error JSON; malformed JSON becomes an *Error
// whose message is the raw text.
func decodeError(raw json.RawMessage) *Error {
	if len(raw) == 0 || string(raw) == "null" {
		return &Error{Message: "unknown error"}
	}
	var e Error
	if err := json.Unmarshal(raw, &e); err != nil {
		return &Error{Message: string(raw)}
	}
	return &e
}

// NonRetryableError marks an error that must not be retried: a step
// returning it fails at once, and so does the run unless the workflow
// handles it. Create it with [NonRetryable].
type NonRetryableError struct {
	// Err is the wrapped error.
	Err error
}

// Error returns the wrapped error's message.
func (e *NonRetryableError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *NonRetryableError) Unwrap() error { return e.Err }

// NonRetryable wraps err so that the step returning it is not retried. It
// returns nil for a nil err.
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return &NonRetryableError{Err: err}
}

// PanicError is a panic recovered in workflow or step code. The run (or the
// step) fails with it; the worker never crashes.
type PanicError struct {
	// Value is the value passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack string
}

// Error returns "panic: <value>".
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// StepError is returned by a step function whose attempt failed. It names
// the step's durable key; the worker uses it to apply the step's retry
// policy when the workflow returns it.
type StepError struct {
	// StepName is the durable key of the step, e.g. "fetch" or "fetch:2".
	StepName string
	// Err is the step function's error.
	Err error
	// policy is the step's retry policy (nil: no retry, e.g. child failures).
	policy *RetryPolicy
	// stored is the step's error as recorded on its attempt, when the
	// step recorded it (so that the run's error is the same, and no method
	// of Err is called again).
	stored json.RawMessage
}

// Error returns `step "<key>" failed: <cause>`.
func (e *StepError) Error() string { return fmt.Sprintf("step %q failed: %v", e.StepName, e.Err) }

// Unwrap returns the step's error.
func (e *StepError) Unwrap() error { return e.Err }

// StepLimitExceededError fails a run that would exceed
// [StepLimit] step attempts; it is never retried.
type StepLimitExceededError struct {
	// Limit is the cap (1000); StepCount the attempts the run has.
	Limit     int
	StepCount int
}

// Error returns OpenWorkflow's message for the cap.
func (e *StepLimitExceededError) Error() string {
	return fmt.Sprintf("Exceeded the step limit of %d attempts (current count: %d)", e.Limit, e.StepCount)
}

// RunFailedError is returned by a handle's Result when the run failed.
type RunFailedError struct {
	// RunID and WorkflowName identify the failed run.
	RunID        string
	WorkflowName string
	// Err is the stored error of the run.
	Err *Error
}

// Error names the workflow, the run and the stored error.
func (e *RunFailedError) Error() string {
	return fmt.Sprintf("workflow %s (run %s) failed: %v", e.WorkflowName, e.RunID, e.Err)
}

// Unwrap returns the stored error.
func (e *RunFailedError) Unwrap() error { return e.Err }

// encodeError serializes err as stored error JSON {name, message, stack?,
// code?}. A stored *Error keeps its fields; a panic keeps its stack. It
// never panics: err comes from user code, and if one of its methods
// (Error, Unwrap, As) panics — a typed nil pointer whose Error method
// dereferences it, say — the stored error is a PanicError naming err's
// type and the panic.
func encodeError(err error) (stored json.RawMessage) {
	defer func() {
		if r := recover(); r != nil {
			stored = methodPanicError(err, r)
		}
	}()
	var out any
	var (
		se  *StepError
		pe  *PanicError
		le  *StepLimitExceededError
		ste *Error
	)
	switch {
	case errors.As(err, &le):
		out = map[string]any{
			"name": "StepLimitExceededError", "message": le.Error(),
			"code": "STEP_LIMIT_EXCEEDED", "limit": le.Limit, "stepCount": le.StepCount,
		}
	case errors.As(err, &pe):
		out = Error{Name: "PanicError", Message: pe.Error(), Stack: pe.Stack}
	case errors.As(err, &se) && se.stored != nil:
		return se.stored
	case errors.As(err, &se) && errors.As(se.Err, &ste):
		out = ste
	case errors.As(err, &se):
		out = Error{Name: errorName(se.Err), Message: se.Err.Error()}
	case errors.As(err, &ste):
		out = ste
	default:
		out = Error{Name: errorName(err), Message: err.Error()}
	}
	b, mErr := marshalValue(out)
	if mErr != nil {
		b, _ = json.Marshal(Error{Name: "Error", Message: err.Error()})
	}
	return b
}

// methodPanicError is the stored error of an error value whose own method
// panicked with r while the engine read it.
func methodPanicError(err error, r any) json.RawMessage {
	b, _ := json.Marshal(Error{
		Name:    "PanicError",
		Message: fmt.Sprintf("panic: a method of the error value %s panicked: %v", reflect.TypeOf(err), r),
		Stack:   string(debug.Stack()),
	})
	return b
}

// failureClass says how the worker treats the error a pass ended with.
type failureClass int

const (
	// failWorkflow: the workflow's own error, retried by its retry policy.
	failWorkflow failureClass = iota
	// failSuspended: ErrSuspended, a wait point parked the run.
	failSuspended
	// failStep: a step failure (*StepError), retried by the step's policy
	// (none when policy is nil).
	failStep
	// failFinal: never retried: the step limit, NonRetryable, or an error
	// value whose methods panic.
	failFinal
)

// failure is what the worker keeps of the error a pass ended with, read
// once, under recover, by describeFailure: after that no method of the
// user's error value is called again.
type failure struct {
	class   failureClass
	step    string          // failStep: the step's durable key
	policy  *RetryPolicy    // failStep: its retry policy, nil for none
	stored  json.RawMessage // the error as stored
	name    string          // for spans: the error's type name
	message string          // for spans and logs
}

// describeFailure classifies err and serializes it. Any panic of a method
// of err (Error, Is, As, Unwrap) makes it a final failure stored as a
// PanicError naming err's type, never a crash of the worker.
func describeFailure(err error) (f failure) {
	defer func() {
		if r := recover(); r != nil {
			stored := methodPanicError(err, r)
			f = failure{class: failFinal, stored: stored, name: "PanicError", message: string(stored)}
		}
	}()
	var (
		le *StepLimitExceededError
		nr *NonRetryableError
		se *StepError
	)
	switch {
	case errors.Is(err, ErrSuspended):
		return failure{class: failSuspended}
	case errors.As(err, &le), errors.As(err, &nr):
		f.class = failFinal
	case errors.As(err, &se):
		f.class, f.step, f.policy = failStep, se.StepName, se.policy
	}
	f.stored = encodeError(err)
	f.name, f.message = errorName(err), err.Error()
	return f
}

// errorName names err's innermost meaningful type, e.g. "NotFoundError";
// plain errors.New / fmt.Errorf errors are "Error".
func errorName(err error) string {
	for {
		var nr *NonRetryableError
		if errors.As(err, &nr) && nr == err {
			err = nr.Err
			continue
		}
		break
	}
	t := reflect.TypeOf(err)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "Error"
	}
	name := t.Name()
	if name == "" || strings.HasPrefix(name, "error") || name == "wrapError" || name == "wrapErrors" || name == "joinError" {
		return "Error"
	}
	return name
}

// ErrIdempotencyConflict is the error of a keyed start whose key matched
// an earlier run of different input, for callers that treat that case as
// an error: the start itself succeeds, returning the earlier run with
// [RunHandle.InputDiffers] set, and [RunHandle.Conflict] turns it into
// this error. The HTTP API answers it with 409 idempotency_conflict.
var ErrIdempotencyConflict = errors.New("idempotency key reused with a different input")
