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
	NamespaceID    string          `json:"namespaceId"`
	ID             string          `json:"id"`
	WorkflowName   string          `json:"workflowName"`
	Version        *string         `json:"version"`
	Status         RunStatus       `json:"status"`
	IdempotencyKey *string         `json:"idempotencyKey"`
	Config         json.RawMessage `json:"config"`
	Context        json.RawMessage `json:"context"`
	Input          json.RawMessage `json:"input"`
	Output         json.RawMessage `json:"output"`
	// Error is the serialized error, {"name","message","stack"?,...}.
	Error json.RawMessage `json:"error"`
	// Attempts counts the claims of this run (every claim adds one), as in
	// OpenWorkflow.
	Attempts                     int        `json:"attempts"`
	ParentStepAttemptNamespaceID *string    `json:"parentStepAttemptNamespaceId"`
	ParentStepAttemptID          *string    `json:"parentStepAttemptId"`
	WorkerID                     *string    `json:"workerId"`
	AvailableAt                  *time.Time `json:"availableAt"`
	DeadlineAt                   *time.Time `json:"deadlineAt"`
	StartedAt                    *time.Time `json:"startedAt"`
	FinishedAt                   *time.Time `json:"finishedAt"`
	CreatedAt                    time.Time  `json:"createdAt"`
	UpdatedAt                    time.Time  `json:"updatedAt"`
}

// StepAttempt is one row of step_attempts: one execution attempt of one
// durable step of a run.
type StepAttempt struct {
	NamespaceID   string          `json:"namespaceId"`
	ID            string          `json:"id"`
	WorkflowRunID string          `json:"workflowRunId"`
	StepName      string          `json:"stepName"`
	Kind          StepKind        `json:"kind"`
	Status        StepStatus      `json:"status"`
	Config        json.RawMessage `json:"config"`
	// Context is kind-specific JSON: {"kind":"sleep","resumeAt"},
	// {"kind":"workflow","timeoutAt"} or {"kind":"signal-wait","signal","timeoutAt"};
	// nil for other kinds.
	Context                     json.RawMessage `json:"context"`
	Output                      json.RawMessage `json:"output"`
	Error                       json.RawMessage `json:"error"`
	ChildWorkflowRunNamespaceID *string         `json:"childWorkflowRunNamespaceId"`
	ChildWorkflowRunID          *string         `json:"childWorkflowRunId"`
	StartedAt                   *time.Time      `json:"startedAt"`
	FinishedAt                  *time.Time      `json:"finishedAt"`
	CreatedAt                   time.Time       `json:"createdAt"`
	UpdatedAt                   time.Time       `json:"updatedAt"`
}

// RunCounts holds the number of runs per status in a namespace. Legacy
// statuses are folded in (sleeping into Running, succeeded into Completed).
type RunCounts struct {
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
	Data []T     `json:"data"`
	Next *string `json:"next"`
	Prev *string `json:"prev"`
}
