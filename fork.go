package openworkflow

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// ForkRun starts a new run of the workflow of run runID, with the same
// input, that reuses the results runID recorded for its steps before the
// step fromStep (as DBOS's fork does): a worker replays those steps from
// their recorded results — their functions are not called again — and
// executes fromStep and everything after it anew. Use it to re-run a run
// from a step after fixing what made it fail, or to repeat its last steps,
// without repeating the side effects of the first ones.
//
// fromStep is a durable key as the run's history shows it ("charge", or
// "charge:1" for a step name's second call; `ow runs get` lists them). The
// run may have any status and is left as it is. A fork from a step after a
// hook's creation is refused (the hook belongs to the forked run). Errors
// wrap backend.ErrRunNotFound for a missing run, and
// backend.ErrInvalidArgument for a step the run never recorded (naming the
// steps it has) or such a hook; a backend without the capability,
// backend.ErrNotSupported.
func (c *Client) ForkRun(ctx context.Context, runID, fromStep string) (*RunHandle, error) {
	f, ok := c.b.(backend.RunForker)
	if !ok {
		return nil, fmt.Errorf("fork run %s: %w: the backend cannot fork runs", runID, backend.ErrNotSupported)
	}
	ctx, span := c.tr.start(ctx, telemetry.SpanWorkflowRunCreate, trace.WithSpanKind(trace.SpanKindProducer))
	defer span.End()
	run, err := f.ForkWorkflowRun(ctx, backend.ForkWorkflowRunParams{WorkflowRunID: runID, FromStep: fromStep, Context: c.tr.inject(ctx)})
	if err != nil {
		recordError(span, err)
		return nil, err
	}
	span.SetAttributes(runAttributes(run)...)
	return &RunHandle{ID: run.ID, WorkflowName: run.WorkflowName, Run: run, c: c}, nil
}
