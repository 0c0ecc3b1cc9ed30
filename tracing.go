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
	"github.com/openworkflow-go/openworkflow/telemetry"
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
	kv := []attribute.KeyValue{telemetry.AttrWorkflowName.String(r.WorkflowName), telemetry.AttrRunID.String(r.ID), telemetry.AttrNamespaceID.String(r.NamespaceID)}
	if r.Version != nil {
		kv = append(kv, telemetry.AttrWorkflowVersion.String(*r.Version))
	}
	return kv
}

// recordError marks span failed with err, as OpenWorkflow's recordError.
// err may come from user code: it is read under recover (describeFailure).
func recordError(span trace.Span, err error) {
	if err == nil || !span.IsRecording() {
		return
	}
	recordFailure(span, describeFailure(err))
}

// recordFailure marks span failed with f (nothing for a suspension).
func recordFailure(span trace.Span, f failure) {
	if f.class == failSuspended || !span.IsRecording() {
		return
	}
	span.SetAttributes(telemetry.AttrErrorType.String(f.name))
	span.RecordError(errors.New(f.message), trace.WithAttributes(attribute.String("exception.type", f.name)))
	span.SetStatus(codes.Error, f.message)
}
