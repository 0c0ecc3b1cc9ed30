package dag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// compensation is what a pass knows of a step's compensation.
type compensation struct {
	attempts int       // attempts ended
	done     bool      // an attempt completed
	failed   bool      // failed for good
	lastErr  *ow.Error // of the last failed attempt
	lastEnd  time.Time // when the last failed attempt ended
}

// compensate runs, one after another, the compensate handlers of the
// steps to compensate — those that completed, and those with a failed
// attempt (the step that failed for good, or one abandoned in its
// backoff), that have a compensate handler — in reverse order of
// completion (see undoOrder). Each compensation
// retries with its step's policy and backoff; one that fails for good is
// recorded on its step and the chain goes on. Every compensation attempt
// is its own durable key looked up first, so a pass after a crash runs
// none that completed again. It returns the run's final error (see
// finalError), or the reason the pass stops (ErrSuspended during a
// backoff, ErrLeaseLost).
func (r *run) compensate() error {
	order := r.compensationOrder()
	if len(order) > 0 {
		// Before anything is undone: a run whose steps were undone must
		// never be retried forward (ow.Client.RetryRun refuses it).
		if err := ow.MarkNotRetryable(r.ctx, notRetryableReason); err != nil {
			return err
		}
	}
	for _, s := range order {
		if err := r.compensateStep(s); err != nil {
			return err
		}
	}
	return r.finalError()
}

// notRetryableReason is the reason a DAG run that began to compensate
// gives a refused retry (ow.MarkNotRetryable).
const notRetryableReason = "it is a DAG run that began to compensate: the steps it undid would not be done again"

// compensationOrder lists the steps to compensate in the order their
// compensations run: reverse order of completion (see undoOrder).
func (r *run) compensationOrder() []*step {
	order := topologicalOrder(r.def.Steps)
	var out []*step
	var ends []time.Time
	for i := len(order) - 1; i >= 0; i-- {
		s := r.steps[order[i]]
		if s.Compensate != "" && (s.state == stateCompleted || s.attempts > 0) {
			out = append(out, s)
			ends = append(ends, r.endedAt(s))
		}
	}
	return undoOrder(out, ends)
}

// endedAt is when the last attempt of s ended (completed, or failed), as
// recorded; zero if it is not recorded.
func (r *run) endedAt(s *step) time.Time {
	k := s.attempts // the last failed attempt…
	if s.state == stateCompleted {
		k++ // …or the completed one after it
	}
	rec, ok := ow.LookupStep(r.ctx, attemptKey(s.Name, k))
	if !ok {
		return time.Time{}
	}
	return rec.FinishedAt
}

// undoOrder sorts steps, given in reverse topological order (the later
// declared first on ties) with ends[i] the time steps[i]'s last attempt
// ended, into the order their compensations run: the one that ended last
// first — reverse order of completion, as recorded in the run's history.
// Times are compared to the millisecond, the precision the backends
// store, so a pass that recorded the times itself and one that reads them
// back agree; steps that ended in the same millisecond keep the reverse
// topological order, so a step is always undone before the steps it
// depends on (it ended after them). The interpreter and StatusOf both
// order by it.
func undoOrder[S any](steps []S, ends []time.Time) []S {
	idx := make([]int, len(steps))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		return ends[j].Truncate(time.Millisecond).Compare(ends[i].Truncate(time.Millisecond))
	})
	out := make([]S, len(steps))
	for n, i := range idx {
		out[n] = steps[i]
	}
	return out
}

// cause is the step whose failure is compensated: the first declared of
// the steps that failed for good (usually the only one).
func (r *run) cause() *step {
	for _, s := range r.steps {
		if s.state == stateFailed {
			return s
		}
	}
	return r.failed
}

// compensateStep runs the compensation of s to its end: completed, or
// failed for good.
func (r *run) compensateStep(s *step) error {
	c := &s.compensate
	h := r.e.handler(s.Compensate)
	cause := r.cause()
	for k := 1; k <= s.retries()+1; k++ {
		key := compensationKey(s.Name, k)
		if rec, ok := ow.LookupStep(r.ctx, key); ok && rec.Status != ow.StepRunning {
			if rec.Status == ow.StepCompleted {
				c.done = true
				return nil
			}
			if c.note(k, rec) {
				break
			}
			continue
		}
		if k > 1 {
			if err := ow.SleepUntil(r.ctx, waitKey(key), c.lastEnd.Add(Backoff(k-1))); err != nil {
				return err
			}
		}
		sc := r.stepContext(s.Name, k)
		sc.Compensation, sc.FailedStep, sc.Failure = true, cause.Name, cause.lastErr
		_, err := ow.Run(r.ctx, key, func(ctx context.Context) (json.RawMessage, error) {
			return callHandler(ctx, h, s.Compensate, sc)
		})
		if err == nil {
			c.done = true
			return nil
		}
		var se *ow.StepError
		if !errors.As(err, &se) {
			return err
		}
		rec, ok := ow.LookupStep(r.ctx, key)
		if !ok || rec.Status != ow.StepFailed {
			rec = ow.StepRecord{Status: ow.StepFailed, Error: asStoredError(se.Err), FinishedAt: r.e.now()}
		}
		if c.note(k, rec) {
			break
		}
	}
	c.failed = true
	return nil
}

// note records that compensation attempt k failed as rec says and reports
// whether the failure is final by its code (a spent budget ends the loop).
func (c *compensation) note(k int, rec ow.StepRecord) (final bool) {
	c.attempts, c.lastErr, c.lastEnd = k, rec.Error, rec.FinishedAt
	if c.lastErr == nil {
		c.lastErr = &ow.Error{Name: "Error", Message: "unknown error"}
	}
	return c.lastErr.Code == CodeNonRetryable
}

// finalError is the error the run fails with once compensation is over:
// a CompensatedError (code COMPENSATED) naming the failed step and the
// compensations when every compensation completed, a
// CompensationFailedError (code COMPENSATION_FAILED) naming those that
// failed for good when at least one did, a StepFailedError (code
// STEP_FAILED) when there was nothing to compensate. All are
// non-retryable: the run is over.
func (r *run) finalError() error {
	cause := r.cause()
	msg := fmt.Sprintf("step %q failed after %d attempt%s: %s", cause.Name, cause.attempts, plural(cause.attempts), cause.lastErr.Message)
	var done, failed []string
	for _, s := range r.compensationOrder() {
		switch {
		case s.compensate.done:
			done = append(done, s.Name)
		case s.compensate.failed:
			failed = append(failed, fmt.Sprintf("%s (after %d attempt%s: %s)", s.Name, s.compensate.attempts, plural(s.compensate.attempts), s.compensate.lastErr.Message))
		}
	}
	if len(done)+len(failed) == 0 {
		return ow.NonRetryable(&ow.Error{Name: "StepFailedError", Message: msg, Code: CodeStepFailed})
	}
	if len(done) > 0 {
		msg += "; compensated: " + strings.Join(done, ", ")
	}
	if len(failed) > 0 {
		msg += "; compensation failed: " + strings.Join(failed, ", ")
		return ow.NonRetryable(&ow.Error{Name: "CompensationFailedError", Message: msg, Code: CodeCompensationFailed})
	}
	return ow.NonRetryable(&ow.Error{Name: "CompensatedError", Message: msg, Code: CodeCompensated})
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
