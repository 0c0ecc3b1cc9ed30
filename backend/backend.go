// Package backend defines the storage seam of the engine, split by role:
// [Client] is what a client, the HTTP API and the dashboard need (start,
// get, list, count, cancel, signal, subscribe), [Worker] what a worker
// needs besides (claim, heartbeat, release, apply writes), and [Backend]
// both. Optional capabilities ([HistoryReader], [DueTimer], and others in
// their own files) are discovered by interface assertion. The package also
// holds the record types ([WorkflowRun], [StepAttempt]), the sentinel
// errors every implementation returns, the checks of what every backend
// can store ([ValidateJSON], [ValidText]) and cursor pagination.
//
// The semantics are those of OpenWorkflow's Backend interface
// (packages/openworkflow/core/backend.ts), kept in the rows rather than in
// method names: every worker write goes through [Worker.ApplyWrites].
// Every implementation passes the conformance suite in backend/backendtest.
// A backend instance is bound to one namespace and every query filters on
// it.
package backend

import (
	"context"
	"encoding/json"
	"time"

	"github.com/openworkflow-go/openworkflow/runquery"
)

// Backend is a storage backend for one namespace: both sides of the seam.
// All methods are safe for concurrent use. The PostgreSQL and SQLite
// backends implement it.
type Backend interface {
	Client
	Worker
	// Close releases the backend's connections.
	Close() error
}

// Client is the client side of the seam: what starting, inspecting,
// canceling and signaling runs needs — package openworkflow's Client, the
// HTTP API and the dashboard use only it.
type Client interface {
	// NamespaceID returns the namespace this backend is bound to.
	NamespaceID() string

	// CreateWorkflowRun inserts a pending run with zero attempts. With an
	// idempotency key, it instead returns the oldest run of the same
	// (namespace, workflow name, key) created within [IdempotencyPeriod],
	// whatever its status and version; concurrent keyed creates are
	// serialized so they collapse to one run. Invalid params
	// ([CreateWorkflowRunParams.Validate]) fail with [ErrInvalidArgument].
	CreateWorkflowRun(ctx context.Context, p CreateWorkflowRunParams) (*WorkflowRun, error)
	// CreateWorkflowRuns inserts many runs at once (the batch start API),
	// in one statement where the backend can, and returns them in the
	// order given, as stored (a backend may return JSON fields as given
	// rather than re-rendered by its store: same values, possibly other
	// key order and spacing). Runs with an idempotency key are
	// deduplicated as by CreateWorkflowRun. It fails as a whole (nothing
	// inserted) when any params are invalid, naming the index of the first
	// bad one.
	CreateWorkflowRuns(ctx context.Context, ps []CreateWorkflowRunParams) ([]*WorkflowRun, error)
	// GetWorkflowRun returns the run, or an error wrapping [ErrRunNotFound].
	GetWorkflowRun(ctx context.Context, workflowRunID string) (*WorkflowRun, error)
	// ListWorkflowRuns lists runs newest first (created_at DESC, id DESC).
	ListWorkflowRuns(ctx context.Context, p ListWorkflowRunsParams) (*Page[WorkflowRun], error)
	// CountWorkflowRuns counts runs per status.
	CountWorkflowRuns(ctx context.Context) (RunCounts, error)
	// CountMatchingRuns counts the runs ListWorkflowRuns would list with
	// p's filters (Status, WorkflowName, CreatedAfter, CreatedBefore,
	// Query), across all pages: Limit, the cursors, OmitPayloads and
	// MaxBytes are ignored. It reads the rows (no counter serves an
	// arbitrary query), so its cost grows with the runs it matches. A query
	// a backend cannot run (an undeclared search attribute, a value of
	// another type than the attribute's) fails with an error wrapping both
	// [ErrInvalidArgument] and a *runquery.Error giving the position.
	CountMatchingRuns(ctx context.Context, p ListWorkflowRunsParams) (int64, error)
	// CancelWorkflowRun cancels a pending or running run (worker_id and
	// available_at NULL, finished_at now) and wakes a parked parent. It is
	// idempotent for an already canceled run, returns an error wrapping
	// [ErrRunTerminal] for a completed or failed one and [ErrRunNotFound]
	// for a missing one.
	CancelWorkflowRun(ctx context.Context, workflowRunID string) (*WorkflowRun, error)
	// RetryWorkflowRun retries the failed run p.WorkflowRunID from its
	// failed step. In one transaction it inserts the retry mark — a
	// completed attempt of kind [StepRetry] named "__retry:<its attempt
	// id>" (a name no user step resolves to by accident, as the child
	// idempotency key "__workflow:…" is chosen), with output
	// {"attempts": <the run's attempts>} — and makes the run pending with
	// available_at now, error, finished_at and worker_id NULL and
	// deadline_at p.DeadlineAt (nil: none; a deadline already passed fails
	// the run again at the next claim, as at creation), then wakes idle
	// workers as a create does. The completed attempts keep their results;
	// a worker's history reads the mark as the point from which the retry
	// budgets count again (internal/history). Only a failed run can be
	// retried: any other status gives an error wrapping [ErrRunNotFailed]
	// (so of two concurrent retries exactly one succeeds), a missing run
	// [ErrRunNotFound].
	RetryWorkflowRun(ctx context.Context, p RetryWorkflowRunParams) (*WorkflowRun, error)

	// GetStepAttempt returns the attempt or an error wrapping
	// [ErrStepNotFound].
	GetStepAttempt(ctx context.Context, stepAttemptID string) (*StepAttempt, error)
	// ListStepAttempts lists a run's attempts oldest first (created_at ASC,
	// id ASC).
	ListStepAttempts(ctx context.Context, p ListStepAttemptsParams) (*Page[StepAttempt], error)

	// SendSignal delivers a signal to every running signal-wait attempt
	// waiting on p.Signal, whatever its run's status, as OpenWorkflow
	// 0.10.1 does (at most one delivery per wait; signals are not
	// buffered), and wakes the runs that are parked. With an idempotency
	// key, a repeated send returns the first send's run ids and delivers
	// nothing new. It returns the ids of the runs delivered to.
	SendSignal(ctx context.Context, p SendSignalParams) ([]string, error)
	// SignalRun sends a signal to one run (this SDK's own, not
	// OpenWorkflow's; Temporal's rule): it is stored until the run's next
	// wait for p.Signal receives it, delivered exactly once, and the
	// signals sent to one run and name are received in send order. In
	// one transaction it locks the run, stores the signal (go migration
	// 11's go_run_signals), and, if the run already waits for p.Signal
	// with nothing delivered, delivers the oldest stored one to that wait
	// and wakes the run when it is parked. With an idempotency key, a
	// repeat of an earlier send to the same run and signal stores nothing
	// and returns the first send's signal (Duplicate). A missing run
	// gives an error wrapping [ErrRunNotFound]; a completed, failed or
	// canceled one [ErrRunTerminal].
	SignalRun(ctx context.Context, p SignalRunParams) (*RunSignal, error)

	// Subscribe returns a channel of wake-up events until ctx is done, when
	// the channel is closed. Events are hints: a slow subscriber may miss
	// some, so callers keep a fallback poll. A backend that cannot notify
	// returns (nil, ErrNotSupported).
	Subscribe(ctx context.Context) (<-chan Event, error)
}

// Worker is the worker side of the seam: claiming runs under a lease,
// keeping it, handing runs back, and committing what a pass did. A worker
// also reads and starts runs, so package openworkflow's Worker takes a
// whole [Backend].
//
// Every write of a worker is fenced: it applies only while the run is
// running and leased to the worker id it names, else it is refused with
// an error wrapping [ErrNotOwner] (and [ErrRunNotFound] when the run does
// not exist).
type Worker interface {
	// NamespaceID returns the namespace this backend is bound to.
	NamespaceID() string

	// ClaimWorkflowRuns first fails every non-terminal run of the namespace
	// whose deadline has passed (error [DeadlineExceededError]), then
	// atomically claims up to len(p.WorkerIDs) runs that are pending or
	// running with available_at <= now and no passed deadline, ordered by
	// priority (higher first), then by available_at (when each became
	// claimable), created_at and id, whatever their status: a run handed
	// back, with an expired lease or woken keeps its place ahead of the runs
	// that became due after it. (OpenWorkflow's claim takes pending runs
	// first; with every due run pending the orders agree.) The i-th
	// claimed run gets worker_id p.WorkerIDs[i], status running,
	// attempts+1, available_at = now + p.LeaseDuration and started_at =
	// COALESCE(started_at, now). With p.Lookahead, parked runs due within
	// it are claimable too, after the due ones. It returns the claimed runs
	// (possibly none). With no WorkerIDs it only fails the expired runs: a
	// worker without a free slot sweeps that way, so a run's deadline is
	// kept whatever the workers' load.
	ClaimWorkflowRuns(ctx context.Context, p ClaimWorkflowRunsParams) ([]*WorkflowRun, error)
	// ExtendWorkflowRunLease is the heartbeat: available_at = now + lease,
	// fenced on ownership. On a paused run ([RunPauser]) the new lease is
	// kept with its saved due time instead (available_at stays NULL) and
	// the call fails with an error wrapping [ErrRunPaused]: the worker
	// starts no further step and hands the run back (WriteParkRun).
	ExtendWorkflowRunLease(ctx context.Context, p ExtendWorkflowRunLeaseParams) error
	// ReleaseWorkflowRuns hands back every running run leased to one of
	// workerIDs (worker_id NULL, available_at now, so any worker may claim
	// it at once; attempts unchanged) and returns how many it released. A
	// worker calls it for the slots of a claim whose outcome it does not
	// know — the connection failed after the database may have committed
	// the claim — before it uses those slots again, so that runs it may
	// have claimed without learning of them move again at once rather than
	// when their lease expires. It is not fenced on a run: every run of
	// those worker ids is released.
	ReleaseWorkflowRuns(ctx context.Context, workerIDs []string) (int, error)
	// ApplyWrites applies groups of fenced worker writes, normally all in
	// one transaction (group commit: the writes of many runs share one
	// commit), and returns one error per group.
	//
	// A group is the writes of one execution pass that must land together:
	// every write of a group names the same run and worker, and a
	// transition of the run (complete, park, reschedule, fail) may only be
	// a group's last write ([ValidateGroup]). A group applies as a whole,
	// in order, or not at all, whatever fails: its error is nil when every
	// write applied; an error wrapping [ErrNotOwner] when the fence refused
	// it (the run is no longer running under that worker); an error
	// wrapping [ErrInvalidArgument] when a write is malformed or holds a
	// value the store refuses ([ValidateJSON]), naming the write; or
	// another error (a lost connection: the outcome is then unknown, and
	// the caller must assume nothing applied). One group's failure never
	// prevents another's writes. Each write has exactly the effect (and
	// the notifications) of the transition it names ([WriteKind]). When
	// ctx ends before the commit, every group reports ctx's error and none
	// applied.
	ApplyWrites(ctx context.Context, groups [][]Write) []error
	// GetSignalDelivery returns the data delivered to a signal-wait
	// attempt. delivered is false when nothing was delivered; data is
	// JSON null (not nil) when null was sent.
	GetSignalDelivery(ctx context.Context, stepAttemptID string) (data json.RawMessage, delivered bool, err error)
	// ReceiveRunSignal returns the data delivered to the signal-wait
	// attempt p.StepAttemptID, as GetSignalDelivery, but first, when
	// nothing was delivered to it, delivers the oldest signal sent to the
	// run with [Client.SignalRun] for p.Signal that no wait has received
	// (recording that this attempt received it, so that a replay reads the
	// same one). It is fenced as the other writes of a worker.
	ReceiveRunSignal(ctx context.Context, p ReceiveRunSignalParams) (data json.RawMessage, delivered bool, err error)
}

// CreateWorkflowRunParams are the inputs of [Client.CreateWorkflowRun].
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
	// Priority orders the claims of pending runs, higher first; 0 (the
	// default) is the priority of every run of the TypeScript SDK. At most
	// [MaxPriority] in absolute value.
	Priority int
	// ConcurrencyKey is the key the per-key limits of the run's workflow
	// count it under ([Limits]); nil or "" for none (such runs share one
	// key). Valid text of at most [MaxConcurrencyKeyLength] bytes. Stored
	// whether or not the workflow has limits.
	ConcurrencyKey *string
	// SearchAttributes are stored with the run, in the transaction that
	// inserts it ([SearchAttributes]; nil values are ignored). A run the
	// idempotency key reuses keeps its own. A bad name or value fails the
	// create with [ErrInvalidSearchAttribute]; a value of another type
	// than the namespace's for its name fails it too, nothing inserted.
	SearchAttributes SearchAttributes
	// Singleton, when set, admits the run only as its key's mode says
	// ([Singleton]): skip, queue behind the key's active run, or cancel
	// it. Nil: no singleton. With an IdempotencyKey, the idempotency key
	// is looked up first (a reused run is returned as it is).
	Singleton *Singleton
	// Fairness, when set, puts the run under fair shares between keys
	// ([Fairness]): it waits in the fair queue, out of the TypeScript
	// SDK's claim, and claims take turns between keys. Nil: none (the run
	// is FIFO among the runs without fairness, at the current virtual
	// time). Ignored for a workflow with stored limits, whose admission
	// orders its runs.
	Fairness *Fairness
	// Claim, when set, leases the new run to a worker in the create's own
	// transaction, as a claim would (status running, attempts 1, worker id
	// Claim.WorkerID, lease Claim.LeaseDuration from now), so that a worker
	// in the starting process runs it without a wake-up and a claim: one
	// commit and two round trips less per run. A run of a workflow with
	// stored limits is not claimed (it waits for admission as without
	// Claim): the returned run's Status says which. It is announced only
	// when it was not claimed. Nil: an ordinary pending run. Only for a run
	// that starts now: with an IdempotencyKey, a Singleton, Fairness, an AvailableAt,
	// a DeadlineAt, SearchAttributes or a parent, the create fails with
	// [ErrInvalidArgument].
	Claim *CreateClaim
}

// CreateClaim is the lease a create gives its run when a worker of the
// starting process takes it at once ([CreateWorkflowRunParams.Claim]).
type CreateClaim struct {
	// WorkerID is the slot's worker id, as in [ClaimWorkflowRunsParams.WorkerIDs]; required.
	WorkerID string
	// LeaseDuration is the lease from the create's commit; at least a millisecond.
	LeaseDuration time.Duration
}

// MaxPriority is the largest priority in absolute value
// ([CreateWorkflowRunParams.Priority]); priorities are stored as 32-bit
// integers.
const MaxPriority = 1<<31 - 1

// ListWorkflowRunsParams filter and paginate [Client.ListWorkflowRuns].
type ListWorkflowRunsParams struct {
	// Status filters by status (legacy statuses included with their
	// current names); empty means any.
	Status RunStatus
	// WorkflowName filters by workflow name; empty means any.
	WorkflowName string
	// CreatedAfter and CreatedBefore, when set, keep runs created at or
	// after, and before, those times.
	CreatedAfter, CreatedBefore *time.Time
	// Query, when set, keeps the runs it matches (package runquery,
	// docs/queries.md), in addition to the filters above; nil keeps every
	// run. The order and the cursors stay those of an unfiltered list
	// (created_at DESC, id DESC), so a query's pages are read and resumed
	// like any other. A search attribute the namespace never declared, or
	// a value of another type than its declared one, fails the call with
	// an error wrapping [ErrInvalidArgument] and a *runquery.Error naming
	// the position.
	Query *runquery.Query
	// Limit is the page size; 0 means [DefaultPageSize].
	Limit int
	// After and Before are cursors from a previous page; at most one may be
	// set, else the call fails with [ErrInvalidArgument].
	After, Before string
	// OmitPayloads leaves out Input and Output: the backend reads NULL in
	// their place, so a page of large runs costs the memory of its small
	// fields only. Error, Config and Context are still read.
	OmitPayloads bool
	// MaxBytes, when positive, bounds the page by the JSON bytes its runs
	// hold ([WorkflowRun.PayloadBytes]): the page ends before the run that
	// would take the sum beyond MaxBytes, as though Limit had been
	// reached there — Next (Prev, reading backwards with Before) leads on
	// from it, so no run is lost or repeated. A page holds at least one
	// run, whatever its size. 0: no bound but Limit.
	MaxBytes int
}

// RetryWorkflowRunParams are the inputs of [Client.RetryWorkflowRun].
type RetryWorkflowRunParams struct {
	// WorkflowRunID is the failed run.
	WorkflowRunID string
	// DeadlineAt is the run's new deadline; nil means none.
	DeadlineAt *time.Time
}

// ListStepAttemptsParams paginate [Client.ListStepAttempts].
type ListStepAttemptsParams struct {
	// WorkflowRunID is the run whose attempts are listed.
	WorkflowRunID string
	// Limit is the page size; 0 means [DefaultPageSize].
	Limit int
	// After and Before are cursors from a previous page; at most one.
	After, Before string
	// OmitPayloads leaves out Output, read as NULL (as
	// [ListWorkflowRunsParams.OmitPayloads]).
	OmitPayloads bool
	// MaxBytes, when positive, bounds the page by the JSON bytes of its
	// attempts ([StepAttempt.PayloadBytes]), as
	// [ListWorkflowRunsParams.MaxBytes] does runs'.
	MaxBytes int
}

// DefaultPageSize is the page size of list calls when Limit is 0.
const DefaultPageSize = 100

// ClaimWorkflowRunsParams are the inputs of [Worker.ClaimWorkflowRuns].
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
	// Admit names the workflows whose runs waiting for admission this
	// claim may admit, within their stored limits ([LimitStore]): the
	// limited workflows the worker registered. Claims that admit a
	// workflow serialize with one another (PostgreSQL: an advisory lock
	// per workflow; SQLite: BEGIN IMMEDIATE), so no number of workers
	// exceeds its limits. Nil admits nothing: waiting runs are invisible
	// to the claim.
	Admit []string
	// Caps bound the runs of some workflows this claim takes, waiting or
	// not (a worker's per-worker limit less what it executes); a workflow
	// without a cap is bounded only by the worker ids. Nil: no caps.
	Caps []WorkflowCap
}

// WorkflowKey identifies a workflow implementation: name and version (nil
// for unversioned).
type WorkflowKey struct {
	// Name and Version are the workflow's; Version nil is unversioned.
	Name    string
	Version *string
}

// ExtendWorkflowRunLeaseParams are the inputs of [Worker.ExtendWorkflowRunLease].
type ExtendWorkflowRunLeaseParams struct {
	// WorkflowRunID and WorkerID name the run and its owner (the fence).
	WorkflowRunID string
	WorkerID      string
	// LeaseDuration is the new lease, from now.
	LeaseDuration time.Duration
}

// SendSignalParams are the inputs of [Client.SendSignal].
type SendSignalParams struct {
	// Signal is the name waits are addressed by.
	Signal string
	// Data is the JSON payload; nil is stored as NULL and read back as JSON
	// null.
	Data json.RawMessage
	// IdempotencyKey dedupes repeated sends of the same signal name.
	IdempotencyKey *string
}

// SignalRunParams are the inputs of [Client.SignalRun].
type SignalRunParams struct {
	// WorkflowRunID is the run the signal is for.
	WorkflowRunID string
	// Signal is the name the run's wait is addressed by
	// (openworkflow.WaitForSignal).
	Signal string
	// Data is the JSON payload; nil is delivered as JSON null.
	Data json.RawMessage
	// IdempotencyKey, when set, dedupes repeated sends of the same signal
	// to the same run, forever (not for IdempotencyPeriod only).
	IdempotencyKey *string
}

// RunSignal is a signal sent with [Client.SignalRun].
type RunSignal struct {
	// ID identifies the signal ("sig_…").
	ID string
	// Delivered is true when a wait of the run had received it by the end
	// of the send (the run was waiting for it); false when it is stored
	// until the run waits for it.
	Delivered bool
	// Duplicate is true when the send repeated an earlier one with the
	// same idempotency key: nothing was stored, and ID is the earlier
	// signal's.
	Duplicate bool
}

// ReceiveRunSignalParams are the inputs of [Worker.ReceiveRunSignal].
type ReceiveRunSignalParams struct {
	// WorkflowRunID is the run whose wait receives.
	WorkflowRunID string
	// WorkerID fences the write: the run must be running under it.
	WorkerID string
	// StepAttemptID is the running signal-wait attempt that receives.
	StepAttemptID string
	// Signal is the name the attempt waits for.
	Signal string
}

// EventKind says what an [Event] announces.
type EventKind string

// Event kinds.
const (
	// EventWorkAvailable: a run became claimable (created, woken, or
	// rescheduled for now). Idle workers should poll.
	EventWorkAvailable EventKind = "work"
	// EventResync: events may have been lost (the backend's notification
	// connection broke and was made again, as across a PostgreSQL
	// failover), so a subscriber waiting for one should read again what
	// it waits for rather than wait for its fallback poll. PostgreSQL
	// publishes it, with an [EventWorkAvailable] without run id, each time
	// its listener LISTENs again after losing its connection.
	EventResync EventKind = "resync"
	// EventRunFinished: the run WorkflowRunID reached a terminal status.
	EventRunFinished EventKind = "finished"
	// EventChunk: stream Stream of run WorkflowRunID got chunk Seq (see
	// StreamStore).
	EventChunk EventKind = "chunk"
	// EventScheduleChanged: a schedule was created, changed or resumed
	// (see ScheduleStore), so a tick may come sooner than the workers
	// waiting for the earliest one they knew of expect.
	EventScheduleChanged EventKind = "schedule"
	// EventUpdateSettled: update UpdateID of run WorkflowRunID was
	// rejected, completed or failed (see UpdateStore).
	EventUpdateSettled EventKind = "update"
	// EventRunPaused: run WorkflowRunID, leased to worker (slot) WorkerID,
	// was paused ([RunPauser.PauseWorkflowRun]) while that worker executes
	// it, so that the worker starts no further step at once rather than at
	// its next heartbeat. A hint, as every event: the run may have been
	// resumed since; only the heartbeat's [ErrRunPaused] is proof. A
	// pause of a run no worker holds is not announced.
	EventRunPaused EventKind = "paused"
)

// Event is a wake-up hint published by a backend to its subscribers.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// WorkflowRunID is the run concerned (empty for some work events).
	WorkflowRunID string
	// WorkerID is the worker (slot) id holding the run, for an
	// EventRunPaused; empty for the other kinds.
	WorkerID string
	// Stream and Seq name the chunk of an EventChunk.
	Stream string
	Seq    int64
	// UpdateID names the update of an EventUpdateSettled.
	UpdateID string
	// Finished is how the run of an EventRunFinished ended, when the
	// event was published by the backend that committed the run's
	// completion or failure (ApplyWrites of SQLite and PostgreSQL, right
	// after the commit): a subscriber of that backend, such as the
	// SDK's RunHandle.Result in the worker's process, then has the result
	// without reading the run again. nil for events received from another
	// process (PostgreSQL NOTIFY) and for runs that ended otherwise
	// (canceled, failed by a deadline sweep, continued as new: a
	// continuation must publish nil, so that Result reads the run and
	// follows the chain). Subscribers share it and
	// must not modify it.
	Finished *FinishedRun
}

// FinishedRun is the end of a run carried by an [Event]: its terminal
// status and, as stored, its output (completed) or error (failed).
type FinishedRun struct {
	Status RunStatus
	Output json.RawMessage
	Error  json.RawMessage
}
