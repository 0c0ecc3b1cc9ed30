package openworkflow

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// DefaultWaitTimeout is how long a child-workflow wait or a signal wait
// lasts when no timeout is given: one year, as in OpenWorkflow.
const DefaultWaitTimeout = 365 * 24 * time.Hour

// WaitOption configures a child-workflow or signal wait: [WithStepName],
// [WithTimeout].
type WaitOption func(*waitOptions)

type waitOptions struct {
	name     string
	timeout  time.Duration
	lookback time.Duration // WaitForEvent's WithLookback
}

// WithStepName names the wait's step (its durable key); without it, the
// step is named after the child workflow (RunWorkflow, GoWorkflow) or the
// signal (WaitForSignal).
func WithStepName(name string) WaitOption {
	return func(o *waitOptions) { o.name = name }
}

// WithTimeout bounds the wait; without it (or with d <= 0) the wait lasts
// [DefaultWaitTimeout]. On timeout a child wait fails (the child keeps
// running) and a signal wait returns received=false.
func WithTimeout(d time.Duration) WaitOption {
	return func(o *waitOptions) { o.timeout = d }
}

func newWaitOptions(opts []WaitOption) waitOptions {
	var o waitOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// RunWorkflow starts wf as a child run of this workflow and waits for its
// output. The child is started once (its creation is deduplicated by the
// idempotency key "__workflow:<namespace>:<step attempt id>" if the parent
// crashes in between) and linked to the parent; while it runs, the parent
// parks ([ErrSuspended]) and is woken when the child finishes.
//
// A failed or canceled child fails this step without retry, returning a
// *[StepError] whose Err is the child's stored *[Error]. When the timeout
// passes first the step fails with "Timed out waiting for child workflow to
// complete" and the child keeps running. wf may be made with [Declare] when
// the child is implemented elsewhere.
func RunWorkflow[I, O any](ctx Context, wf *Workflow[I, O], input I, opts ...WaitOption) (O, error) {
	var zero O
	x, err := execOf(ctx)
	if err != nil {
		return zero, err
	}
	o := newWaitOptions(opts)
	name := o.name
	if name == "" {
		name = wf.spec.Name
	}
	key := x.hist.Resolve(name)
	return runChild[O](x, key, wf.spec, input, o.timeout, false)
}

// GoWorkflow is [RunWorkflow] started concurrently: the durable key is
// assigned at the call site and the child is started at once; Get waits
// (returning [ErrSuspended] while the child still runs).
func GoWorkflow[I, O any](ctx Context, wf *Workflow[I, O], input I, opts ...WaitOption) *Future[O] {
	f := &Future[O]{done: make(chan struct{})}
	x, err := execOf(ctx)
	if err != nil {
		f.err = err
		close(f.done)
		return f
	}
	o := newWaitOptions(opts)
	name := o.name
	if name == "" {
		name = wf.spec.Name
	}
	key := x.hist.Resolve(name)
	goBranch(x, f, func(admitted bool) (O, error) { return runChild[O](x, key, wf.spec, input, o.timeout, admitted) })
	return f
}

func runChild[O any](x *pass, key string, spec Spec, input any, timeout time.Duration, admitted bool) (O, error) {
	var zero O
	if a, ok := x.hist.Completed(key); ok {
		return decodeOutput[O](key, a.Output)
	}
	if a, ok := x.hist.LastFailed(key); ok && a.ChildWorkflowRunID != nil {
		if _, running := x.hist.Running(key); !running {
			return zero, &StepError{StepName: key, Err: decodeError(a.Error)}
		}
	}
	a, ok := x.hist.Running(key)
	if !ok {
		if timeout <= 0 {
			timeout = DefaultWaitTimeout
		}
		timeoutAt := backend.FormatTime(x.now().Add(timeout))
		var err error
		if a, err = x.createAttempt(key, backend.StepWorkflow, waitContext{Kind: "workflow", TimeoutAt: &timeoutAt}, admitted); err != nil {
			return zero, err
		}
	}
	if a.ChildWorkflowRunID == nil {
		// A new attempt, or one whose worker crashed between creating it and
		// linking the child: the idempotency key finds that child again.
		if err := x.gate(true); err != nil {
			return zero, err
		}
		in, err := encodeValue(input)
		if err != nil {
			return zero, NonRetryable(fmt.Errorf("input of child workflow %s: %w", spec, err))
		}
		ns := x.b.NamespaceID()
		idem := fmt.Sprintf("__workflow:%s:%s", ns, a.ID)
		cctx, span := x.tr.start(x.ctx, telemetry.SpanWorkflowRunCreate, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
			telemetry.AttrWorkflowName.String(spec.Name), telemetry.AttrParentRunID.String(x.run.ID), telemetry.AttrStepName.String(a.StepName)))
		child, err := x.b.CreateWorkflowRun(cctx, backend.CreateWorkflowRunParams{
			WorkflowName: spec.Name, Version: versionPtr(spec.Version), IdempotencyKey: &idem, Context: x.tr.inject(cctx),
			Input: in, ParentStepAttemptNamespaceID: &ns, ParentStepAttemptID: &a.ID,
		})
		if err == nil {
			span.SetAttributes(telemetry.AttrChildRunID.String(child.ID), telemetry.AttrRunID.String(child.ID))
		}
		recordError(span, err)
		span.End()
		if err != nil {
			return zero, x.backendErr(fmt.Sprintf("start child workflow %s", spec), err)
		}
		linked := *a
		linked.ChildWorkflowRunNamespaceID, linked.ChildWorkflowRunID = &ns, &child.ID
		if err := x.write(backend.Write{Kind: backend.WriteLinkChild, WorkflowRunID: x.run.ID, WorkerID: x.workerID, Step: &linked}); err != nil {
			return zero, fmt.Errorf("link child run %s: %w", child.ID, err)
		}
		x.hist.Record(&linked)
		a = &linked
	}
	return resolveChild[O](x, a)
}

// resolveChild settles a running workflow-kind attempt from its child's
// state, or parks until the child finishes or the wait times out.
func resolveChild[O any](x *pass, a *backend.StepAttempt) (O, error) {
	var zero O
	timeoutAt, hasTimeout := waitTime(a)
	child, err := x.b.GetWorkflowRun(x.ctx, *a.ChildWorkflowRunID)
	if err != nil {
		return zero, x.backendErr(fmt.Sprintf("read child run %s", *a.ChildWorkflowRunID), err)
	}
	// A child that continued as new is followed to its chain's last run.
	// The continuation relinks this attempt to the successor
	// (RunContinuer), so this matters only if the child continued before
	// the attempt was linked to it.
	for next, ok := backend.ContinuedTo(child.Context); ok && child.Status.Normalize() == backend.RunCompleted; next, ok = backend.ContinuedTo(child.Context) {
		if child, err = x.b.GetWorkflowRun(x.ctx, next); err != nil {
			return zero, x.backendErr(fmt.Sprintf("read run %s, successor of child run %s", next, *a.ChildWorkflowRunID), err)
		}
	}
	now := x.now()
	finishedInTime := child.Status.Terminal() && (!hasTimeout || child.FinishedAt == nil || child.FinishedAt.Before(timeoutAt))
	if hasTimeout && !now.Before(timeoutAt) && !finishedInTime {
		cause := &Error{Name: "Error", Message: "Timed out waiting for child workflow to complete"}
		x.failAttempt(a, cause)
		return zero, &StepError{StepName: a.StepName, Err: cause}
	}
	switch child.Status.Normalize() {
	case backend.RunCompleted:
		x.completeAttempt(a, child.Output)
		return decodeOutput[O](a.StepName, child.Output)
	case backend.RunFailed:
		cause := decodeError(child.Error)
		x.failAttempt(a, cause)
		return zero, &StepError{StepName: a.StepName, Err: cause}
	case backend.RunCanceled:
		cause := &Error{Name: "Error", Message: fmt.Sprintf("Workflow step %q failed because child workflow run %q was canceled", a.StepName, child.ID)}
		x.failAttempt(a, cause)
		return zero, &StepError{StepName: a.StepName, Err: cause}
	}
	if !hasTimeout {
		timeoutAt = now.Add(DefaultWaitTimeout)
	}
	return zero, x.suspend(timeoutAt)
}
