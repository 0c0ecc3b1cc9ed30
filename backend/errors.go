package backend

import "errors"

// NotRetryableStep is the name of the step that marks a run as never to be
// retried forward (the root package's MarkNotRetryable records it: a DAG
// run that began to compensate). RetryWorkflowRun refuses a run whose
// history holds it completed, in the same statement or transaction as the
// retry, with [ErrRunNotRetryable].
const NotRetryableStep = "__not_retryable"

// Sentinel errors returned (wrapped, with the id concerned) by every
// backend. Test with errors.Is.
var (
	// ErrRunNotFound: no workflow run has that id in this namespace.
	ErrRunNotFound = errors.New("workflow run not found")
	// ErrStepNotFound: no step attempt has that id in this namespace.
	ErrStepNotFound = errors.New("step attempt not found")
	// ErrNotOwner: a fenced write was refused because the run is not
	// running or is owned by another worker (the lease moved, or the run
	// was canceled or parked).
	ErrNotOwner = errors.New("workflow run is not running or not owned by this worker")
	// ErrRunTerminal: the run is completed or failed and cannot be
	// canceled.
	ErrRunTerminal = errors.New("workflow run is in a terminal state")
	// ErrRunNotFailed: only a failed run can be retried.
	ErrRunNotFailed = errors.New("workflow run is not failed")
	// ErrRunNotRetryable: the run's history holds a completed step named
	// [NotRetryableStep], so RetryWorkflowRun refuses it, whatever its
	// status (the root package's Client.RetryRun says why, from the
	// mark's output).
	ErrRunNotRetryable = errors.New("workflow run may not be retried")
	// ErrRunPaused: the run is paused ([RunPauser]). A worker's heartbeat
	// on a paused run it executes fails with it (the lease saved aside is
	// renewed all the same): the worker starts no further step and hands
	// the run back.
	ErrRunPaused = errors.New("workflow run is paused")
	// ErrRunNotCanceled: [RunPauser.ResumeWorkflowRun] resumes paused and
	// canceled runs only; a failed run is retried instead.
	ErrRunNotCanceled = errors.New("workflow run is failed, not canceled or paused: retry it instead")
	// ErrDeadlinePassed: the run's deadline has passed, so resuming it
	// would only fail it again.
	ErrDeadlinePassed = errors.New("workflow run deadline has passed")
	// ErrStepNotRunning: the step attempt is not in the status the call
	// requires.
	ErrStepNotRunning = errors.New("step attempt is not running")
	// ErrInvalidArgument: a parameter is malformed (a bad cursor, both
	// After and Before set, an empty name, ...).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotSupported: the backend does not implement an optional
	// capability (e.g. Subscribe).
	ErrNotSupported = errors.New("not supported by this backend")
	// ErrUnusable: the backend has stopped serving and fails every call
	// from now on, because no retry can succeed (its storage is damaged,
	// for instance: see sqlite.DamagedError). The error wrapping it says
	// what happened and what to do. A Worker whose claim fails with it
	// stops claiming and Worker.Run returns it, rather than retrying.
	ErrUnusable = errors.New("backend is unusable")
)
