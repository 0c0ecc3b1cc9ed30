package backend

import (
	"encoding/json"
	"time"
)

// DefaultNamespaceID is the namespace a backend uses when none is configured,
// as in OpenWorkflow ("default").
const DefaultNamespaceID = "default"

// IdempotencyPeriod is how long an idempotency key given to
// [Backend.CreateWorkflowRun] dedupes: 24 hours from the first run's
// created_at, as in OpenWorkflow.
const IdempotencyPeriod = 24 * time.Hour

// RunStatus is the status of a workflow run, stored as text in
// workflow_runs.status.
type RunStatus string

// Run statuses. A run is created pending, claimed into running, and ends in
// one of the three terminal statuses. A parked run (durable sleep, child or
// signal wait) is running with a NULL worker_id until its available_at.
const (
	RunPending   RunStatus = "pending"
	RunRunning   RunStatus = "running"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunCanceled  RunStatus = "canceled"

	// RunSleeping is a legacy status written by OpenWorkflow before 0.8.0;
	// it is read as RunRunning and never written.
	RunSleeping RunStatus = "sleeping"
	// RunSucceeded is a legacy status written by OpenWorkflow before 0.8.0;
	// it is read as RunCompleted and never written.
	RunSucceeded RunStatus = "succeeded"
)

// Normalize maps the legacy statuses to the current ones (sleeping→running,
// succeeded→completed) and returns any other status unchanged.
func (s RunStatus) Normalize() RunStatus {
	switch s {
	case RunSleeping:
		return RunRunning
	case RunSucceeded:
		return RunCompleted
	}
	return s
}

// Terminal reports whether no further transition can happen: completed,
// failed or canceled (legacy succeeded included).
func (s RunStatus) Terminal() bool {
	switch s.Normalize() {
	case RunCompleted, RunFailed, RunCanceled:
		return true
	}
	return false
}

// StepKind is the kind of a step attempt, stored in step_attempts.kind.
type StepKind string

// Step kinds, as in OpenWorkflow.
const (
	StepFunction   StepKind = "function"
	StepSleep      StepKind = "sleep"
	StepWorkflow   StepKind = "workflow"
	StepSignalSend StepKind = "signal-send"
	StepSignalWait StepKind = "signal-wait"
	// StepRetry is this SDK's own kind: the mark a manual retry of a failed
	// run leaves in its history (see Client.RetryWorkflowRun).
	StepRetry StepKind = "retry"
)

// StepStatus is the status of a step attempt.
type StepStatus string

// Step attempt statuses. StepSucceeded is legacy and read as StepCompleted.
const (
	StepRunning   StepStatus = "running"
	StepCompleted StepStatus = "completed"
	StepFailed    StepStatus = "failed"
	StepSucceeded StepStatus = "succeeded"
)

// Normalize maps the legacy "succeeded" to "completed".
func (s StepStatus) Normalize() StepStatus {
	if s == StepSucceeded {
		return StepCompleted
	}
	return s
}

// WorkflowRun is one row of workflow_runs. JSON columns are raw JSON; a nil
// RawMessage is SQL NULL. Times are UTC with millisecond precision.
type WorkflowRun struct {
	// NamespaceID is the namespace the run belongs to.
	NamespaceID string `json:"namespaceId"`
	// ID is the run id: "wrun_" + ULID when written by this SDK, a UUID
	// when written by the TypeScript one.
	ID string `json:"id"`
	// WorkflowName is the name runs are routed by.
	WorkflowName string `json:"workflowName"`
	// Version is the workflow version; nil when unversioned.
	Version *string `json:"version"`
	// Status is the run's status (legacy values read as current ones).
	Status RunStatus `json:"status"`
	// IdempotencyKey is the key the run was started with, if any.
	IdempotencyKey *string `json:"idempotencyKey"`
	// Config is reserved JSON, always {} from this SDK.
	Config json.RawMessage `json:"config"`
	// Context is reserved JSON, NULL from this SDK.
	Context json.RawMessage `json:"context"`
	// Input is the run's JSON input (nil: NULL).
	Input json.RawMessage `json:"input"`
	// Output is the JSON output of a completed run.
	Output json.RawMessage `json:"output"`
	// Error is the serialized error, {"name","message","stack"?,...}.
	Error json.RawMessage `json:"error"`
	// Attempts counts the claims of this run (every claim adds one), as in
	// OpenWorkflow.
	Attempts int `json:"attempts"`
	// ParentStepAttemptNamespaceID and ParentStepAttemptID link a child run
	// to the workflow step of its parent that started it; nil for a
	// top-level run.
	ParentStepAttemptNamespaceID *string `json:"parentStepAttemptNamespaceId"`
	ParentStepAttemptID          *string `json:"parentStepAttemptId"`
	// WorkerID is the worker (slot) holding the run's lease; nil while
	// pending or parked. It is kept on completion.
	WorkerID *string `json:"workerId"`
	// AvailableAt is when the run may next be claimed: the start time of a
	// pending run, the lease expiry of an executing one, the wake-up of a
	// parked one; nil once terminal.
	AvailableAt *time.Time `json:"availableAt"`
	// DeadlineAt is when the run fails if not finished; nil: no deadline.
	DeadlineAt *time.Time `json:"deadlineAt"`
	// StartedAt is the first claim's time; FinishedAt the terminal
	// transition's.
	StartedAt  *time.Time `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
	// CreatedAt and UpdatedAt are the row's creation and last change.
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Priority orders the claims of pending runs: higher first (this SDK's
	// column go_priority; 0 for every run of the TypeScript SDK).
	Priority int `json:"priority"`
	// ConcurrencyKey is the key the run was started with, which the
	// per-key limits of its workflow count by; nil when none was given.
	ConcurrencyKey *string `json:"concurrencyKey"`
	// QueuedAt is set while the run waits for admission (its workflow has
	// limits, see [Limits]): the time it may be admitted from. Its
	// AvailableAt is nil meanwhile, so that no claim but an admitting one
	// takes it.
	QueuedAt *time.Time `json:"queuedAt"`
	// AdmittedAt is when a claim admitted the run (nil for a run of a
	// workflow without limits). Admitted and not finished, it holds a slot
	// of its workflow's limits.
	AdmittedAt *time.Time `json:"admittedAt"`
	// PausedAt is when the run was paused ([RunPauser.PauseWorkflowRun]);
	// nil when it is not. A paused run keeps its status and has
	// AvailableAt nil, so that no claim takes it (its due time is kept
	// aside until it is resumed). It means "paused" only while the run is
	// not terminal: see [WorkflowRun.Paused].
	PausedAt *time.Time `json:"pausedAt"`
	// PauseReason is the reason the pause gave; nil when none was given
	// or the run is not paused.
	PauseReason *string `json:"pauseReason"`
	// Reused is set on the run a create returned because its idempotency
	// key matched a run created within [IdempotencyPeriod]: that run, as
	// stored, and nothing was created (the create's input, version and
	// options were dropped). It is not stored; a read never sets it.
	Reused bool `json:"-"`
	// SingletonSkipped is set on the run a create returned instead of
	// creating one because its [Singleton] in mode skip found this active
	// run of its key. It is not stored; a read never sets it.
	SingletonSkipped bool `json:"-"`
}

// StepAttempt is one row of step_attempts: one execution attempt of one
// durable step of a run.
type StepAttempt struct {
	// NamespaceID is the namespace of the attempt (and of its run).
	NamespaceID string `json:"namespaceId"`
	// ID is the attempt id: "step_" + ULID from this SDK.
	ID string `json:"id"`
	// WorkflowRunID is the run the attempt belongs to.
	WorkflowRunID string `json:"workflowRunId"`
	// StepName is the step's durable key ("fetch", "fetch:1", …).
	StepName string `json:"stepName"`
	// Kind is the step kind.
	Kind StepKind `json:"kind"`
	// Status is running, completed or failed.
	Status StepStatus `json:"status"`
	// Config is reserved JSON, always {} from this SDK.
	Config json.RawMessage `json:"config"`
	// Context is kind-specific JSON: {"kind":"sleep","resumeAt"},
	// {"kind":"workflow","timeoutAt"} or {"kind":"signal-wait","signal","timeoutAt"};
	// nil for other kinds.
	Context json.RawMessage `json:"context"`
	// Output is the JSON result of a completed attempt.
	Output json.RawMessage `json:"output"`
	// Error is the serialized error of a failed attempt.
	Error json.RawMessage `json:"error"`
	// ChildWorkflowRunNamespaceID and ChildWorkflowRunID link a
	// workflow-kind attempt to the child run it started.
	ChildWorkflowRunNamespaceID *string `json:"childWorkflowRunNamespaceId"`
	ChildWorkflowRunID          *string `json:"childWorkflowRunId"`
	// StartedAt and FinishedAt bound the attempt's execution.
	StartedAt  *time.Time `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
	// CreatedAt and UpdatedAt are the row's creation and last change.
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// RunCounts holds the number of runs per status in a namespace. Legacy
// statuses are folded in (sleeping into Running, succeeded into Completed).
type RunCounts struct {
	// Pending, Running, Completed, Failed and Canceled are the number of
	// runs in each status (parked runs count as running).
	Pending   int `json:"pending"`
	Running   int `json:"running"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Canceled  int `json:"canceled"`
}

// Add adds n runs of status s to the counts, folding legacy statuses.
// Unknown statuses are ignored.
func (c *RunCounts) Add(s RunStatus, n int) {
	switch s.Normalize() {
	case RunPending:
		c.Pending += n
	case RunRunning:
		c.Running += n
	case RunCompleted:
		c.Completed += n
	case RunFailed:
		c.Failed += n
	case RunCanceled:
		c.Canceled += n
	}
}

// Page is one page of a cursor-paginated list. Next is the cursor to pass as
// After for the following page, Prev the cursor to pass as Before for the
// preceding one; each is nil when there is no such page.
type Page[T any] struct {
	// Data holds the page's records.
	Data []T `json:"data"`
	// Next and Prev are the cursors described above.
	Next *string `json:"next"`
	Prev *string `json:"prev"`
}
