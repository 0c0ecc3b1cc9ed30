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

	"go.opentelemetry.io/otel/trace"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/groupcommit"
	"github.com/openworkflow-go/openworkflow/internal/history"
	"github.com/openworkflow-go/openworkflow/internal/id"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// StepLimit is the maximum number of step attempts (every kind, retries
// included) a run may record; the attempt that would exceed it fails the
// run with a [StepLimitExceededError], as in OpenWorkflow.
const StepLimit = history.StepLimit

// Causes of a pass context's cancellation.
var (
	errCauseCanceled  = errors.New("workflow run was canceled")
	errCauseLeaseLost = errors.New("workflow run lease lost")
	errCauseShutdown  = errors.New("worker shutting down")
	errCauseDeadline  = errors.New("workflow run deadline exceeded")
	errCauseLost      = errors.New("workflow run lost: a backend call of its pass failed")
)

// loss says why a pass stopped owning its run, and so what the worker does
// with the run when the pass ends (see Worker.settle).
type loss int

const (
	// notLost: the pass still owns its run.
	notLost loss = iota
	// lossFenced: the run is no longer ours (canceled, lease moved, the pass
	// canceled): nothing to do.
	lossFenced
	// lossUnavailable: a backend call failed for another reason (a lost
	// connection, a database restarting): whatever the pass did not commit
	// is lost, and the run is handed back as soon as the database answers,
	// not when its lease expires.
	lossUnavailable
	// lossUnrecordable: the backend refused a write as invalid
	// (backend.ErrInvalidArgument), so writing it again would fail again:
	// the run fails, with an error saying what could not be recorded.
	lossUnrecordable
	// lossDeadline: the run's deadline passed while the pass executed: the
	// run fails with the deadline error at once, whatever its steps do.
	lossDeadline
)

// pass is one execution pass of one claimed run: the replay of the
// workflow function from the top against the run's step history.
type pass struct {
	b        backend.Backend
	now      func() time.Time
	log      *slog.Logger
	run      *backend.WorkflowRun
	workerID string
	info     RunInfo
	hist     *history.History

	ctx    context.Context
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	suspended bool
	paused    bool // the run was found paused (see pause)
	wakeAt    time.Time
	lost      loss  // why the pass stopped owning its run (notLost while it owns it)
	lostErr   error // the backend error behind lossUnavailable and lossUnrecordable
	closed    bool
	branches  sync.WaitGroup
	writes    *groupcommit.Pass // the pass's deferred writes and groups in flight
	commit    *groupcommit.Committer

	runningStepAfter time.Duration
	tr               tracing
	span             trace.Span        // the pass's workflow_run.execute span
	m                telemetry.Metrics // nil: not measured
	outcome          string            // how the pass ended, for m (set by Worker.finish)

	releaseOnce sync.Once
	expireOnce  sync.Once

	// Abandonment (worker_abandon.go); inUser, abandoned and slow are
	// guarded by mu.
	leased    time.Time    // when the claim that leased the run was sent (real time): the lease runs from no earlier
	endSlot   func()       // frees the pass's slot: called once, when the pass ends or is abandoned
	began     time.Time    // when the pass began (real time), for m; zero without m
	inUser    bool         // the pass is running its user code
	abandoned *abandonment // set when the worker abandoned the user code
	slow      []slowStep   // step functions running longer than runningStepAfter

	// Updates (update.go); guarded by mu.
	updateHandlers   map[string]*updateHandler // declared by HandleUpdate in this pass
	wokenEarly       bool                      // claimed before any of its waits came due
	validating       bool                      // an update validator is running
	validatorStepped bool                      // ... and called a step
}

// suspend records that the pass must park until at (the earliest of all
// requested wake-ups wins).
func (x *pass) suspend(at time.Time) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.suspended || at.Before(x.wakeAt) {
		x.wakeAt = at
	}
	x.suspended = true
	return ErrSuspended
}

// pause records that the run was paused while this pass executes it (the
// pause was announced, Worker.notePause, or the heartbeat learned it:
// backend.ErrRunPaused). It is a suspension due at now: the step in
// progress finishes and is recorded, every later step call returns
// ErrSuspended without running, and the pass ends by parking the run due
// now, which hands it back (the backend holds that due time until the run
// is resumed). Once the workflow function has returned, its outcome
// stands (completing a run starts no step): the pause only holds the run
// afterwards, if it is not terminal. It reports whether this was news.
func (x *pass) pause(now time.Time) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	seen := x.paused
	x.paused = true
	if !x.closed && (!x.suspended || now.Before(x.wakeAt)) {
		x.wakeAt = now
		x.suspended = true
	}
	return !seen
}

// gate says whether a step may start new work: ErrLeaseLost once the run is
// no longer ours, ErrSuspended once the pass is parking, an error once the
// workflow function has returned (a step called from a goroutine the
// workflow left behind), a *StepLimitExceededError at the cap, else nil. A
// branch admitted by [pass.admit] (Go, GoWorkflow) passes the
// suspended and returned checks: it was started before the pass parked or
// returned, so it runs to its end, which the pass awaits.
func (x *pass) gate(admitted bool) error {
	if err := x.blocked(admitted); err != nil {
		return err
	}
	if n := x.hist.Count(); n >= StepLimit {
		return &StepLimitExceededError{Limit: StepLimit, StepCount: n}
	}
	return nil
}

// admit reports whether a parallel branch started now may run: not once
// the pass is parking or has returned (the branch's Get then returns the
// reason, and the branch starts on the next pass).
func (x *pass) admit() error { return x.blocked(false) }

// blocked is the ownership, parking and return checks of gate and admit.
func (x *pass) blocked(admitted bool) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case x.lost != notLost || x.ctx.Err() != nil:
		return ErrLeaseLost
	case x.validating:
		x.validatorStepped = true
		return errStepInValidator
	case admitted:
	case x.suspended:
		return ErrSuspended
	case x.closed:
		return errors.New("openworkflow: step started after the workflow function returned")
	}
	return nil
}

// markLost records that the pass no longer owns the run, and why (the
// first reason wins): nothing more of it is committed. The pass's context
// is canceled (when it has not ended already), so that the steps still
// running — parallel steps, say, when a sibling's write failed — stop
// rather than hold the slot, and user code ignoring it is abandoned
// (worker_abandon.go).
func (x *pass) markLost(why loss, err error) {
	x.mu.Lock()
	first := x.lost == notLost
	if first {
		x.lost, x.lostErr = why, err
	}
	x.mu.Unlock()
	if first {
		x.cancel(errCauseLost)
	}
}

func (x *pass) isLost() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.lost != notLost || x.ctx.Err() != nil
}

// lossOf returns why the pass lost its run (notLost if it did not) and the
// backend error behind it. A pass whose context ended without another
// reason was canceled: lossFenced, or lossDeadline for its deadline.
func (x *pass) lossOf() (loss, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lost == notLost && x.ctx.Err() != nil {
		if context.Cause(x.ctx) == errCauseDeadline {
			return lossDeadline, nil
		}
		return lossFenced, nil
	}
	return x.lost, x.lostErr
}

// backendErr interprets a failed backend call of the pass (op names it):
// the pass no longer owns its run, for the reason classifyLoss gives, and
// the error returned, which wraps ErrLeaseLost, is what step functions
// report to the workflow.
func (x *pass) backendErr(op string, err error) error {
	why := x.classifyLoss(err)
	x.markLost(why, err)
	switch why {
	case lossUnavailable:
		return fmt.Errorf("%s: %w: the backend failed (%w); the run is handed back as soon as it answers", op, ErrLeaseLost, err)
	case lossUnrecordable:
		return fmt.Errorf("%s: %w: the backend refused the write (%w); the run fails", op, ErrLeaseLost, err)
	}
	return fmt.Errorf("%s: %w (%w)", op, ErrLeaseLost, err)
}

// classifyLoss says why a failed backend call ends the pass: a fence
// refusal or the pass's own cancellation (lossFenced), an invalid write
// (lossUnrecordable), anything else (lossUnavailable).
func (x *pass) classifyLoss(err error) loss {
	switch {
	case errors.Is(err, backend.ErrNotOwner) || x.ctx.Err() != nil:
		return lossFenced
	case errors.Is(err, backend.ErrInvalidArgument):
		return lossUnrecordable
	}
	return lossUnavailable
}

// newAttempt makes the in-memory record of a new attempt (id chosen here,
// so writes can be batched without reading anything back) and counts it.
func (x *pass) newAttempt(key string, kind backend.StepKind, stepCtx any, status backend.StepStatus) *backend.StepAttempt {
	var raw json.RawMessage
	if stepCtx != nil {
		raw, _ = json.Marshal(stepCtx)
	}
	now := x.now().UTC()
	a := &backend.StepAttempt{
		NamespaceID: x.run.NamespaceID, ID: id.New(id.PrefixStep), WorkflowRunID: x.run.ID,
		StepName: key, Kind: kind, Status: status, Config: json.RawMessage("{}"), Context: raw,
		StartedAt: &now, CreatedAt: now, UpdatedAt: now,
	}
	x.hist.Record(a)
	return a
}

// createAttempt records a new running attempt of the given kind and waits
// for its commit (children, signals and sleeps need the row to exist);
// admitted is true for a branch admitted when it was started.
func (x *pass) createAttempt(key string, kind backend.StepKind, stepCtx any, admitted bool) (*backend.StepAttempt, error) {
	if err := x.gate(admitted); err != nil {
		return nil, err
	}
	a := x.newAttempt(key, kind, stepCtx, backend.StepRunning)
	if err := x.write(x.insertWrite(a)); err != nil {
		return nil, fmt.Errorf("create step %q: %w", key, err)
	}
	return a, nil
}

func (x *pass) insertWrite(a *backend.StepAttempt) backend.Write {
	return backend.Write{Kind: backend.WriteInsertStep, WorkflowRunID: x.run.ID, WorkerID: x.workerID, Step: a}
}

// finished returns a copy of a in a terminal status.
func (x *pass) finished(a *backend.StepAttempt, status backend.StepStatus, output, errJSON json.RawMessage) *backend.StepAttempt {
	now := x.now().UTC()
	f := *a
	f.Status, f.Output, f.Error, f.FinishedAt, f.UpdatedAt = status, output, errJSON, &now, now
	if status == backend.StepCompleted && len(f.Output) == 0 {
		f.Output = json.RawMessage("null")
	}
	return &f
}

// completeAttempt records a running attempt's completion. The write is
// deferred: it is committed with the pass's next write (the next step, the
// run's transition), before any further user step code runs.
func (x *pass) completeAttempt(a *backend.StepAttempt, output json.RawMessage) {
	x.finishAttempt(x.finished(a, backend.StepCompleted, output, nil), true)
}

// failAttempt records a running attempt's failure, deferred like
// completeAttempt.
func (x *pass) failAttempt(a *backend.StepAttempt, cause error) {
	x.finishAttempt(x.finished(a, backend.StepFailed, nil, encodeError(cause)), true)
}

// completeElapsedSleep records the completion of a durable sleep whose
// time has passed. Unlike completeAttempt's, the write does not hold up
// the next step (eager false): it is committed with the pass's next write
// that is committed anyway (the next step's record, the run's transition).
// Nothing depends on it being durable sooner: if it is lost in a crash,
// the next pass finds the sleep running with its wake-up time in the past
// and completes it again, with the same (empty) result. A woken run's pass
// thus costs one commit, not two.
func (x *pass) completeElapsedSleep(a *backend.StepAttempt) {
	x.finishAttempt(x.finished(a, backend.StepCompleted, nil, nil), false)
}

// finishAttempt buffers the write of a finished attempt and records it in
// the history; eager writes are committed before the next step runs (see
// groupcommit.Pass.Flush).
func (x *pass) finishAttempt(done *backend.StepAttempt, eager bool) {
	x.writes.Defer(backend.Write{Kind: backend.WriteFinishStep, WorkflowRunID: x.run.ID, WorkerID: x.workerID, Step: done}, eager)
	x.hist.Record(done)
}

// deferWrite buffers a write to be committed with the pass's next one.
// On the workflow's own goroutine that next write comes soon (the next
// step, a wait, or the run's transition, which then share a commit); a
// parallel branch, whose siblings may run for long, submits it at once
// without waiting for its commit.
func (x *pass) deferWrite(w backend.Write, branch bool) {
	x.writes.Defer(w, true)
	if branch {
		x.writes.FlushAsync()
	}
}

// write commits the buffered writes and ws as one group and waits for the
// commit, after every group the pass submitted before (see
// groupcommit.Pass.Write). A failed commit means the pass no longer owns
// the run (see backendErr): nothing more is committed, and the error
// returned wraps ErrLeaseLost.
func (x *pass) write(ws ...backend.Write) error {
	if err := x.writes.Write(ws...); err != nil {
		return x.lose(err)
	}
	return nil
}

// lose records that a write of the pass failed: the pass no longer owns
// the run (see backendErr).
func (x *pass) lose(err error) error { return x.backendErr("write", err) }

// flush is the barrier before a step's code runs: what earlier steps
// recorded is durable (see groupcommit.Pass.Flush).
func (x *pass) flush() error {
	if err := x.writes.Flush(); err != nil {
		return x.lose(err)
	}
	return nil
}

// announceIfSlow inserts a's running row if its step is still executing
// after runningStepAfter, so long steps show as running; fast steps never
// write it. The returned function stops the timer and reports whether the
// row was inserted (waiting for that insert's commit).
func (x *pass) announceIfSlow(a *backend.StepAttempt) func() (inserted bool, err error) {
	submitted := make(chan *groupcommit.Group, 1)
	row := *a
	t := time.AfterFunc(x.runningStepAfter, func() {
		x.noteSlow(row.ID, row.StepName, time.Now().Add(-x.runningStepAfter))
		if x.isLost() {
			// Nothing more of a lost pass is written (its step may run on,
			// abandoned, long after the worker stopped).
			submitted <- nil
			return
		}
		submitted <- x.commit.Submit([]backend.Write{x.insertWrite(&row)})
	})
	return func() (bool, error) {
		if t.Stop() {
			return false, nil
		}
		g := <-submitted
		x.slowDone(row.ID)
		if g == nil {
			return false, nil // the pass is lost: its caller records nothing
		}
		if err := g.Wait(); err != nil {
			return true, x.lose(err)
		}
		return true, nil
	}
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
// OpenWorkflow's sleep pre-pass; the pass is then suspended until the
// earliest wake-up of its waits.
func (x *pass) prePass() (park bool) {
	now := x.now()
	for _, a := range x.hist.RunningWaits(backend.StepSleep) {
		at, ok := waitTime(a)
		if ok && now.Before(at) {
			park = true
			continue
		}
		x.completeElapsedSleep(a)
	}
	if !park {
		return false
	}
	_ = x.suspend(x.earliestWait()) // a pending sleep makes it non-zero
	return true
}

// earliestWait is the earliest time one of the run's running waits (a
// sleep's wake-up, a child's or a signal's timeout) comes due; zero when
// none has one.
func (x *pass) earliestWait() time.Time {
	var due time.Time
	for _, a := range x.hist.RunningWaits(backend.StepSleep, backend.StepWorkflow, backend.StepSignalWait, backend.StepHookWait, backend.StepEventWait) {
		if at, ok := waitTime(a); ok && (due.IsZero() || at.Before(due)) {
			due = at
		}
	}
	return due
}

// waitContext is the JSON context of a waiting step attempt, as written by
// OpenWorkflow: {"kind":"sleep","resumeAt"}, {"kind":"workflow","timeoutAt"},
// {"kind":"signal-wait","signal","timeoutAt"}.
type waitContext struct {
	Kind      string  `json:"kind"`
	ResumeAt  string  `json:"resumeAt,omitempty"`
	TimeoutAt *string `json:"timeoutAt,omitempty"`
	Signal    string  `json:"signal,omitempty"`
	// HookID and AfterSeq are a hook wait's (this SDK's own kind
	// {"kind":"hook-wait","hookId","afterSeq","timeoutAt"}): the hook, and
	// the sequence number of the payload its previous receive returned.
	HookID   string `json:"hookId,omitempty"`
	AfterSeq int64  `json:"afterSeq,omitempty"`
}

// decodeWaitContext reads a wait attempt's context.
func decodeWaitContext(a *backend.StepAttempt) (waitContext, bool) {
	var c waitContext
	return c, json.Unmarshal(a.Context, &c) == nil
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
