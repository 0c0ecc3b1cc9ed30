package openworkflow

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/replay"
)

// execute runs one execution pass of a claimed run and makes its
// transition: complete, park, reschedule after a step failure, or fail.
// hist is the run's step history when the claim already read it (see
// Worker.readHistories), else nil.
func (w *Worker) execute(run *backend.WorkflowRun, hist *[]backend.StepAttempt) {
	workerID := *run.WorkerID
	def, ok := w.reg.lookup(run.WorkflowName, run.Version)
	if !ok {
		w.rescheduleUnregistered(run, workerID)
		return
	}
	ctx, cancel := context.WithCancelCause(w.hardCtx)
	defer cancel(nil)
	// Each pass starts its own trace, linked to the span that created the
	// run, as in OpenWorkflow.
	spanOpts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(append(runAttributes(run), AttrExecutionAttempt.Int(run.Attempts))...)}
	if origin := w.tr.origin(run.Context); origin.IsValid() {
		spanOpts = append(spanOpts, trace.WithLinks(trace.Link{SpanContext: origin}))
	}
	ctx, span := w.tr.start(ctx, SpanWorkflowRunExecute, spanOpts...)
	defer span.End()
	x := &execution{
		b: w.b, now: w.opts.Now, log: w.log, run: run, workerID: workerID,
		ctx: ctx, cancel: cancel, info: runInfo(run),
		commit: w.commit, runningStepAfter: w.opts.RunningStepAfter, tr: w.tr, span: span,
	}
	w.mu.Lock()
	w.executing[run.ID] = x
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.executing, run.ID)
		w.mu.Unlock()
	}()
	stopHeartbeat := w.heartbeat(x)
	defer stopHeartbeat()

	if err := w.loadHistory(x, hist); err != nil {
		w.finish(x, nil, err)
		return
	}
	if !w.holdUntilDue(x) {
		w.finish(x, nil, context.Cause(ctx))
		return
	}
	if x.prePass() {
		w.finish(x, nil, ErrSuspended)
		return
	}
	out, err := callProtected(func() (json.RawMessage, error) {
		return def.execute(&workflowContext{Context: ctx, x: x}, run.Input)
	})
	x.mu.Lock()
	x.closed = true
	x.mu.Unlock()
	x.branches.Wait()
	w.finish(x, out, err)
}

func runInfo(run *backend.WorkflowRun) RunInfo {
	info := RunInfo{ID: run.ID, WorkflowName: run.WorkflowName, CreatedAt: run.CreatedAt, Attempt: run.Attempts}
	if run.Version != nil {
		info.Version = *run.Version
	}
	if run.StartedAt != nil {
		info.StartedAt = *run.StartedAt
	}
	return info
}

// loadHistory reads the run's step attempts, unless the claim read them
// (pre). A run on its first claim has none, so it is not read.
func (w *Worker) loadHistory(x *execution, pre *[]backend.StepAttempt) error {
	var attempts []backend.StepAttempt
	switch {
	case pre != nil:
		attempts = *pre
		if len(attempts) > StepLimit {
			x.hist = replay.New(nil)
			return &StepLimitExceededError{Limit: StepLimit, StepCount: len(attempts)}
		}
	case x.run.Attempts > 1:
		var after string
		for {
			page, err := w.b.ListStepAttempts(x.ctx, backend.ListStepAttemptsParams{WorkflowRunID: x.run.ID, Limit: 1000, After: after})
			if err != nil {
				x.hist = replay.New(nil)
				return x.writeErr("load step history", err)
			}
			attempts = append(attempts, page.Data...)
			if len(attempts) > StepLimit {
				x.hist = replay.New(nil)
				return &StepLimitExceededError{Limit: StepLimit, StepCount: len(attempts)}
			}
			if page.Next == nil {
				break
			}
			after = *page.Next
		}
	}
	x.hist = replay.New(attempts)
	return nil
}

// heartbeat renews the lease every HeartbeatInterval until the returned
// stop function is called; a refused renewal (canceled, lease moved)
// cancels the pass.
func (w *Worker) heartbeat(x *execution) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(w.opts.HeartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-x.ctx.Done():
				return
			case <-t.C:
			}
			err := w.b.ExtendWorkflowRunLease(x.ctx, backend.ExtendWorkflowRunLeaseParams{
				WorkflowRunID: x.run.ID, WorkerID: x.workerID, LeaseDuration: w.opts.LeaseDuration,
			})
			switch {
			case errors.Is(err, backend.ErrNotOwner):
				w.log.Info("openworkflow: run canceled or lease lost; stopping its pass", "run", x.run.ID)
				x.cancel(errCauseLeaseLost)
				return
			case err != nil && x.ctx.Err() == nil:
				w.log.Warn("openworkflow: heartbeat failed", "run", x.run.ID, "error", err)
			}
		}
	}()
	return func() { close(done); <-finished }
}

// holdUntilDue holds a pass, its history read, until the earliest of its
// run's running waits (a sleep, or a child's or signal's timeout) comes
// due, when that is at most ClaimAhead away: a run claimed ahead of its
// wake-up then replays on time, never before its wait is due. A run woken
// early by a delivery whose wait also times out within ClaimAhead waits
// that long too. It reports false when the pass's context ended first.
func (w *Worker) holdUntilDue(x *execution) bool {
	due := x.earliestWait()
	d := due.Sub(w.opts.Now())
	if due.IsZero() || d <= 0 || d > w.opts.ClaimAhead {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-x.ctx.Done():
		return false
	}
}

// finish makes the run's transition after a pass. The transition is
// committed together with the pass's deferred writes (e.g. the last step's
// result), in the same group commit.
func (w *Worker) finish(x *execution, out json.RawMessage, err error) {
	run := x.run
	if errors.Is(context.Cause(x.ctx), errCauseShutdown) {
		w.releaseRun(x)
		return
	}
	if x.isLost() {
		x.span.SetAttributes(AttrExecutionOutcome.String(OutcomeStale))
		if cause := context.Cause(x.ctx); cause != nil {
			w.log.Debug("openworkflow: pass ended without committing", "run", run.ID, "cause", cause)
		}
		return
	}
	x.mu.Lock()
	suspended, wakeAt := x.suspended, x.wakeAt
	x.mu.Unlock()
	var (
		le *StepLimitExceededError
		se *StepError
		nr *NonRetryableError
	)
	tw := backend.Write{WorkflowRunID: run.ID, WorkerID: x.workerID}
	switch {
	case suspended && (err == nil || errors.Is(err, ErrSuspended)):
		tw.Kind, tw.AvailableAt = backend.WriteParkRun, wakeAt
	case err == nil:
		tw.Kind, tw.Output = backend.WriteCompleteRun, out
	case errors.As(err, &le), errors.As(err, &nr):
		w.failWrite(x, &tw, err, backend.NoRetryPolicy, run.Attempts)
	case errors.As(err, &se):
		if se.policy == nil {
			w.failWrite(x, &tw, err, backend.NoRetryPolicy, run.Attempts)
		} else {
			w.failWrite(x, &tw, err, *se.policy, x.hist.FailedCount(se.StepName))
		}
	default:
		recordError(x.span, err)
		policy := DefaultWorkflowRetryPolicy
		if def, ok := w.reg.lookup(run.WorkflowName, run.Version); ok && def.Spec().RetryPolicy != nil {
			policy = def.Spec().RetryPolicy.WithDefaults(DefaultWorkflowRetryPolicy)
		}
		w.failWrite(x, &tw, err, policy, run.Attempts)
	}
	w.transition(x, tw)
}

// outcomeOf names a pass's outcome for its span.
func outcomeOf(k backend.WriteKind, err error) string {
	switch {
	case err != nil:
		return OutcomeStale
	case k == backend.WriteCompleteRun:
		return OutcomeCompleted
	case k == backend.WriteParkRun:
		return OutcomeSuspended
	case k == backend.WriteRescheduleRun:
		return OutcomeRetrying
	}
	return OutcomeFailed
}

// failWrite makes tw the failure transition for err under policy, with
// attempts made so far: a retry (pending at the backoff) or a terminal
// failure, as OpenWorkflow's computeFailedWorkflowRunUpdate decides.
func (w *Worker) failWrite(x *execution, tw *backend.Write, err error, policy backend.RetryPolicy, attempts int) {
	d := backend.ComputeFailedRunUpdate(policy, attempts, x.run.DeadlineAt, encodeError(err), x.now())
	tw.Error = d.Error
	if d.Terminal {
		tw.Kind = backend.WriteFailRun
		return
	}
	tw.Kind, tw.AvailableAt = backend.WriteRescheduleRun, d.RetryAt
}

// transition commits the run's transition with the pass's deferred writes.
// When it is refused because the run is no longer ours (canceled, lease
// moved), that is expected and only logged at debug level, as in
// OpenWorkflow's transition wrapper.
func (w *Worker) transition(x *execution, tw backend.Write) {
	err := x.write(tw)
	x.span.SetAttributes(AttrExecutionOutcome.String(outcomeOf(tw.Kind, err)))
	if err == nil {
		switch tw.Kind {
		case backend.WriteParkRun, backend.WriteRescheduleRun:
			w.noteWake(tw.AvailableAt)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cur, gerr := w.b.GetWorkflowRun(ctx, x.run.ID)
	if gerr == nil && (cur.Status.Normalize() != backend.RunRunning || cur.WorkerID == nil || *cur.WorkerID != x.workerID) {
		w.log.Debug("openworkflow: transition skipped, run no longer ours", "run", x.run.ID, "transition", tw.Kind, "status", cur.Status)
		return
	}
	w.log.Error("openworkflow: critical error during workflow execution", "run", x.run.ID, "transition", tw.Kind, "error", err)
}

// rescheduleUnregistered hands a run whose workflow (name and version) is
// not registered here back for another worker, with 5 s ×2 up to 5 min
// backoff, forever, as in OpenWorkflow.
func (w *Worker) rescheduleUnregistered(run *backend.WorkflowRun, workerID string) {
	msg := "Workflow " + Spec{Name: run.WorkflowName, Version: runInfo(run).Version}.String() + " is not registered"
	errJSON, _ := json.Marshal(map[string]string{"message": msg})
	attempts := run.Attempts
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := w.b.FailWorkflowRun(ctx, backend.FailWorkflowRunParams{
		WorkflowRunID: run.ID, WorkerID: workerID, Error: errJSON,
		RetryPolicy: backend.MissingDefinitionRetryPolicy, Attempts: &attempts, DeadlineAt: run.DeadlineAt,
	})
	if err != nil {
		if !errors.Is(err, backend.ErrNotOwner) {
			w.log.Error("openworkflow: could not reschedule run of unregistered workflow", "run", run.ID, "error", err)
		}
		return
	}
	w.log.Warn("openworkflow: "+msg+" on this worker; rescheduled", "run", run.ID)
}
