// Package backend defines the storage seam of the engine: the [Backend]
// interface, its record types ([WorkflowRun], [StepAttempt]), the sentinel
// errors every implementation returns, cursor pagination and the retry
// maths shared by all backends.
//
// The semantics are those of OpenWorkflow's Backend interface
// (packages/openworkflow/core/backend.ts); every implementation passes the
// conformance suite in backend/backendtest. A backend instance is bound to
// one namespace and every query filters on it.
package backend

import (
	"context"
	"encoding/json"
	"time"
)

// Backend stores workflow runs, step attempts and signals for one
// namespace. All methods are safe for concurrent use.
//
// Worker-side writes (those taking a WorkerID) are fenced: they succeed only
// while the run is running and owned by that worker, and otherwise return an
// error wrapping [ErrNotOwner] (or [ErrRunNotFound] / [ErrStepNotFound]).
type Backend interface {
	// NamespaceID returns the namespace this backend is bound to.
	NamespaceID() string

	// CreateWorkflowRun inserts a pending run with zero attempts. With an
	// idempotency key, it instead returns the oldest run of the same
	// (namespace, workflow name, key) created within [IdempotencyPeriod],
	// whatever its status and version; concurrent keyed creates are
	// serialized so they collapse to one run.
	CreateWorkflowRun(ctx context.Context, p CreateWorkflowRunParams) (*WorkflowRun, error)
	// GetWorkflowRun returns the run, or an error wrapping [ErrRunNotFound].
	GetWorkflowRun(ctx context.Context, workflowRunID string) (*WorkflowRun, error)
	// ListWorkflowRuns lists runs newest first (created_at DESC, id DESC).
	ListWorkflowRuns(ctx context.Context, p ListWorkflowRunsParams) (*Page[WorkflowRun], error)
	// CountWorkflowRuns counts runs per status.
	CountWorkflowRuns(ctx context.Context) (RunCounts, error)

	// ClaimWorkflowRuns first fails every non-terminal run of the namespace
	// whose deadline has passed (error {"message":"Workflow run deadline
	// exceeded"}), then atomically claims up to len(p.WorkerIDs) runs that
	// are pending or running with available_at <= now and no passed
	// deadline, ordered pending first, then by available_at, then
	// created_at. The i-th claimed run gets worker_id p.WorkerIDs[i],
	// status running, attempts+1, available_at = now + p.LeaseDuration and
	// started_at = COALESCE(started_at, now). With p.Lookahead, parked runs
	// due within it are claimable too, after the due ones. It returns the
	// claimed runs (possibly none).
	ClaimWorkflowRuns(ctx context.Context, p ClaimWorkflowRunsParams) ([]*WorkflowRun, error)
	// ExtendWorkflowRunLease is the heartbeat: available_at = now + lease,
	// fenced on ownership.
	ExtendWorkflowRunLease(ctx context.Context, p ExtendWorkflowRunLeaseParams) error
	// SleepWorkflowRun parks an owned, non-terminal run: status running,
	// worker_id NULL, available_at = p.AvailableAt. If the run already has a
	// running workflow step whose child is terminal, or a running
	// signal-wait step with a delivery, available_at is set to now instead
	// (the wake-up arrived before the park).
	SleepWorkflowRun(ctx context.Context, p SleepWorkflowRunParams) error
	// CompleteWorkflowRun marks an owned run completed with its output
	// (available_at NULL, finished_at now, worker_id kept) and wakes a
	// parked parent waiting on it.
	CompleteWorkflowRun(ctx context.Context, p CompleteWorkflowRunParams) (*WorkflowRun, error)
	// FailWorkflowRun applies [ComputeFailedRunUpdate] with p.RetryPolicy:
	// the run is either rescheduled pending at now+backoff or terminally
	// failed; worker_id and started_at are cleared and the error stored.
	// A terminal failure wakes a parked parent.
	FailWorkflowRun(ctx context.Context, p FailWorkflowRunParams) (*WorkflowRun, error)
	// RescheduleWorkflowRunAfterFailedStepAttempt sets an owned run pending
	// at p.AvailableAt with the step's error (a step retry).
	RescheduleWorkflowRunAfterFailedStepAttempt(ctx context.Context, p RescheduleWorkflowRunParams) (*WorkflowRun, error)
	// CancelWorkflowRun cancels a pending or running run (worker_id and
	// available_at NULL, finished_at now) and wakes a parked parent. It is
	// idempotent for an already canceled run, returns an error wrapping
	// [ErrRunTerminal] for a completed or failed one and [ErrRunNotFound]
	// for a missing one.
	CancelWorkflowRun(ctx context.Context, workflowRunID string) (*WorkflowRun, error)

	// CreateStepAttempt inserts a running attempt, fenced on ownership of
	// the run.
	CreateStepAttempt(ctx context.Context, p CreateStepAttemptParams) (*StepAttempt, error)
	// GetStepAttempt returns the attempt or an error wrapping
	// [ErrStepNotFound].
	GetStepAttempt(ctx context.Context, stepAttemptID string) (*StepAttempt, error)
	// ListStepAttempts lists a run's attempts oldest first (created_at ASC,
	// id ASC).
	ListStepAttempts(ctx context.Context, p ListStepAttemptsParams) (*Page[StepAttempt], error)
	// CompleteStepAttempt marks a running attempt completed with its
	// output, fenced on ownership of the run. Completing an already
	// completed attempt is a no-op that keeps the first output.
	CompleteStepAttempt(ctx context.Context, p CompleteStepAttemptParams) (*StepAttempt, error)
	// FailStepAttempt marks a running attempt failed with its error, fenced
	// like CompleteStepAttempt.
	FailStepAttempt(ctx context.Context, p FailStepAttemptParams) (*StepAttempt, error)
	// SetStepAttemptChildWorkflowRun links a running workflow-kind attempt
	// to its child run, fenced on ownership.
	SetStepAttemptChildWorkflowRun(ctx context.Context, p SetStepAttemptChildWorkflowRunParams) (*StepAttempt, error)

	// Batcher is the group-commit writer and batch start API.
	Batcher

	// SendSignal delivers a signal to every running signal-wait attempt
	// waiting on p.Signal (at most one delivery per wait; signals are not
	// buffered) and wakes those runs if parked. With an idempotency key,
	// a repeated send returns the first send's run ids and delivers
	// nothing new. It returns the ids of the runs delivered to.
	SendSignal(ctx context.Context, p SendSignalParams) ([]string, error)
	// GetSignalDelivery returns the data delivered to a signal-wait
	// attempt. delivered is false when nothing was delivered; data is
	// JSON null (not nil) when null was sent.
	GetSignalDelivery(ctx context.Context, stepAttemptID string) (data json.RawMessage, delivered bool, err error)

	// Subscribe returns a channel of wake-up events until ctx is done, when
	// the channel is closed. Events are hints: a slow subscriber may miss
	// some, so callers keep a fallback poll. A backend that cannot notify
	// returns (nil, ErrNotSupported).
	Subscribe(ctx context.Context) (<-chan Event, error)

	// Close releases the backend's connections.
	Close() error
}

// CreateWorkflowRunParams are the inputs of [Backend.CreateWorkflowRun].
type CreateWorkflowRunParams struct {
	// WorkflowName is required.
	WorkflowName string
	// Version is the workflow version; nil means unversioned.
	Version *string
	// IdempotencyKey dedupes creates within [IdempotencyPeriod]; nil: none.
	IdempotencyKey *string
	// Config is reserved; nil is stored as {}.
	Config json.RawMessage
	// Context is reserved; nil is stored as NULL.
	Context json.RawMessage
	// Input is the run's JSON input; nil is stored as NULL.
	Input json.RawMessage
	// ParentStepAttemptNamespaceID and ParentStepAttemptID link a child run
	// to the parent's workflow step; nil for a top-level run.
	ParentStepAttemptNamespaceID *string
	ParentStepAttemptID          *string
	// AvailableAt delays the start; nil means now.
	AvailableAt *time.Time
	// DeadlineAt fails the run if it has not finished by then; nil means
	// no deadline.
	DeadlineAt *time.Time
}

// ListWorkflowRunsParams filter and paginate [Backend.ListWorkflowRuns].
type ListWorkflowRunsParams struct {
	// Status filters by status (legacy statuses included with their
	// current names); empty means any.
	Status RunStatus
	// WorkflowName filters by workflow name; empty means any.
	WorkflowName string
	// Limit is the page size; 0 means [DefaultPageSize].
	Limit int
	// After and Before are cursors from a previous page; at most one may be
	// set, else the call fails with [ErrInvalidArgument].
	After, Before string
}

// ListStepAttemptsParams paginate [Backend.ListStepAttempts].
type ListStepAttemptsParams struct {
	// WorkflowRunID is the run whose attempts are listed.
	WorkflowRunID string
	// Limit is the page size; 0 means [DefaultPageSize].
	Limit int
	// After and Before are cursors from a previous page; at most one.
	After, Before string
}

// DefaultPageSize is the page size of list calls when Limit is 0.
const DefaultPageSize = 100

// ClaimWorkflowRunsParams are the inputs of [Backend.ClaimWorkflowRuns].
type ClaimWorkflowRunsParams struct {
	// WorkerIDs are the ids of the free slots; one run is claimed per id.
	WorkerIDs []string
	// LeaseDuration is how long the claim holds before another worker may
	// take the run, unless extended by a heartbeat.
	LeaseDuration time.Duration
	// Workflows, when non-nil, restricts the claim to runs of these
	// workflows (name and version; a nil version matches only unversioned
	// runs), so a worker leaves other workflows' runs to the workers that
	// have them — e.g. TypeScript workers sharing the namespace. Nil means
	// any run, as in OpenWorkflow.
	Workflows []WorkflowKey
	// Lookahead, when positive, also makes claimable the parked runs
	// (status running, no worker) due within Lookahead of now, after every
	// due run, so that a worker can claim and read a run a few
	// milliseconds before it wakes and start it on time. The claimer must
	// not run such a run's pending waits before they are due. A run whose
	// lease is about to expire is never claimed early. Zero claims only
	// due runs, as in OpenWorkflow.
	Lookahead time.Duration
}

// WorkflowKey identifies a workflow implementation: name and version (nil
// for unversioned).
type WorkflowKey struct {
	// Name and Version are the workflow's; Version nil is unversioned.
	Name    string
	Version *string
}

// ExtendWorkflowRunLeaseParams are the inputs of [Backend.ExtendWorkflowRunLease].
type ExtendWorkflowRunLeaseParams struct {
	// WorkflowRunID and WorkerID name the run and its owner (the fence).
	WorkflowRunID string
	WorkerID      string
	// LeaseDuration is the new lease, from now.
	LeaseDuration time.Duration
}

// SleepWorkflowRunParams are the inputs of [Backend.SleepWorkflowRun].
type SleepWorkflowRunParams struct {
	// WorkflowRunID and WorkerID name the run and its owner (the fence).
	WorkflowRunID string
	WorkerID      string
	// AvailableAt is when the run becomes claimable again.
	AvailableAt time.Time
}

// CompleteWorkflowRunParams are the inputs of [Backend.CompleteWorkflowRun].
type CompleteWorkflowRunParams struct {
	// WorkflowRunID and WorkerID name the run and its owner (the fence).
	WorkflowRunID string
	WorkerID      string
	// Output is the JSON output; nil is stored as JSON null.
	Output json.RawMessage
}

// FailWorkflowRunParams are the inputs of [Backend.FailWorkflowRun].
type FailWorkflowRunParams struct {
	// WorkflowRunID and WorkerID name the run and its owner (the fence).
	WorkflowRunID string
	WorkerID      string
	// Error is the serialized error to store.
	Error json.RawMessage
	// RetryPolicy decides between a retry and a terminal failure.
	RetryPolicy RetryPolicy
	// Attempts and DeadlineAt are the run's, if the caller has them; a nil
	// field is read from the run.
	Attempts   *int
	DeadlineAt *time.Time
}

// RescheduleWorkflowRunParams are the inputs of
// [Backend.RescheduleWorkflowRunAfterFailedStepAttempt].
type RescheduleWorkflowRunParams struct {
	// WorkflowRunID and WorkerID name the run and its owner (the fence).
	WorkflowRunID string
	WorkerID      string
	// Error is the failed step's serialized error.
	Error json.RawMessage
	// AvailableAt is when the retry may be claimed.
	AvailableAt time.Time
}

// CreateStepAttemptParams are the inputs of [Backend.CreateStepAttempt].
type CreateStepAttemptParams struct {
	// WorkflowRunID and WorkerID name the run and its owner (the fence).
	WorkflowRunID string
	WorkerID      string
	// StepName is the durable key; Kind the step kind.
	StepName string
	Kind     StepKind
	// Config is reserved; nil is stored as {}.
	Config json.RawMessage
	// Context is the kind-specific JSON context (see [StepAttempt]).
	Context json.RawMessage
}

// CompleteStepAttemptParams are the inputs of [Backend.CompleteStepAttempt].
type CompleteStepAttemptParams struct {
	// WorkflowRunID, StepAttemptID and WorkerID name the attempt and the
	// owner of its run (the fence).
	WorkflowRunID string
	StepAttemptID string
	WorkerID      string
	// Output is the JSON output; nil is stored as JSON null.
	Output json.RawMessage
}

// FailStepAttemptParams are the inputs of [Backend.FailStepAttempt].
type FailStepAttemptParams struct {
	// WorkflowRunID, StepAttemptID and WorkerID name the attempt and the
	// owner of its run (the fence).
	WorkflowRunID string
	StepAttemptID string
	WorkerID      string
	// Error is the serialized error to store.
	Error json.RawMessage
}

// SetStepAttemptChildWorkflowRunParams are the inputs of
// [Backend.SetStepAttemptChildWorkflowRun].
type SetStepAttemptChildWorkflowRunParams struct {
	// WorkflowRunID, StepAttemptID and WorkerID name the attempt and the
	// owner of its run (the fence).
	WorkflowRunID string
	StepAttemptID string
	WorkerID      string
	// ChildWorkflowRunNamespaceID and ChildWorkflowRunID name the child.
	ChildWorkflowRunNamespaceID string
	ChildWorkflowRunID          string
}

// SendSignalParams are the inputs of [Backend.SendSignal].
type SendSignalParams struct {
	// Signal is the name waits are addressed by.
	Signal string
	// Data is the JSON payload; nil is stored as NULL and read back as JSON
	// null.
	Data json.RawMessage
	// IdempotencyKey dedupes repeated sends of the same signal name.
	IdempotencyKey *string
}

// EventKind says what an [Event] announces.
type EventKind string

// Event kinds.
const (
	// EventWorkAvailable: a run became claimable (created, woken, or
	// rescheduled for now). Idle workers should poll.
	EventWorkAvailable EventKind = "work"
	// EventRunFinished: the run WorkflowRunID reached a terminal status.
	EventRunFinished EventKind = "finished"
)

// Event is a wake-up hint published by a backend to its subscribers.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// WorkflowRunID is the run concerned (empty for some work events).
	WorkflowRunID string
}
