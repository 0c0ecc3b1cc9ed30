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
	"github.com/openworkflow-go/openworkflow/internal/id"
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
	buffer    []backend.Write // deferred writes, committed with the next write
	eager     int             // buffered writes the next step must see durable (not completeElapsedSleep's)
	inflight  []*writeGroup   // groups submitted and not known applied; later groups wait for them
	commit    *committer

	runningStepAfter time.Duration
	tr               tracing
	span             trace.Span // the pass's workflow_run.execute span

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
// workflow left behind), a *StepLimitExceededError at the cap, else nil. A
// branch admitted by [execution.admit] (Go, GoWorkflow) passes the
// suspended and returned checks: it was started before the pass parked or
// returned, so it runs to its end, which the pass awaits.
func (x *execution) gate(admitted bool) error {
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
func (x *execution) admit() error { return x.blocked(false) }

// blocked is the ownership, parking and return checks of gate and admit.
func (x *execution) blocked(admitted bool) error {
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
	return nil
}

// markLost records that the pass no longer owns the run: nothing more of
// it is committed.
func (x *execution) markLost() {
	x.mu.Lock()
	x.lost = true
	x.mu.Unlock()
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
		x.markLost()
		return fmt.Errorf("%s: %w", op, ErrLeaseLost)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// newAttempt makes the in-memory record of a new attempt (id chosen here,
// so writes can be batched without reading anything back) and counts it.
func (x *execution) newAttempt(key string, kind backend.StepKind, stepCtx any, status backend.StepStatus) *backend.StepAttempt {
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
func (x *execution) createAttempt(key string, kind backend.StepKind, stepCtx any, admitted bool) (*backend.StepAttempt, error) {
	if err := x.gate(admitted); err != nil {
		return nil, err
	}
	a := x.newAttempt(key, kind, stepCtx, backend.StepRunning)
	if err := x.write(x.insertWrite(a)); err != nil {
		return nil, fmt.Errorf("create step %q: %w", key, err)
	}
	return a, nil
}

func (x *execution) insertWrite(a *backend.StepAttempt) backend.Write {
	return backend.Write{Kind: backend.WriteInsertStep, WorkflowRunID: x.run.ID, WorkerID: x.workerID, Step: a}
}

// finished returns a copy of a in a terminal status.
func (x *execution) finished(a *backend.StepAttempt, status backend.StepStatus, output, errJSON json.RawMessage) *backend.StepAttempt {
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
func (x *execution) completeAttempt(a *backend.StepAttempt, output json.RawMessage) {
	x.finishAttempt(x.finished(a, backend.StepCompleted, output, nil), true)
}

// failAttempt records a running attempt's failure, deferred like
// completeAttempt.
func (x *execution) failAttempt(a *backend.StepAttempt, cause error) {
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
func (x *execution) completeElapsedSleep(a *backend.StepAttempt) {
	x.finishAttempt(x.finished(a, backend.StepCompleted, nil, nil), false)
}

// finishAttempt buffers the write of a finished attempt and records it in
// the history; eager writes are committed before the next step runs (see
// flush).
func (x *execution) finishAttempt(done *backend.StepAttempt, eager bool) {
	w := backend.Write{Kind: backend.WriteFinishStep, WorkflowRunID: x.run.ID, WorkerID: x.workerID, Step: done}
	if eager {
		x.deferWrite(w, false)
	} else {
		x.mu.Lock()
		x.buffer = append(x.buffer, w)
		x.mu.Unlock()
	}
	x.hist.Record(done)
}

// deferWrite buffers a write to be committed with the pass's next one.
// On the workflow's own goroutine that next write comes soon (the next
// step, a wait, or the run's transition, which then share a commit); a
// parallel branch, whose siblings may run for long, submits it at once
// without waiting (see flushAsync).
func (x *execution) deferWrite(w backend.Write, branch bool) {
	x.mu.Lock()
	x.buffer = append(x.buffer, w)
	x.eager++
	x.mu.Unlock()
	if branch {
		x.flushAsync()
	}
}

// flushAsync submits the buffered writes for a group commit without
// waiting for it; later writes of the pass wait for them.
func (x *execution) flushAsync() {
	x.mu.Lock()
	if len(x.buffer) == 0 {
		x.mu.Unlock()
		return
	}
	g, prior := x.enter(x.buffer)
	x.buffer, x.eager = nil, 0
	x.mu.Unlock()
	if len(prior) == 0 {
		x.commit.enqueue(g)
		return
	}
	// Applied only after every earlier group: the pass awaits this
	// goroutine like a branch.
	x.branches.Add(1)
	go func() {
		defer x.branches.Done()
		x.submitAfter(g, prior)
	}()
}

// enter registers a new group of ws as the pass's latest and returns it
// with the groups submitted before it that are not known applied yet.
// x.mu must be held.
func (x *execution) enter(ws []backend.Write) (g *writeGroup, prior []*writeGroup) {
	live := x.inflight[:0]
	for _, p := range x.inflight {
		select {
		case <-p.done:
		default:
			live = append(live, p)
		}
	}
	prior = append([]*writeGroup(nil), live...)
	g = newWriteGroup(ws)
	x.inflight = append(live, g)
	return g, prior
}

// submitAfter waits for the prior groups and then hands g to the
// committer; if a prior group failed, g fails with that error unapplied.
func (x *execution) submitAfter(g *writeGroup, prior []*writeGroup) {
	var errs []error
	for _, p := range prior {
		if err := p.wait(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		g.fail(errors.Join(errs...))
		return
	}
	x.commit.enqueue(g)
}

// write commits the buffered writes and ws as one group and waits for the
// commit, after every group the pass submitted before (by any goroutine of
// the pass): commits run concurrently, so a group is handed to the
// committer only once the earlier ones applied, and a step's code never
// runs before the results it may depend on are durable. A refused fence
// (or any failure to commit) means the pass no longer owns the run:
// nothing more is committed and ErrLeaseLost is returned.
func (x *execution) write(ws ...backend.Write) error {
	x.mu.Lock()
	g, prior := x.enter(append(x.buffer, ws...))
	x.buffer, x.eager = nil, 0
	x.mu.Unlock()
	if len(g.writes) == 0 {
		g.fail(nil)
		for _, p := range prior {
			if err := p.wait(); err != nil {
				return x.lose(err)
			}
		}
		return nil
	}
	x.submitAfter(g, prior)
	if err := g.wait(); err != nil {
		return x.lose(err)
	}
	return nil
}

// lose records that a write failed: the pass no longer owns the run.
func (x *execution) lose(err error) error {
	x.markLost()
	if errors.Is(err, backend.ErrNotOwner) || x.ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ErrLeaseLost, err)
	}
	x.log.Error("openworkflow: write failed; abandoning the pass (the run is retried when its lease expires)", "run", x.run.ID, "error", err)
	return fmt.Errorf("%w: write failed: %v", ErrLeaseLost, err)
}

// flush is the barrier before a step's code runs: what earlier steps
// recorded is durable. It commits the buffered writes and waits for the
// pass's groups in flight; buffered writes that nothing depends on (see
// completeElapsedSleep) alone are left for the next write.
func (x *execution) flush() error {
	x.mu.Lock()
	if x.eager > 0 || len(x.buffer) == 0 {
		x.mu.Unlock()
		return x.write()
	}
	var prior []*writeGroup
	for _, p := range x.inflight {
		select {
		case <-p.done:
		default:
			prior = append(prior, p)
		}
	}
	x.mu.Unlock()
	for _, p := range prior {
		if err := p.wait(); err != nil {
			return x.lose(err)
		}
	}
	return nil
}

// announceIfSlow inserts a's running row if its step is still executing
// after runningStepAfter, so long steps show as running; fast steps never
// write it. The returned function stops the timer and reports whether the
// row was inserted (waiting for that insert's commit).
func (x *execution) announceIfSlow(a *backend.StepAttempt) func() (inserted bool, err error) {
	submitted := make(chan *writeGroup, 1)
	row := *a
	t := time.AfterFunc(x.runningStepAfter, func() {
		submitted <- x.commit.submit([]backend.Write{x.insertWrite(&row)})
	})
	return func() (bool, error) {
		if t.Stop() {
			return false, nil
		}
		if err := (<-submitted).wait(); err != nil {
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
func (x *execution) prePass() (park bool) {
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
func (x *execution) earliestWait() time.Time {
	var due time.Time
	for _, a := range x.hist.RunningWaits(backend.StepSleep, backend.StepWorkflow, backend.StepSignalWait) {
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
