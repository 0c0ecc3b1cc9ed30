package openworkflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/openworkflow-go/openworkflow/backend"
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
	policy *backend.RetryPolicy
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
// code?}. A stored *Error keeps its fields; a panic keeps its stack.
func encodeError(err error) json.RawMessage {
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
	case errors.As(err, &se) && errors.As(se.Err, &ste):
		out = ste
	case errors.As(err, &se):
		out = Error{Name: errorName(se.Err), Message: se.Err.Error()}
	case errors.As(err, &ste):
		out = ste
	default:
		out = Error{Name: errorName(err), Message: err.Error()}
	}
	b, mErr := json.Marshal(out)
	if mErr != nil {
		b, _ = json.Marshal(Error{Name: "Error", Message: err.Error()})
	}
	return b
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
