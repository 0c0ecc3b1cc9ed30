package openworkflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/replay"
)

// StepLimit is the maximum number of step attempts (every kind, retries
// included) a run may record; the attempt that would exceed it fails the
// run with a [StepLimitExceededError], as in OpenWorkflow.
const StepLimit = replay.StepLimit

// Causes of a pass context's cancellation.
var (
	errCauseCanceled  = errors.New("workflow run was canceled")
	errCauseLeaseLost = errors.New("workflow run lease lost")
	errCauseShutdown  = errors.New("worker shutting down")
)

// execution is one execution pass of one claimed run: the replay of the
// workflow function from the top against the run's step history.
type execution struct {
	b        backend.Backend
	now      func() time.Time
	log      *slog.Logger
	run      *backend.WorkflowRun
	workerID string
	info     RunInfo
	hist     *replay.History

	ctx    context.Context
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	suspended bool
	wakeAt    time.Time
	lost      bool
	closed    bool
	branches  sync.WaitGroup

	releaseOnce sync.Once
}

// suspend records that the pass must park until at (the earliest of all
// requested wake-ups wins).
func (x *execution) suspend(at time.Time) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.suspended || at.Before(x.wakeAt) {
		x.wakeAt = at
	}
	x.suspended = true
	return ErrSuspended
}

// gate says whether a step may start new work: ErrLeaseLost once the run is
// no longer ours, ErrSuspended once the pass is parking, an error once the
// workflow function has returned (a step called from a goroutine the
// workflow left behind), else nil. A branch admitted by [execution.admit]
// (Go, GoWorkflow) passes the last two checks: it was started before the
// pass parked or returned, so it runs to its end, which the pass awaits.
func (x *execution) gate(admitted bool) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case x.lost || x.ctx.Err() != nil:
		return ErrLeaseLost
	case admitted:
	case x.suspended:
		return ErrSuspended
	case x.closed:
		return errors.New("openworkflow: step started after the workflow function returned")
	}
	if n := x.hist.Count(); n >= StepLimit {
		return &StepLimitExceededError{Limit: StepLimit, StepCount: n}
	}
	return nil
}

func (x *execution) isLost() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.lost || x.ctx.Err() != nil
}

// writeErr interprets a failed backend write: a fence refusal (or a
// canceled pass) means the run is no longer ours.
func (x *execution) writeErr(op string, err error) error {
	if errors.Is(err, backend.ErrNotOwner) || x.ctx.Err() != nil {
		x.mu.Lock()
		x.lost = true
		x.mu.Unlock()
		return fmt.Errorf("%s: %w", op, ErrLeaseLost)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// admit reports whether a parallel branch started now may run: not once
// the pass is parking or has returned (the branch's Get then returns
// ErrSuspended, and the branch starts on the next pass).
func (x *execution) admit() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case x.lost || x.ctx.Err() != nil:
		return ErrLeaseLost
	case x.suspended:
		return ErrSuspended
	case x.closed:
		return errors.New("openworkflow: step started after the workflow function returned")
	}
	return nil
}

// createAttempt records a new running attempt of the given kind; admitted
// is true for a branch admitted when it was started.
func (x *execution) createAttempt(key string, kind backend.StepKind, stepCtx any, admitted bool) (*backend.StepAttempt, error) {
	if err := x.gate(admitted); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if stepCtx != nil {
		raw, _ = json.Marshal(stepCtx)
	}
	a, err := x.b.CreateStepAttempt(x.ctx, backend.CreateStepAttemptParams{
		WorkflowRunID: x.run.ID, WorkerID: x.workerID, StepName: key, Kind: kind, Context: raw,
	})
	if err != nil {
		return nil, x.writeErr(fmt.Sprintf("create step %q", key), err)
	}
	x.hist.Record(a)
	return a, nil
}

func (x *execution) completeAttempt(a *backend.StepAttempt, output json.RawMessage) error {
	done, err := x.b.CompleteStepAttempt(x.ctx, backend.CompleteStepAttemptParams{
		WorkflowRunID: x.run.ID, StepAttemptID: a.ID, WorkerID: x.workerID, Output: output,
	})
	if err != nil {
		return x.writeErr(fmt.Sprintf("complete step %q", a.StepName), err)
	}
	x.hist.Record(done)
	return nil
}

func (x *execution) failAttempt(a *backend.StepAttempt, cause error) error {
	failed, err := x.b.FailStepAttempt(x.ctx, backend.FailStepAttemptParams{
		WorkflowRunID: x.run.ID, StepAttemptID: a.ID, WorkerID: x.workerID, Error: encodeError(cause),
	})
	if err != nil {
		return x.writeErr(fmt.Sprintf("fail step %q", a.StepName), err)
	}
	x.hist.Record(failed)
	return nil
}

// callProtected runs f, turning a panic into a *PanicError with the stack.
func callProtected[T any](f func() (T, error)) (out T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	return f()
}

// prePass completes elapsed durable sleeps and reports whether the run must
// park again without running user code (a sleep still pending), as in
// OpenWorkflow's sleep pre-pass.
func (x *execution) prePass() (park bool, wakeAt time.Time, err error) {
	now := x.now()
	for _, a := range x.hist.RunningWaits(backend.StepSleep) {
		at, ok := waitTime(a)
		if ok && now.Before(at) {
			park = true
			continue
		}
		if err := x.completeAttempt(a, nil); err != nil {
			return false, time.Time{}, err
		}
	}
	if !park {
		return false, time.Time{}, nil
	}
	for _, a := range x.hist.RunningWaits(backend.StepSleep, backend.StepWorkflow, backend.StepSignalWait) {
		if at, ok := waitTime(a); ok && (wakeAt.IsZero() || at.Before(wakeAt)) {
			wakeAt = at
		}
	}
	return true, wakeAt, nil
}

// waitContext is the JSON context of a waiting step attempt, as written by
// OpenWorkflow: {"kind":"sleep","resumeAt"}, {"kind":"workflow","timeoutAt"},
// {"kind":"signal-wait","signal","timeoutAt"}.
type waitContext struct {
	Kind      string  `json:"kind"`
	ResumeAt  string  `json:"resumeAt,omitempty"`
	TimeoutAt *string `json:"timeoutAt,omitempty"`
	Signal    string  `json:"signal,omitempty"`
}

// waitTime returns when a running wait attempt is due.
func waitTime(a *backend.StepAttempt) (time.Time, bool) {
	var c waitContext
	if err := json.Unmarshal(a.Context, &c); err != nil {
		return time.Time{}, false
	}
	s := c.ResumeAt
	if c.TimeoutAt != nil {
		s = *c.TimeoutAt
	}
	if s == "" {
		return time.Time{}, false
	}
	t, err := backend.ParseTime(s)
	return t, err == nil
}
