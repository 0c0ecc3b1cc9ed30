package openworkflow

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/history"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// execute runs one execution pass of a claimed run and makes its
// transition: complete, park, reschedule after a step failure, or fail.
// hist is the run's step history when the claim already read it (see
// Worker.readHistories), else nil. endSlot frees the pass's slot: execute
// calls it when the pass ends, or the worker when it abandons the pass's
// user code (worker_abandon.go), whose goroutine then returns from execute
// only when that code does.
func (w *Worker) execute(run *backend.WorkflowRun, hist *[]backend.StepAttempt, leased time.Time, endSlot func()) {
	var abandoned *abandonment
	defer func() {
		if abandoned == nil {
			endSlot()
		}
	}()
	workerID := *run.WorkerID
	def, ok := w.reg.lookup(run.WorkflowName, run.Version)
	if !ok {
		w.rescheduleUnregistered(run, workerID)
		return
	}
	var began time.Time
	if w.m != nil {
		began = time.Now()
	}
	ctx, cancel := context.WithCancelCause(w.hardCtx)
	defer cancel(nil)
	if run.DeadlineAt != nil {
		// The pass, and the context its steps get, end at the run's
		// deadline; the heartbeat then fails the run at once (expire),
		// whether or not the step returns. The worker's clock (Now) says
		// how far away the deadline is; the context counts in real time.
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, time.Now().Add(run.DeadlineAt.Sub(w.opts.Now())), errCauseDeadline)
		defer stop()
	}
	// Each pass starts its own trace, linked to the span that created the
	// run, as in OpenWorkflow.
	spanOpts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(append(runAttributes(run), telemetry.AttrExecutionAttempt.Int(run.Attempts))...)}
	if origin := w.tr.origin(run.Context); origin.IsValid() {
		spanOpts = append(spanOpts, trace.WithLinks(trace.Link{SpanContext: origin}))
	}
	ctx, span := w.tr.start(ctx, telemetry.SpanWorkflowRunExecute, spanOpts...)
	defer span.End()
	x := &pass{
		b: w.b, now: w.opts.Now, log: w.log, run: run, workerID: workerID,
		ctx: ctx, cancel: cancel, info: runInfo(run),
		commit: w.commit, writes: w.commit.NewPass(), runningStepAfter: w.opts.RunningStepAfter, tr: w.tr, span: span, m: w.m,
		endSlot: endSlot, began: began, leased: leased,
	}
	w.mu.Lock()
	w.executing[run.ID] = x
	hinted := w.takePauseHint(run.ID, workerID)
	w.mu.Unlock()
	if hinted && x.pause(w.opts.Now()) {
		w.log.Info("openworkflow: run paused (announced as it was claimed); its pass starts no step and hands it back", "run", run.ID)
	}
	defer func() {
		if abandoned == nil {
			w.passEnded(x)
		}
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
	updates, _ := w.b.(backend.UpdateStore)
	if updates != nil {
		if due := x.earliestWait(); !due.IsZero() && due.After(w.opts.Now()) {
			x.wokenEarly = true // by an update, a delivery: its updates are read at its wait point
		}
	}
	if x.prePass() && !w.updatesWaiting(x, updates) {
		w.finish(x, nil, ErrSuspended)
		return
	}
	var out json.RawMessage
	var err error
	if x.enterUser() {
		out, err = callProtected(func() (json.RawMessage, error) {
			return def.execute(&workflowContext{Context: ctx, x: x}, run.Input)
		})
	} else {
		err = context.Cause(ctx) // ended before the workflow could start: it is lost
	}
	x.mu.Lock()
	x.closed = true
	x.mu.Unlock()
	x.branches.Wait()
	if abandoned = x.leaveUser(); abandoned != nil {
		// The worker abandoned this code (it ignored the pass's ended
		// context) and has ended the pass: the run is settled and the
		// slot free. Nothing of it is committed.
		w.abandonedReturned(x, abandoned)
		return
	}
	x.writes.Wait()
	if updates != nil && !x.isLost() && x.wantsUpdates() {
		x.mu.Lock()
		suspended := x.suspended
		x.mu.Unlock()
		parking := suspended && (err == nil || describeFailure(err).class == failSuspended)
		if parking || (err == nil && !suspended) {
			// A failure is left out: its updates wait for the retry's
			// pass, or are read as rejected once the run has failed. An
			// error here means the pass lost its run, which finish sees.
			_ = x.handleUpdates(updates, parking)
		}
	}
	w.finish(x, out, err)
}

// reconcileUpdates wakes a run that declared update handlers and has
// just parked, if an update was admitted while the pass still owned it
// (after it read the run's updates, before the park committed): that
// admission found the run owned and could not wake it. Reading after the
// park's commit closes the window — a later admission finds the run parked
// and wakes it itself. The wake is an admission of the waiting update's
// id again, which wakes a parked run (UpdateStore.AdmitRunUpdate).
func (w *Worker) reconcileUpdates(x *pass) {
	store, ok := w.b.(backend.UpdateStore)
	if !ok || !x.wantsUpdates() {
		return
	}
	ctx, cancel := context.WithTimeout(w.hardCtx, 5*time.Second)
	defer cancel()
	pending, err := store.ListRunUpdates(ctx, x.run.ID, true)
	if err == nil && len(pending) > 0 {
		u := pending[0]
		_, err = store.AdmitRunUpdate(ctx, backend.AdmitRunUpdateParams{WorkflowRunID: u.WorkflowRunID, UpdateID: u.ID, Name: u.Name})
	}
	if err != nil {
		// The update's caller wakes the run again within a second.
		w.log.Debug("openworkflow: could not check a parked run for updates admitted while it parked", "run", x.run.ID, "error", err)
	}
}

// updatesWaiting reports, for a run whose pre-pass would park it again
// (a sleep still pending: it was woken early), whether updates wait for
// it; if so the pass runs the workflow to its wait point to handle them,
// and parks again until its sleep's own time. A failed read parks the
// run: the update's caller wakes it again.
func (w *Worker) updatesWaiting(x *pass, store backend.UpdateStore) bool {
	if store == nil {
		return false
	}
	pending, err := store.ListRunUpdates(x.ctx, x.run.ID, true)
	if err != nil {
		w.log.Debug("openworkflow: could not read the updates of a run woken early; parking it", "run", x.run.ID, "error", err)
		return false
	}
	if len(pending) == 0 {
		return false
	}
	x.mu.Lock()
	x.suspended, x.wakeAt = false, time.Time{}
	x.mu.Unlock()
	return true
}

// passEnded is the end of a pass, once its run was settled: it is no
// longer executing, and is measured.
func (w *Worker) passEnded(x *pass) {
	w.mu.Lock()
	if w.executing[x.run.ID] == x {
		// A pass abandoned after losing its run may end after the run's
		// next pass here began.
		delete(w.executing, x.run.ID)
	}
	w.mu.Unlock()
	if w.m != nil {
		w.m.ObservePass(x.run.WorkflowName, cmp.Or(x.outcome, telemetry.OutcomeStale), time.Since(x.began))
	}
}

func runInfo(run *backend.WorkflowRun) RunInfo {
	info := RunInfo{ID: run.ID, WorkflowName: run.WorkflowName, CreatedAt: run.CreatedAt, Attempt: run.Attempts}
	if run.Version != nil {
		info.Version = *run.Version
	}
	if run.StartedAt != nil {
		info.StartedAt = *run.StartedAt
	}
	if sr, ok := backend.ScheduledRunOf(run.Context); ok {
		info.Schedule = &sr
	}
	if c, ok := backend.ContinuationOf(run.Context); ok {
		info.ContinuedFrom = &c
	}
	return info
}

// loadHistory reads the run's step attempts, unless the claim read them
// (pre). A run on its first claim has none, so it is not read.
func (w *Worker) loadHistory(x *pass, pre *[]backend.StepAttempt) error {
	var attempts []backend.StepAttempt
	switch {
	case pre != nil:
		attempts = *pre
		if len(attempts) > StepLimit {
			x.hist = history.New(nil)
			return &StepLimitExceededError{Limit: StepLimit, StepCount: len(attempts)}
		}
	case x.run.Attempts > 1:
		var after string
		for {
			page, err := w.b.ListStepAttempts(x.ctx, backend.ListStepAttemptsParams{WorkflowRunID: x.run.ID, Limit: 1000, After: after})
			if err != nil {
				x.hist = history.New(nil)
				return x.backendErr("load step history", err)
			}
			attempts = append(attempts, page.Data...)
			if len(attempts) > StepLimit {
				x.hist = history.New(nil)
				return &StepLimitExceededError{Limit: StepLimit, StepCount: len(attempts)}
			}
			if page.Next == nil {
				break
			}
			after = *page.Next
		}
	}
	x.hist = history.New(attempts)
	return nil
}

// heartbeat renews the lease every HeartbeatInterval until the returned
// stop function is called; a refused renewal (canceled, lease moved)
// cancels the pass, and a renewal that finds the run paused makes the
// pass start no further step and hand the run back (pass.pause): the
// fallback for a pause whose announcement did not reach this worker
// (notePause). When the pass's context reaches the run's deadline, it
// fails the run at once (expire), even if a step ignores its context and
// keeps the pass from returning. When renewals fail (the database is
// unreachable, as during a failover) until the lease has run out by the
// worker's clock — LeaseDuration after the last successful renewal was
// sent, or the claim — it cancels the pass too: another worker may claim
// the run from then on, and a step must not run in two places at once
// (as a Temporal activity past its heartbeat timeout). Once the pass's
// context ended, for any cause, it watches for user code that ignores it
// (watchAbandon).
func (w *Worker) heartbeat(x *pass) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if ended, ok := w.beat(x, done); ok {
			w.watchAbandon(x, done, ended)
		}
	}()
	return func() { close(done); <-finished }
}

// beat is heartbeat's loop: it returns when done is closed (ok false) or
// when the pass's context ended (ok true, at about ended).
func (w *Worker) beat(x *pass, done <-chan struct{}) (ended time.Time, ok bool) {
	t := time.NewTicker(w.opts.HeartbeatInterval)
	defer t.Stop()
	leaseEnd := x.leased.Add(w.opts.LeaseDuration) // real time
	for {
		select {
		case <-done:
			return time.Time{}, false
		case <-x.ctx.Done():
			ended = time.Now()
			if context.Cause(x.ctx) == errCauseDeadline {
				w.expire(x)
			}
			return ended, true
		case <-t.C:
		}
		sent := time.Now()
		err := w.b.ExtendWorkflowRunLease(x.ctx, backend.ExtendWorkflowRunLeaseParams{
			WorkflowRunID: x.run.ID, WorkerID: x.workerID, LeaseDuration: w.opts.LeaseDuration,
		})
		if err == nil || errors.Is(err, backend.ErrRunPaused) { // renewed either way
			leaseEnd = sent.Add(w.opts.LeaseDuration)
		}
		switch {
		case errors.Is(err, backend.ErrRunPaused):
			if x.pause(w.opts.Now()) {
				w.log.Info("openworkflow: run paused; its pass starts no further step and hands it back", "run", x.run.ID)
			}
		case errors.Is(err, backend.ErrNotOwner):
			w.log.Info("openworkflow: run canceled or lease lost; stopping its pass", "run", x.run.ID)
			x.cancel(errCauseLeaseLost)
			return time.Now(), true
		case err != nil && x.ctx.Err() == nil && !time.Now().Before(leaseEnd):
			w.log.Warn("openworkflow: the run's lease ran out while its renewals failed; stopping its pass (the run is claimable again)",
				"run", x.run.ID, "error", err)
			x.cancel(errCauseLeaseLost)
			return time.Now(), true
		case err != nil && x.ctx.Err() == nil:
			w.log.Warn("openworkflow: heartbeat failed", "run", x.run.ID, "error", err)
		}
	}
}

// holdUntilDue holds a pass, its history read, until the earliest of its
// run's running waits (a sleep, or a child's or signal's timeout) comes
// due, when that is at most ClaimAhead away: a run claimed ahead of its
// wake-up then replays on time, never before its wait is due. A run woken
// early by a delivery whose wait also times out within ClaimAhead waits
// that long too. It reports false when the pass's context ended first.
func (w *Worker) holdUntilDue(x *pass) bool {
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
// result), in the same group commit. A pass that lost its run is settled
// instead (see settle).
func (w *Worker) finish(x *pass, out json.RawMessage, err error) {
	if errors.Is(context.Cause(x.ctx), errCauseShutdown) {
		w.releaseRun(x)
		return
	}
	if !x.isLost() {
		if can := continuation(x, err); can != nil {
			w.continueAsNew(x, can)
			return
		}
		tw := w.transitionFor(x, out, err)
		werr := x.write(tw)
		x.outcome = outcomeOf(tw.Kind, werr)
		x.span.SetAttributes(telemetry.AttrExecutionOutcome.String(x.outcome))
		if werr == nil {
			switch tw.Kind {
			case backend.WriteParkRun, backend.WriteRescheduleRun:
				w.noteWake(tw.AvailableAt)
				if tw.Kind == backend.WriteParkRun {
					w.reconcileUpdates(x)
				}
			case backend.WriteCompleteRun:
				w.observeRunFinished(x, backend.RunCompleted)
			case backend.WriteFailRun:
				w.observeRunFinished(x, backend.RunFailed)
			}
			return
		}
	} else {
		x.span.SetAttributes(telemetry.AttrExecutionOutcome.String(telemetry.OutcomeStale))
	}
	w.settle(x)
}

// continuation is the ContinueAsNewError err carries when the pass ends
// by continuing as new: the workflow returned it (not through a step's
// failure) and no wait point suspended the pass; nil otherwise. err comes
// from user code: if one of its methods (Unwrap, As) panics, it is no
// continuation, and the failure path stores it as a PanicError
// (describeFailure), as for any other error.
func continuation(x *pass, err error) (can *ContinueAsNewError) {
	defer func() {
		if r := recover(); r != nil {
			can = nil
		}
	}()
	var step *StepError
	if err == nil || !errors.As(err, &can) || errors.As(err, &step) {
		return nil // none, or one a step returned: that step failed
	}
	x.mu.Lock()
	suspended := x.suspended
	x.mu.Unlock()
	if suspended {
		return nil
	}
	return can
}

// transitionFor is the write that ends a pass that still owns its run:
// park it (a wait point suspended it), complete it with out, or fail it
// (a retry or a terminal failure) for err.
func (w *Worker) transitionFor(x *pass, out json.RawMessage, err error) backend.Write {
	run := x.run
	tw := backend.Write{WorkflowRunID: run.ID, WorkerID: x.workerID}
	x.mu.Lock()
	suspended, wakeAt := x.suspended, x.wakeAt
	x.mu.Unlock()
	if err == nil && !suspended {
		tw.Kind, tw.Output = backend.WriteCompleteRun, out
		return tw
	}
	f := describeFailure(err)
	switch {
	case suspended && (err == nil || f.class == failSuspended):
		tw.Kind, tw.AvailableAt = backend.WriteParkRun, wakeAt
		tw.OnlySleeps = x.hist.RunningOnly(backend.StepSleep)
	case err == nil:
		tw.Kind, tw.Output = backend.WriteCompleteRun, out
	case f.class == failFinal:
		w.failWrite(x, &tw, f.stored, noRetryPolicy, run.Attempts-x.hist.RetryBase())
	case f.class == failStep && f.policy != nil:
		w.failWrite(x, &tw, f.stored, *f.policy, x.hist.FailedCount(f.step))
	case f.class == failStep:
		w.failWrite(x, &tw, f.stored, noRetryPolicy, run.Attempts-x.hist.RetryBase())
	default:
		recordFailure(x.span, f)
		policy := DefaultWorkflowRetryPolicy()
		if def, ok := w.reg.lookup(run.WorkflowName, run.Version); ok && def.Spec().RetryPolicy != nil {
			policy = def.Spec().RetryPolicy.withDefaults(DefaultWorkflowRetryPolicy())
		}
		w.failWrite(x, &tw, f.stored, policy, run.Attempts-x.hist.RetryBase())
	}
	return tw
}

// outcomeOf names a pass's outcome for its span.
func outcomeOf(k backend.WriteKind, err error) string {
	switch {
	case err != nil:
		return telemetry.OutcomeStale
	case k == backend.WriteCompleteRun:
		return telemetry.OutcomeCompleted
	case k == backend.WriteParkRun:
		return telemetry.OutcomeSuspended
	case k == backend.WriteRescheduleRun:
		return telemetry.OutcomeRetrying
	}
	return telemetry.OutcomeFailed
}

// failWrite makes tw the failure transition for the stored error errJSON
// under policy, with attempts made so far: a retry (pending at the backoff)
// or a terminal failure, as OpenWorkflow's computeFailedWorkflowRunUpdate
// decides.
func (w *Worker) failWrite(x *pass, tw *backend.Write, errJSON json.RawMessage, policy RetryPolicy, attempts int) {
	d := failedRun(policy, attempts, x.run.DeadlineAt, errJSON, x.now())
	tw.Error = d.stored
	if d.terminal {
		tw.Kind = backend.WriteFailRun
		return
	}
	tw.Kind, tw.AvailableAt = backend.WriteRescheduleRun, d.retryAt
}

// settle deals with a run whose pass lost it, by why it was lost: a run
// refused by the fence (canceled, lease moved) is someone else's; one
// whose backend calls failed is handed back as soon as the backend
// answers; one whose write was refused as invalid fails, saying what could
// not be recorded; one past its deadline fails with the deadline error.
func (w *Worker) settle(x *pass) {
	why, err := x.lossOf()
	switch why {
	case lossUnavailable:
		w.log.Warn("openworkflow: a backend call of the pass failed; handing the run back as soon as the backend answers",
			"run", x.run.ID, "error", err)
		w.releaseWhenAnswered(x)
	case lossUnrecordable:
		w.log.Error("openworkflow: the backend refused a write of the pass as invalid; failing the run", "run", x.run.ID, "error", err)
		w.failUnrecordable(x, err)
	case lossDeadline:
		w.expire(x)
	default:
		if cause := context.Cause(x.ctx); cause != nil {
			w.log.Debug("openworkflow: pass ended without committing", "run", x.run.ID, "cause", cause)
		} else if err != nil {
			w.log.Debug("openworkflow: pass ended without committing; the run is no longer ours", "run", x.run.ID, "error", err)
		}
	}
}

// expire fails x's run with the deadline error, fenced on its ownership,
// once, as soon as the deadline passed: the pass commits nothing more,
// and the run does not wait for its step to return, nor for a free slot.
func (w *Worker) expire(x *pass) {
	x.expireOnce.Do(func() {
		x.markLost(lossDeadline, nil)
		tw := backend.Write{Kind: backend.WriteFailRun, WorkflowRunID: x.run.ID, WorkerID: x.workerID, Error: backend.DeadlineExceededError()}
		err := w.commit.Submit([]backend.Write{tw}).Wait()
		switch {
		case err == nil:
			x.span.SetAttributes(telemetry.AttrExecutionOutcome.String(telemetry.OutcomeFailed))
			w.observeRunFinished(x, backend.RunFailed)
			w.log.Info("openworkflow: run failed: deadline exceeded", "run", x.run.ID)
		case errors.Is(err, backend.ErrNotOwner):
			w.log.Debug("openworkflow: run past its deadline is no longer ours", "run", x.run.ID, "error", err)
		default:
			// Any worker's next claim fails it (the deadline sweep).
			w.log.Warn("openworkflow: could not fail run past its deadline; the next claim's deadline sweep will", "run", x.run.ID, "error", err)
		}
	})
}

// failUnrecordable fails x's run terminally because the backend refused a
// write of its pass as invalid (cause): retrying the pass would write the
// same values again.
func (w *Worker) failUnrecordable(x *pass, cause error) {
	stored := encodeError(NonRetryable(fmt.Errorf("the backend refused to record a write of this run: %w", cause)))
	tw := backend.Write{Kind: backend.WriteFailRun, WorkflowRunID: x.run.ID, WorkerID: x.workerID, Error: stored}
	if err := w.commit.Submit([]backend.Write{tw}).Wait(); err != nil {
		if x.classifyLoss(err) == lossUnavailable {
			w.releaseWhenAnswered(x)
			return
		}
		w.log.Warn("openworkflow: could not fail run whose write was refused", "run", x.run.ID, "error", err)
		return
	}
	w.observeRunFinished(x, backend.RunFailed)
}

// observeRunFinished reports x's run finished with status to the worker's
// metrics, with its duration from its first claim by the worker's clock.
func (w *Worker) observeRunFinished(x *pass, status backend.RunStatus) {
	if w.m == nil {
		return
	}
	var d time.Duration
	if x.run.StartedAt != nil {
		d = max(0, w.opts.Now().Sub(*x.run.StartedAt))
	}
	w.m.ObserveRunFinished(x.run.WorkflowName, string(status), d)
}

// releaseRetryFirst and releaseRetryMax bound the backoff between two
// attempts of releaseWhenAnswered: a run is moving again at most
// releaseRetryMax (plus a claim) after the backend answers again.
const (
	releaseRetryFirst = 50 * time.Millisecond
	releaseRetryMax   = 500 * time.Millisecond
)

// releaseWhenAnswered hands x's run back (parked, available now, fenced on
// its ownership), retrying with backoff until the backend answers, so that
// a run whose pass failed in a database outage moves again as soon as the
// database is back rather than when its lease expires. The outcome of the
// pass's failed write is unknown, so nothing of it is assumed: the next
// pass replays from what was committed. It gives up when the worker stops,
// or at once when the backend reports itself unusable (the lease then
// expires as usual).
func (w *Worker) releaseWhenAnswered(x *pass) {
	delay := releaseRetryFirst
	for attempt := 1; ; attempt++ {
		tw := backend.Write{Kind: backend.WriteParkRun, WorkflowRunID: x.run.ID, WorkerID: x.workerID, AvailableAt: w.opts.Now()}
		err := w.commit.Submit([]backend.Write{tw}).Wait()
		switch {
		case err == nil:
			w.log.Info("openworkflow: run handed back after a backend failure", "run", x.run.ID, "attempts", attempt)
			w.noteWake(tw.AvailableAt)
			return
		case errors.Is(err, backend.ErrNotOwner):
			return // finished, canceled or taken over meanwhile: not ours to release
		case errors.Is(err, backend.ErrUnusable):
			// It will never answer: the worker stops (see Err).
			w.log.Warn("openworkflow: the backend is unusable; the run waits for its lease to expire", "run", x.run.ID)
			return
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-w.hardCtx.Done():
			t.Stop()
			w.log.Warn("openworkflow: worker stopped before the backend answered; the run waits for its lease to expire", "run", x.run.ID, "error", err)
			return
		}
		delay = min(delay*2, releaseRetryMax)
	}
}

// rescheduleUnregistered hands a run whose workflow (name and version) is
// not registered here back for another worker, with 5 s ×2 up to 5 min
// backoff, forever, as in OpenWorkflow, but never fails it: where
// OpenWorkflow fails the run at once when the next try would fall after
// its deadline, this worker reschedules it at its deadline instead, so a
// run that a worker with its workflow could still execute in time is not
// failed by one that cannot, and the claim's deadline sweep fails it at
// its own time if nobody ran it by then. (The write is the one a step
// retry makes: pending, the error, no worker, at the given time.)
func (w *Worker) rescheduleUnregistered(run *backend.WorkflowRun, workerID string) {
	msg := "Workflow " + Spec{Name: run.WorkflowName, Version: runInfo(run).Version}.String() + " is not registered"
	errJSON, _ := json.Marshal(map[string]string{"message": msg})
	at := w.opts.Now().Add(missingDefinitionRetryPolicy.delay(run.Attempts))
	if run.DeadlineAt != nil && at.After(*run.DeadlineAt) {
		at = *run.DeadlineAt
	}
	err := w.commit.Submit([]backend.Write{{
		Kind: backend.WriteRescheduleRun, WorkflowRunID: run.ID, WorkerID: workerID, AvailableAt: at, Error: errJSON,
	}}).Wait()
	if err != nil {
		if !errors.Is(err, backend.ErrNotOwner) {
			w.log.Error("openworkflow: could not reschedule run of unregistered workflow", "run", run.ID, "error", err)
		}
		return
	}
	w.log.Warn("openworkflow: "+msg+" on this worker; rescheduled", "run", run.ID, "at", at)
}
