package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/access"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/runquery"
)

// Code is the stable, machine-readable code of an API error; the message
// beside it is for people and may change.
type Code string

// The error codes, and the HTTP status each answers with.
const (
	CodeInvalidArgument  Code = "invalid_argument"    // 400: bad input; field names it
	CodeUnauthorized     Code = "unauthorized"        // 401: missing or wrong bearer token
	CodeForbidden        Code = "forbidden"           // 403: the token's scope or namespace does not allow it, or (without a token) a foreign Host or a cross-origin request
	CodeNotFound         Code = "not_found"           // 404: unknown route, run, step, stream or schedule
	CodeHookNotFound     Code = "hook_not_found"      // 404: no live hook holds the token
	CodeNotDAGRun        Code = "not_a_dag_run"       // 404: the run is not a DAG workflow run (GET /v1/runs/{id}/dag)
	CodeNotFlowRun       Code = "not_an_openflow_run" // 404: the run is not an OpenFlow run (GET /v1/runs/{id}/flow)
	CodeMethodNotAllowed Code = "method_not_allowed"  // 405
	CodeRunTerminal      Code = "run_terminal"        // 409: the run is completed, failed or canceled
	CodeRunNotFailed     Code = "run_not_failed"      // 409: only a failed run can be retried
	// CodeRunNotRetryable (409): POST /v1/runs/{id}/retry on a run its
	// workflow marked as not to be retried forward (ow.ErrRunNotRetryable:
	// a DAG run that began to compensate), whatever its status; start a
	// new run, or fork one, instead.
	CodeRunNotRetryable Code = "run_not_retryable"
	// CodeRunNotCanceled (409): POST /v1/runs/{id}/resume on a failed
	// run; retry it (POST /v1/runs/{id}/retry) instead.
	CodeRunNotCanceled Code = "run_not_canceled"
	// CodeDeadlinePassed (409): POST /v1/runs/{id}/resume on a canceled
	// run whose deadline has passed; fork it instead.
	CodeDeadlinePassed Code = "deadline_passed"
	// CodeRunPaused (409): POST /v1/runs/{id}/updates/{name} on a paused
	// run; resume it (POST /v1/runs/{id}/resume) first.
	CodeRunPaused    Code = "run_paused"
	CodeHookConflict Code = "hook_conflict" // 409: the token is held by another live hook
	CodeStreamClosed Code = "stream_closed" // 409
	// CodeBulkActionFinished (409): POST /v1/bulk-actions/{id}/cancel on
	// an action that completed or failed.
	CodeBulkActionFinished Code = "bulk_action_finished"
	// CodeIdempotencyConflict (409): POST /v1/runs with an idempotency key
	// that started a run of another input within 24 hours; the message
	// names that run, which the start did not change.
	CodeIdempotencyConflict Code = "idempotency_conflict"
	// CodeSingletonSkipped (409): POST /v1/runs with a singleton in mode
	// skip and errorOnSkip, whose key has an active run; the message
	// names that run, and nothing was started.
	CodeSingletonSkipped Code = "singleton_skipped"
	// CodeUpdateRejected (422): POST /v1/runs/{id}/updates/{name} whose
	// update the run rejected — its validator refused it, the workflow
	// handles no update of that name, or the run finished first; the
	// message gives the reason. Nothing of it is in the run's history.
	CodeUpdateRejected Code = "update_rejected"
	// CodeTooManyUpdates (429): the run has 10 updates waiting to be
	// handled (or had 2000); retry once some are.
	CodeTooManyUpdates       Code = "too_many_updates"
	CodePayloadTooLarge      Code = "payload_too_large"      // 413: body above Options.MaxBodyBytes
	CodeUnsupportedMediaType Code = "unsupported_media_type" // 415: a JSON body sent without Content-Type application/json
	CodeTooManyRequests      Code = "too_many_requests"      // 429: too many wrong tokens; wait Retry-After seconds
	CodeNotSupported         Code = "not_supported"          // 501: the backend lacks the capability
	CodeUnavailable          Code = "unavailable"            // 503: the backend did not answer; retry
	CodeInternal             Code = "internal"               // 500: a fault of the server, logged
)

// Error is the body of every error answer.
type Error struct {
	// Code is stable; Message explains it and says what to do.
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// Field names the request field at fault (a JSON member, a query
	// parameter or a path parameter), when there is one.
	Field string `json:"field,omitempty"`
	// Position is, for a query that cannot run (the q parameter), where
	// in it the fault is: line and column from 1 (column in bytes), and
	// the byte offset from 0.
	Position *runquery.Position `json:"position,omitempty"`
	// Status is the HTTP status (not sent: it is the response's).
	Status int `json:"-"`
}

func (e *Error) Error() string { return e.Message }

func errorf(status int, code Code, field, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

func badField(field, format string, args ...any) *Error {
	return errorf(http.StatusBadRequest, CodeInvalidArgument, field, format, args...)
}

// asAPIError maps an error of the client or the backend to its answer.
// field names the request field an ErrInvalidArgument is about, if the
// caller knows it.
func asAPIError(err error, field string) *Error {
	var e *Error
	var tooLarge *http.MaxBytesError
	var bad *backend.ScheduleFieldError
	var denied *access.Denied
	var badRun *backend.FieldError
	var badQuery *runquery.Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &badQuery):
		e := errorf(http.StatusBadRequest, CodeInvalidArgument, "q", "%s", badQuery)
		e.Position = &badQuery.Pos
		return e
	case errors.As(err, &denied):
		code := map[int]Code{http.StatusUnauthorized: CodeUnauthorized, http.StatusForbidden: CodeForbidden, http.StatusTooManyRequests: CodeTooManyRequests}[denied.Status]
		return errorf(denied.Status, code, "", "%s", denied.Message)
	case errors.As(err, &bad):
		return errorf(http.StatusBadRequest, CodeInvalidArgument, bad.Field, "%s", bad)
	case errors.As(err, &badRun):
		return errorf(http.StatusBadRequest, CodeInvalidArgument, badRun.Field, "%s", err)
	case errors.As(err, &tooLarge):
		return errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "", "the request body is larger than %d bytes", tooLarge.Limit)
	case errors.Is(err, backend.ErrInvalidSearchAttribute):
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "searchAttributes", "%s", err)
	case errors.Is(err, backend.ErrInvalidArgument):
		return errorf(http.StatusBadRequest, CodeInvalidArgument, field, "%s", err)
	case errors.Is(err, backend.ErrRunNotFound), errors.Is(err, backend.ErrStepNotFound):
		return errorf(http.StatusNotFound, CodeNotFound, "", "%s", err)
	case errors.Is(err, backend.ErrScheduleNotFound):
		return errorf(http.StatusNotFound, CodeNotFound, "name", "%s", err)
	case errors.Is(err, backend.ErrHookNotFound):
		return errorf(http.StatusNotFound, CodeHookNotFound, "token", "%s", err)
	case errors.Is(err, backend.ErrRunTerminal):
		return errorf(http.StatusConflict, CodeRunTerminal, "", "%s", err)
	case errors.Is(err, ow.ErrRunNotRetryable):
		return errorf(http.StatusConflict, CodeRunNotRetryable, "", "%s", err)
	case errors.Is(err, backend.ErrRunNotFailed):
		return errorf(http.StatusConflict, CodeRunNotFailed, "", "%s", err)
	case errors.Is(err, backend.ErrRunNotCanceled):
		return errorf(http.StatusConflict, CodeRunNotCanceled, "", "%s", err)
	case errors.Is(err, backend.ErrDeadlinePassed):
		return errorf(http.StatusConflict, CodeDeadlinePassed, "", "%s", err)
	case errors.Is(err, backend.ErrRunPaused):
		return errorf(http.StatusConflict, CodeRunPaused, "", "%s", err)
	case errors.Is(err, ow.ErrSingletonSkipped):
		return errorf(http.StatusConflict, CodeSingletonSkipped, "singleton", "%s", err)
	case errors.Is(err, ow.ErrIdempotencyConflict):
		return errorf(http.StatusConflict, CodeIdempotencyConflict, "idempotencyKey", "%s", err)
	case errors.Is(err, backend.ErrHookConflict):
		return errorf(http.StatusConflict, CodeHookConflict, "token", "%s", err)
	case errors.Is(err, backend.ErrStreamClosed):
		return errorf(http.StatusConflict, CodeStreamClosed, "", "%s", err)
	case errors.Is(err, backend.ErrNotSupported):
		return errorf(http.StatusNotImplemented, CodeNotSupported, "", "%s", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errorf(http.StatusServiceUnavailable, CodeUnavailable, "", "the request ended before the backend answered: %s", err)
	default:
		return errorf(http.StatusServiceUnavailable, CodeUnavailable, "", "the backend failed: %s; retry later", err)
	}
}

// writeError answers err as JSON, unless the response has begun (an event
// stream that failed midway just ends).
func writeError(w *recorder, r *http.Request, err error) {
	if w.code != 0 {
		return
	}
	e := asAPIError(err, "")
	if d, ok := access.AsDenied(err); ok {
		d.SetHeaders(w.Header())
	} else if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="openworkflow"`)
	}
	writeJSON(w, e.Status, e)
}

// writeJSON answers v as JSON with status. The encoder writes the
// encoded value once, from its own (pooled) buffer: a large page is not
// copied again to add the newline. It does not escape <, > and & as
// \u003c, \u003e and \u0026: an answer of Content-Type
// application/json is not HTML, and a value reads back as it was given.
func writeJSON(w http.ResponseWriter, status int, v any) {
	out := &jsonAnswer{w: w, status: status}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil && !out.begun {
		// Nothing was written: v could not be encoded.
		b, _ := json.Marshal(&Error{Code: CodeInternal, Message: "encode the response: " + err.Error()})
		out.status = http.StatusInternalServerError
		_, _ = out.Write(append(b, '\n'))
	}
}

// jsonAnswer sends the headers and status of a JSON answer with its
// first write.
type jsonAnswer struct {
	w      http.ResponseWriter
	status int
	begun  bool
}

func (a *jsonAnswer) Write(b []byte) (int, error) {
	if !a.begun {
		a.begun = true
		a.w.Header().Set("Content-Type", "application/json")
		a.w.Header().Set("Cache-Control", "no-store")
		a.w.WriteHeader(a.status)
	}
	return a.w.Write(b)
}
