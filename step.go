package openworkflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// StepOption configures one step call.
type StepOption func(*stepOptions)

type stepOptions struct {
	retry *RetryPolicy
}

// WithRetryPolicy sets the retry policy of a [Run] or [Go] step. Its budget
// counts the failed attempts of the step's durable key; durable sleeps and
// lease churn never consume it. Zero or invalid intervals and coefficient
// take [DefaultStepRetryPolicy]'s values; MaximumAttempts 0 means
// unlimited.
func WithRetryPolicy(p RetryPolicy) StepOption {
	return func(o *stepOptions) { o.retry = &p }
}

func stepPolicy(opts []StepOption) *RetryPolicy {
	var o stepOptions
	for _, f := range opts {
		f(&o)
	}
	p := DefaultStepRetryPolicy()
	if o.retry != nil {
		p = o.retry.withDefaults(DefaultStepRetryPolicy())
	}
	return &p
}

func execOf(ctx Context) (*pass, error) {
	if ctx == nil {
		return nil, ErrNotInWorkflow
	}
	x := ctx.exec()
	if x == nil {
		return nil, ErrNotInWorkflow
	}
	return x, nil
}

// Run executes fn as a durable step named name and returns its result.
//
// The first pass that reaches the step runs fn and records its JSON-encoded
// result; every later replay returns the recorded result without running
// fn (the value returned is always the JSON round-trip of fn's result, on
// the first pass as on replays). Steps are at-least-once: a crash after fn
// returns but before its result is recorded runs fn again.
//
// fn receives a context canceled when the run is canceled, the lease is
// lost or the worker shuts down. If fn returns an error (or panics), the
// attempt is recorded failed and Run returns a *[StepError]; returning it
// from the workflow retries the run after the step's backoff
// ([DefaultStepRetryPolicy] unless [WithRetryPolicy]), and fails the run
// once the budget is spent. Wrap an error with [NonRetryable] to fail at
// once.
//
// Repeated names get distinct durable keys in call order: name, name:1,
// name:2, … (shared with every other step kind).
func Run[T any](ctx Context, name string, fn func(ctx context.Context) (T, error), opts ...StepOption) (T, error) {
	var zero T
	x, err := execOf(ctx)
	if err != nil {
		return zero, err
	}
	key := x.hist.Resolve(name)
	return runFunction(x, key, fn, stepPolicy(opts), false)
}

func runFunction[T any](x *pass, key string, fn func(context.Context) (T, error), policy *RetryPolicy, admitted bool) (T, error) {
	var zero T
	if a, ok := x.hist.Completed(key); ok {
		return decodeOutput[T](key, a.Output)
	}
	if err := x.gate(admitted); err != nil {
		return zero, err
	}
	// Barrier: what earlier steps recorded is durable before user code runs.
	if err := x.flush(); err != nil {
		return zero, err
	}
	a := x.newAttempt(key, backend.StepFunction, nil, backend.StepRunning)
	slow := x.announceIfSlow(a)
	sctx, span := x.tr.start(x.ctx, telemetry.SpanStepAttemptExecute, trace.WithAttributes(
		telemetry.AttrRunID.String(x.run.ID), telemetry.AttrStepName.String(key), telemetry.AttrWorkflowName.String(x.run.WorkflowName)))
	scope := &stepScope{x: x, attemptID: a.ID}
	sctx = withStepScope(sctx, scope)
	var began time.Time
	if x.m != nil {
		began = time.Now()
	}
	// The step's result is encoded (its MarshalJSON is user code too) and
	// checked storable inside the same protection as the function.
	raw, ferr := callProtected(func() (json.RawMessage, error) {
		out, err := fn(sctx)
		if errors.Is(err, ErrContinuedAsNew) {
			return nil, NonRetryable(fmt.Errorf("step %q returned ow.ContinueAsNew: return it from the workflow function, not from a step (%w)", key, err))
		}
		if err != nil {
			return nil, err
		}
		raw, err := marshalValue(out)
		if err != nil {
			return nil, NonRetryable(fmt.Errorf("encode result of step %q: %w", key, err))
		}
		if err := backend.ValidateJSON(raw); err != nil {
			return nil, NonRetryable(fmt.Errorf("result of step %q cannot be stored: %w", key, err))
		}
		return raw, nil
	})
	scope.end()
	if x.m != nil {
		status := backend.StepCompleted
		if ferr != nil {
			status = backend.StepFailed
		}
		x.m.ObserveStep(x.run.WorkflowName, string(status), time.Since(began))
	}
	recordError(span, ferr)
	span.End()
	inserted, err := slow()
	if err != nil {
		return zero, fmt.Errorf("step %q: %w", key, err)
	}
	if x.isLost() {
		// Canceled, expired, or taken over while the step ran: nothing of
		// it is recorded, and the workflow goes no further.
		return zero, fmt.Errorf("step %q: %w", key, ErrLeaseLost)
	}
	// One write per fast step: the attempt is inserted already finished,
	// with the pass's next write. A slow step's running row is finished.
	var f *backend.StepAttempt
	var fail failure
	if ferr == nil {
		f = x.finished(a, backend.StepCompleted, raw, nil)
	} else {
		fail = describeFailure(ferr) // the user's error value is read once, safely
		f = x.finished(a, backend.StepFailed, nil, fail.stored)
	}
	w := x.insertWrite(f)
	if inserted {
		w.Kind = backend.WriteFinishStep
	}
	x.deferWrite(w, admitted)
	x.hist.Record(f)
	if ferr == nil {
		return decodeOutput[T](key, raw)
	}
	if fail.class == failFinal {
		policy = nil
	}
	return zero, &StepError{StepName: key, Err: ferr, policy: policy, stored: fail.stored}
}

func decodeOutput[T any](key string, raw json.RawMessage) (T, error) {
	var v T
	if len(raw) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, NonRetryable(fmt.Errorf("decode recorded result of step %q into %s: %w", key, reflect.TypeFor[T](), err))
	}
	return v, nil
}

// Future is the pending result of a step started with [Go] or
// [GoWorkflow].
type Future[T any] struct {
	x    *pass
	done chan struct{}
	val  T
	err  error
}

// Get waits for the step and returns its result, as the blocking form of
// the step would. Before it blocks, what the workflow recorded so far is
// submitted for commit, so a long wait holds back nobody's durability.
func (f *Future[T]) Get() (T, error) {
	if f.x != nil {
		select {
		case <-f.done:
		default:
			f.x.writes.FlushAsync()
		}
	}
	<-f.done
	return f.val, f.err
}

// Go starts fn as a durable step running concurrently with the workflow and
// the other steps, and returns its future. The durable key is assigned
// here, at the call site, in call order, so parallel steps replay
// deterministically; otherwise it behaves as [Run]. The pass does not end
// before every started step has returned.
func Go[T any](ctx Context, name string, fn func(ctx context.Context) (T, error), opts ...StepOption) *Future[T] {
	f := &Future[T]{done: make(chan struct{})}
	x, err := execOf(ctx)
	if err != nil {
		f.err = err
		close(f.done)
		return f
	}
	key := x.hist.Resolve(name)
	policy := stepPolicy(opts)
	goBranch(x, f, func(admitted bool) (T, error) { return runFunction(x, key, fn, policy, admitted) })
	return f
}

// goBranch runs f on a goroutine owned by the pass, if the pass admits a
// new branch now (else the future fails with the reason, e.g.
// ErrSuspended).
func goBranch[T any](x *pass, fut *Future[T], f func(admitted bool) (T, error)) {
	if err := x.admit(); err != nil {
		fut.err = err
		close(fut.done)
		return
	}
	fut.x = x
	x.branches.Add(1)
	go func() {
		defer x.branches.Done()
		defer close(fut.done)
		fut.val, fut.err = callProtected(func() (T, error) { return f(true) })
	}()
}

// Sleep pauses the workflow durably for d. The first pass records the
// wake-up time and returns [ErrSuspended]: return it, and the run parks
// without holding a goroutine or a worker slot until then. Passes after the
// wake-up return nil at once. A d <= 0 still records the step.
func Sleep(ctx Context, name string, d time.Duration) error {
	x, err := execOf(ctx)
	if err != nil {
		return err
	}
	return sleepKey(x, x.hist.Resolve(name), func(now time.Time) time.Time { return now.Add(d) }, false)
}

// SleepUntil pauses the workflow durably until t, by the worker's clock
// (WorkerOptions.Now): [Sleep] with the wake-up given as a time. The first
// pass that reaches it records t and, while t is ahead, returns
// [ErrSuspended]: return it, and the run parks, holding no slot, until t.
// A t that is not after the worker's clock is recorded as a completed
// sleep, committed with the pass's next write, and SleepUntil returns nil
// without parking. Passes after the wake-up return nil at once; the t
// recorded first wins over the t given by later passes.
//
// It is meant for waits whose deadline comes from recorded data, such as
// a retry due a backoff after the recorded end of a failed attempt (the
// dag package's step retries).
func SleepUntil(ctx Context, name string, t time.Time) error {
	x, err := execOf(ctx)
	if err != nil {
		return err
	}
	return sleepKey(x, x.hist.Resolve(name), func(time.Time) time.Time { return t }, true)
}

// sleepKey is the durable sleep of key until wake(now) of the pass that
// first reaches it. With completePast, a wake-up not after now is recorded
// completed at once instead of parking the run until then.
func sleepKey(x *pass, key string, wake func(now time.Time) time.Time, completePast bool) error {
	if _, ok := x.hist.Completed(key); ok {
		return nil
	}
	now := x.now()
	if a, ok := x.hist.Running(key); ok {
		at, valid := waitTime(a)
		if valid && now.Before(at) {
			return x.suspend(at)
		}
		x.completeElapsedSleep(a)
		return nil
	}
	at := wake(now)
	if err := x.gate(false); err != nil {
		return err
	}
	stepCtx := waitContext{Kind: "sleep", ResumeAt: backend.FormatTime(at)}
	if completePast && !now.Before(at) {
		// Nothing waits on its commit (see completeElapsedSleep).
		a := x.newAttempt(key, backend.StepSleep, stepCtx, backend.StepRunning)
		done := x.finished(a, backend.StepCompleted, nil, nil)
		x.writes.Defer(x.insertWrite(done), false)
		x.hist.Record(done)
		return nil
	}
	// The sleep's row is committed with the park, in one write.
	a := x.newAttempt(key, backend.StepSleep, stepCtx, backend.StepRunning)
	x.deferWrite(x.insertWrite(a), false)
	return x.suspend(at)
}
