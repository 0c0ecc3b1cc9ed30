package openworkflow

import "github.com/openworkflow-go/openworkflow/backend"

// The records and statuses of the storage layer that a [Client] returns
// (GetRun, ListSteps) and that [LookupStep] reports, re-exported from
// package backend as aliases, so that code built on the SDK — the dag
// package, a user's tools — can name them without importing it.
type (
	// WorkflowRun is a stored run (backend.WorkflowRun).
	WorkflowRun = backend.WorkflowRun
	// StepAttempt is a stored step attempt (backend.StepAttempt).
	StepAttempt = backend.StepAttempt
	// RunStatus is a run's stored status (backend.RunStatus).
	RunStatus = backend.RunStatus
	// StepStatus is a step attempt's status (backend.StepStatus).
	StepStatus = backend.StepStatus
	// ListStepAttemptsParams paginate [Client.ListSteps].
	ListStepAttemptsParams = backend.ListStepAttemptsParams
	// ListDefinitionsParams filter and paginate [Client.ListDefinitions].
	ListDefinitionsParams = backend.ListDefinitionsParams
)

// Run statuses, as stored (see backend.RunStatus).
const (
	RunPending   = backend.RunPending
	RunRunning   = backend.RunRunning
	RunCompleted = backend.RunCompleted
	RunFailed    = backend.RunFailed
	RunCanceled  = backend.RunCanceled
)

// Step attempt statuses, as stored (see backend.StepStatus).
const (
	StepRunning   = backend.StepRunning
	StepCompleted = backend.StepCompleted
	StepFailed    = backend.StepFailed
)

// ErrDefinitionNotFound: no stored definition has that kind and name in
// the client's namespace ([Client.GetDefinition]).
var ErrDefinitionNotFound = backend.ErrDefinitionNotFound
