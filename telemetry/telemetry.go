// Package telemetry names the OpenTelemetry spans and attributes the SDK
// records (when a TracerProvider is given in the worker's or the client's
// options): the names and keys of OpenWorkflow 0.10's telemetry.ts, so
// traces from the Go and TypeScript SDKs line up. Use them to find the
// SDK's spans in a trace, or to filter them.
//
// It also defines [Metrics], the hook through which a worker and the HTTP
// API report what they measure (claims, steps, passes, commits, requests)
// without depending on a metrics library; package metrics exports those
// measurements to Prometheus.
package telemetry

import "go.opentelemetry.io/otel/attribute"

// Span names, as in OpenWorkflow 0.10's telemetry.ts, so traces from the Go
// and TypeScript SDKs line up.
const (
	SpanWorkflowRunCreate  = "workflow_run.create"
	SpanWorkflowRunExecute = "workflow_run.execute"
	SpanWorkflowRunCancel  = "workflow_run.cancel"
	SpanStepAttemptExecute = "step_attempt.execute"
	SpanSignalSend         = "signal.send"
)

// Span attribute keys, as in OpenWorkflow 0.10.
const (
	AttrWorkflowName         = attribute.Key("openworkflow.workflow.name")
	AttrWorkflowVersion      = attribute.Key("openworkflow.workflow.version")
	AttrNamespaceID          = attribute.Key("openworkflow.namespace.id")
	AttrRunID                = attribute.Key("openworkflow.run.id")
	AttrParentRunID          = attribute.Key("openworkflow.parent.run.id")
	AttrChildRunID           = attribute.Key("openworkflow.child.run.id")
	AttrStepName             = attribute.Key("openworkflow.step.name")
	AttrStepKind             = attribute.Key("openworkflow.step.kind")
	AttrStepResumeAt         = attribute.Key("openworkflow.step.resume_at")
	AttrStepTimeoutAt        = attribute.Key("openworkflow.step.timeout_at")
	AttrExecutionAttempt     = attribute.Key("openworkflow.execution.attempt")
	AttrExecutionOutcome     = attribute.Key("openworkflow.execution.outcome")
	AttrSignalName           = attribute.Key("openworkflow.signal.name")
	AttrSignalRecipientCount = attribute.Key("openworkflow.signal.recipient_count")
	AttrErrorType            = attribute.Key("error.type")
)

// Values of [AttrExecutionOutcome]: how an execution pass ended.
const (
	OutcomeCompleted = "completed"
	OutcomeSuspended = "suspended"
	OutcomeRetrying  = "retrying"
	OutcomeFailed    = "failed"
	OutcomeStale     = "stale"
)
