package openworkflow

import (
	"context"
	"encoding/json"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/openworkflow-go/openworkflow/backend"
)

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

// traceContextKey is the key of the propagation carrier in a run's context
// column: {"traceContext": {"traceparent": "00-…"}}, as in OpenWorkflow.
const traceContextKey = "traceContext"

// tracing creates the SDK's spans; the zero value (no provider) records
// nothing.
type tracing struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

func newTracing(tp trace.TracerProvider) tracing {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tracing{tracer: tp.Tracer("openworkflow"), prop: propagation.TraceContext{}}
}

func (t tracing) start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t.tracer == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return t.tracer.Start(ctx, name, opts...)
}

// inject returns the run context JSON carrying ctx's trace, or nil when
// there is no span to propagate.
func (t tracing) inject(ctx context.Context) json.RawMessage {
	if t.prop == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	carrier := propagation.MapCarrier{}
	t.prop.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return nil
	}
	b, _ := json.Marshal(map[string]any{traceContextKey: carrier})
	return b
}

// origin returns the span context stored in a run's context column by
// whichever SDK created it (invalid when there is none).
func (t tracing) origin(runContext json.RawMessage) trace.SpanContext {
	if t.prop == nil || len(runContext) == 0 {
		return trace.SpanContext{}
	}
	var stored map[string]json.RawMessage
	if json.Unmarshal(runContext, &stored) != nil {
		return trace.SpanContext{}
	}
	carrier := propagation.MapCarrier{}
	if json.Unmarshal(stored[traceContextKey], (*map[string]string)(&carrier)) != nil {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(t.prop.Extract(context.Background(), carrier))
}

// runAttributes identifies a run on a span, as OpenWorkflow's
// workflowRunAttributes.
func runAttributes(r *backend.WorkflowRun) []attribute.KeyValue {
	kv := []attribute.KeyValue{AttrWorkflowName.String(r.WorkflowName), AttrRunID.String(r.ID), AttrNamespaceID.String(r.NamespaceID)}
	if r.Version != nil {
		kv = append(kv, AttrWorkflowVersion.String(*r.Version))
	}
	return kv
}

// recordError marks span failed with err, as OpenWorkflow's recordError.
func recordError(span trace.Span, err error) {
	if err == nil || errors.Is(err, ErrSuspended) || !span.IsRecording() {
		return
	}
	span.SetAttributes(AttrErrorType.String(errorName(err)))
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}
