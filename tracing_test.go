package openworkflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

func spanAttr(s sdktrace.ReadOnlySpan, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func TestTracesUseOpenWorkflowsSpanNamesAndLinkExecutionsToTheirCreation(t *testing.T) {
	e := newEnv(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	e.client = ow.NewClient(e.b, ow.WithTracerProvider(tp))
	e.worker = ow.NewWorker(e.b, ow.WorkerOptions{Now: e.clock.Now, TracerProvider: tp})
	wf := ow.Define(ow.Spec{Name: "traced", Version: "v1"}, func(ctx ow.Context, in int) (int, error) {
		v, err := ow.Run(ctx, "ok", func(context.Context) (int, error) { return in + 1, nil })
		if err != nil {
			return 0, err
		}
		_, err = ow.Run(ctx, "bad", func(context.Context) (int, error) { return 0, ow.NonRetryable(errors.New("nope")) })
		return v, err
	})
	e.register(wf)
	id := start(e, wf, 1)
	e.drain()

	stored := e.run(id).Context
	var carrier struct {
		TraceContext map[string]string `json:"traceContext"`
	}
	if err := json.Unmarshal(stored, &carrier); err != nil || carrier.TraceContext["traceparent"] == "" {
		t.Fatalf("run context %s: want the creating span's traceparent, as OpenWorkflow stores it", stored)
	}

	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = append(byName[s.Name()], s)
	}
	create, exec, steps := byName[telemetry.SpanWorkflowRunCreate], byName[telemetry.SpanWorkflowRunExecute], byName[telemetry.SpanStepAttemptExecute]
	if len(create) != 1 || len(exec) != 1 || len(steps) != 2 {
		t.Fatalf("spans %v: want 1 create, 1 execute, 2 step spans", byName)
	}
	if create[0].SpanKind() != trace.SpanKindProducer || exec[0].SpanKind() != trace.SpanKindConsumer {
		t.Fatalf("span kinds: create %v, execute %v", create[0].SpanKind(), exec[0].SpanKind())
	}
	if exec[0].Parent().IsValid() {
		t.Fatal("an execution must start its own trace")
	}
	if links := exec[0].Links(); len(links) != 1 || links[0].SpanContext.SpanID() != create[0].SpanContext().SpanID() {
		t.Fatalf("execution links %v: want the creation span", links)
	}
	for k, want := range map[attribute.Key]string{
		telemetry.AttrRunID: id, telemetry.AttrWorkflowName: "traced", telemetry.AttrWorkflowVersion: "v1", telemetry.AttrExecutionOutcome: telemetry.OutcomeFailed,
	} {
		if v, ok := spanAttr(exec[0], k); !ok || v.AsString() != want {
			t.Fatalf("execute span %s = %v, want %q", k, v.Emit(), want)
		}
	}
	for _, s := range steps {
		if s.Parent().SpanID() != exec[0].SpanContext().SpanID() {
			t.Fatalf("step span %v is not a child of the execution span", s.Attributes())
		}
		name, _ := spanAttr(s, telemetry.AttrStepName)
		errType, failed := spanAttr(s, telemetry.AttrErrorType)
		if (name.AsString() == "bad") != failed {
			t.Fatalf("step %s: error.type %v, want it exactly on the failing step", name.AsString(), errType.Emit())
		}
	}
}

func TestTracingIsOffUnlessConfigured(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "untraced"}, func(ctx ow.Context, in int) (int, error) { return in, nil })
	e.register(wf)
	id := start(e, wf, 1)
	e.drain()
	if c := e.run(id).Context; len(c) != 0 {
		t.Fatalf("run context %s stored without a tracer", c)
	}
}
