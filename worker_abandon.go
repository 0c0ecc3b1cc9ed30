package openworkflow

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Abandoning user code that ignores its context.
//
// A pass runs user code — the workflow function, its step functions and
// its parallel steps — on goroutines the worker cannot stop. When the
// pass's context ends (the run canceled, failed at its deadline or lost,
// the worker stopping) that code should return; if it has not returned
// AbandonStepAfter later, the pass's heartbeat goroutine, which is
// already watching the context, abandons it: the run is settled as the
// pass would have settled it (Worker.finish of a lost pass), and the slot
// is freed. The goroutines are then the one documented exception to
// "every goroutine has an owner that stops it": they are counted
// (Worker.abandoned, the metrics' gauge) and bounded (MaxAbandonedSteps
// stops the claims), and when the code returns at last the pass goroutine
// only uncounts it. Nothing of it is recorded: the pass's context ended,
// so the pass is lost (pass.isLost) and every later write is refused
// before it reaches the backend, and the backend's fence would refuse it
// anyway.
//
// A step is named in the log once it has run for RunningStepAfter
// (announceIfSlow notes it in the pass), so that fast steps pay nothing
// for it.

// defaultAbandonStepAfter is WorkerOptions.AbandonStepAfter's default: a
// step that honours its context returns well within it, and a run's slot
// is free about a second after its run failed, was canceled or was lost.
const defaultAbandonStepAfter = time.Second

// slowStep is a step function of a pass running for longer than
// RunningStepAfter: named in the log if the pass is abandoned.
type slowStep struct {
	attemptID, key string
	since          time.Time // when it started (real time, within a timer's lateness)
}

// abandonment records that a pass's user code was abandoned: where it
// was, for the log line of its return.
type abandonment struct {
	at      time.Time // real time
	where   string
	counted chan struct{} // closed once the abandonment is counted and logged
}

// noteSlow notes a step running for longer than RunningStepAfter.
func (x *pass) noteSlow(attemptID, key string, since time.Time) {
	x.mu.Lock()
	x.slow = append(x.slow, slowStep{attemptID: attemptID, key: key, since: since})
	x.mu.Unlock()
}

// slowDone forgets a step noted by noteSlow, which returned.
func (x *pass) slowDone(attemptID string) {
	x.mu.Lock()
	for i, s := range x.slow {
		if s.attemptID == attemptID {
			x.slow = append(x.slow[:i], x.slow[i+1:]...)
			break
		}
	}
	x.mu.Unlock()
}

// enterUser marks the start of the pass's user code and reports whether
// it may run: not when the pass's context already ended (the user code
// would start abandoned).
func (x *pass) enterUser() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.inUser = true
	return x.ctx.Err() == nil
}

// leaveUser marks the end of the pass's user code (the workflow function
// and every parallel step returned) and reports whether it had been
// abandoned, in which case the pass is no longer the worker's to end.
func (x *pass) leaveUser() (abandoned *abandonment) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.inUser = false
	return x.abandoned
}

// watchAbandon runs on the pass's heartbeat goroutine once the pass's
// context ended (at ended): if the pass is still in user code
// AbandonStepAfter after that (done not closed, the pass not returned), it
// abandons it.
func (w *Worker) watchAbandon(x *pass, done <-chan struct{}, ended time.Time) {
	t := time.NewTimer(w.opts.AbandonStepAfter - time.Since(ended))
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	now := time.Now()
	x.mu.Lock()
	if !x.inUser {
		// Before its user code (which will not run: enterUser) or after
		// it (the worker's own writes): the pass ends by itself.
		x.mu.Unlock()
		return
	}
	where, running := describeStuck(x.slow, now)
	a := &abandonment{at: now, where: where, counted: make(chan struct{})}
	x.abandoned = a
	x.mu.Unlock()
	w.abandon(x, a, running)
}

// describeStuck names the user code of a pass that did not return: its
// steps running longer than RunningStepAfter, or the workflow function's
// own code, and how long the longest-running step has been running.
func describeStuck(slow []slowStep, now time.Time) (where string, running time.Duration) {
	if len(slow) == 0 {
		return "no step (the workflow function's own code)", 0
	}
	names := make([]string, len(slow))
	for i, s := range slow {
		names[i] = s.key
		running = max(running, now.Sub(s.since))
	}
	return strings.Join(names, ", "), running
}

// abandon stops counting x's user code, which ignores x's ended context:
// it is counted and logged as abandoned, the run is settled as the pass
// would settle it, and the pass ends — its slot is free — without waiting
// for the code to return.
func (w *Worker) abandon(x *pass, a *abandonment, running time.Duration) {
	w.mu.Lock()
	w.abandoned++
	n := w.abandoned
	w.mu.Unlock()
	attrs := []any{"run", x.run.ID, "workflow", x.run.WorkflowName, "step", a.where}
	if running > 0 {
		attrs = append(attrs, "running", running.Round(time.Millisecond))
	}
	attrs = append(attrs, "cause", context.Cause(x.ctx), "waited", w.opts.AbandonStepAfter, "abandoned", n, "max", w.opts.MaxAbandonedSteps)
	w.log.Warn("openworkflow: abandoned user code that ignores its ended context; its slot is free and nothing it does is recorded, "+
		"but its goroutine runs on until it returns: make it return when its context is done", attrs...)
	if w.m != nil {
		w.m.ObserveAbandonedStep(true)
	}
	close(a.counted)
	w.finish(x, nil, context.Cause(x.ctx))
	w.passEnded(x)
	x.endSlot()
}

// abandonedReturned is the end of a pass whose user code was abandoned
// (a) and has now returned: it is no longer counted, and a worker that
// was saturated claims again.
func (w *Worker) abandonedReturned(x *pass, a *abandonment) {
	<-a.counted // counted up (by abandon) before it is counted down
	w.mu.Lock()
	w.abandoned--
	n := w.abandoned
	w.abandonedChanged()
	w.mu.Unlock()
	w.log.Info("openworkflow: abandoned user code returned; nothing of it was recorded",
		"run", x.run.ID, "workflow", x.run.WorkflowName, "step", a.where,
		"after", time.Since(a.at).Round(time.Millisecond), "abandoned", n)
	if w.m != nil {
		w.m.ObserveAbandonedStep(false)
	}
	w.poke()
}

// abandonedChanged wakes those waiting for the abandoned count to change
// (Worker.Stop). w.mu is held.
func (w *Worker) abandonedChanged() {
	if w.abandonedCh != nil {
		close(w.abandonedCh)
		w.abandonedCh = nil
	}
}

// AbandonedSteps is the number of passes whose user code this worker
// abandoned because it ignored its ended context (see
// WorkerOptions.AbandonStepAfter) and has not returned yet: goroutines of
// this process that no slot counts. At WorkerOptions.MaxAbandonedSteps the
// worker claims nothing; a health check may report it.
func (w *Worker) AbandonedSteps() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.abandoned
}

// checkSaturated returns the error of a claim refused because the worker
// has MaxAbandonedSteps abandoned passes, or nil; it logs the first
// refusal of each such period, and the end of it.
func (w *Worker) checkSaturated() error {
	w.mu.Lock()
	n, was := w.abandoned, w.saturated
	w.saturated = n >= w.opts.MaxAbandonedSteps
	w.mu.Unlock()
	if n < w.opts.MaxAbandonedSteps {
		if was {
			w.log.Info("openworkflow: worker no longer saturated by abandoned steps; claiming again", "abandoned", n)
		}
		return nil
	}
	err := fmt.Errorf("%w: %d passes abandoned (WorkerOptions.MaxAbandonedSteps %d): the worker is saturated and claims no run until one returns; "+
		"make step functions and workflow code return when their context is done, and restart the process to be rid of them",
		ErrAbandonedSteps, n, w.opts.MaxAbandonedSteps)
	if !was {
		w.log.Error("openworkflow: worker saturated by abandoned steps; claiming nothing", "error", err)
	}
	return err
}
