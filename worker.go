package openworkflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/groupcommit"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// Worker claims runs from a backend and executes them: it replays each
// claimed run's workflow, records steps, heartbeats the lease, and parks,
// completes, fails or reschedules the run. Workers are stateless; run as
// many as you like against one backend.
type Worker struct {
	b      backend.Backend
	opts   WorkerOptions
	commit *groupcommit.Committer
	tr     tracing
	m      telemetry.Metrics // nil: not measured
	reg    registry
	log    *slog.Logger

	mu           sync.Mutex
	free         []string         // worker ids of free slots
	executing    map[string]*pass // by run id
	nextWake     time.Time        // earliest known wake-up of a run (parked here, or from NextDueAt)
	dueCheckedAt time.Time        // when NextDueAt was last asked
	dueStale     bool             // nextWake passed: the wake-up after it is unknown
	sweptAt      time.Time        // when a claim last ran the deadline sweep (real time)
	drained      bool             // the last claim got fewer runs than it asked for, all new starts (see claim)
	quarantined  []string         // worker ids of slots a failed claim may hold runs for (see quarantine)
	limits       workerLimits     // the limits of the registered workflows (limits.go)
	started      bool
	stopping     bool                        // Stop began: no start claims a run for a slot here (worker_startclaim.go)
	startedAt    time.Time                   // when Start ran, by Now (the registry record's)
	stopObserved sync.Once                   // the worker's stop is reported to m once
	schedules    []backend.PutScheduleParams // put by Start (RegisterSchedules)

	scheduleWake chan struct{} // pokes scheduleLoop

	// pauseHints, guarded by mu, holds by run id the pauses announced for
	// a slot here before the run's pass began (notePause).
	pauseHints map[string]pauseHint

	abandoned   int           // passes whose user code was abandoned and has not returned (worker_abandon.go)
	saturated   bool          // the last claim was refused for MaxAbandonedSteps
	abandonedCh chan struct{} // closed when abandoned decreases; nil until Stop waits for it

	wake       chan struct{}
	hardCtx    context.Context // canceled when the grace period ends
	hardCancel context.CancelCauseFunc
	loopCancel context.CancelFunc
	loopDone   chan struct{}
	passes     sync.WaitGroup

	// unusable is closed, and unusableErr set, when a claim failed with an
	// error wrapping backend.ErrUnusable and the loop stopped (see Err).
	unusable    chan struct{}
	unusableErr error
}

// NewWorker returns a worker on b. Register workflows, then Start it (or
// call Run).
func NewWorker(b backend.Backend, opts WorkerOptions) *Worker {
	opts = opts.withDefaults()
	w := &Worker{b: b, opts: opts, log: opts.Logger, commit: groupcommit.New(b), tr: newTracing(opts.TracerProvider), m: opts.Metrics,
		executing: make(map[string]*pass), wake: make(chan struct{}, 1), scheduleWake: make(chan struct{}, 1), unusable: make(chan struct{})}
	if w.m != nil {
		w.commit.OnCommit = w.m.ObserveCommit
	}
	w.limits = workerLimits{perWorker: map[string]int{}, running: map[string]int{}}
	for i := opts.Concurrency - 1; i >= 0; i-- {
		w.free = append(w.free, fmt.Sprintf("%s/%d", opts.ID, i))
	}
	w.hardCtx, w.hardCancel = context.WithCancelCause(context.Background())
	return w
}

// Register adds workflow definitions. It returns an error wrapping
// [ErrAlreadyRegistered] for a name and version registered twice, or for a
// workflow made by [Declare].
func (w *Worker) Register(defs ...Definition) error { return w.reg.register(defs...) }

// Start puts the schedules registered on the worker
// ([Worker.RegisterSchedules]) and stores the limits its registered
// workflows declare ([Limits]), then begins claiming and executing runs,
// and firing the namespace's due schedule ticks, in the background, until
// [Worker.Stop]. ctx bounds only the start-up itself. It fails if the
// worker is already started, if its options cannot work together
// (HeartbeatInterval not shorter than LeaseDuration), if a schedule could
// not be put, or if a workflow's limits are invalid (an error wrapping
// backend.ErrInvalidArgument) or cannot be stored (backend.ErrNotSupported,
// or the backend's error).
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if started {
		return errors.New("openworkflow: worker already started")
	}
	if err := w.opts.validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := w.putSchedules(ctx); err != nil {
		return err
	}
	if err := w.startLimits(ctx); err != nil {
		return err
	}
	if err := w.startTriggers(ctx); err != nil {
		return err
	}
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return errors.New("openworkflow: worker already started")
	}
	w.started = true
	w.startedAt = w.opts.Now()
	loopCtx, cancel := context.WithCancel(context.Background())
	w.loopCancel = cancel
	w.loopDone = make(chan struct{})
	events, err := w.b.Subscribe(loopCtx)
	if err != nil && !errors.Is(err, backend.ErrNotSupported) {
		w.log.Warn("openworkflow: wake-up notifications unavailable; polling only", "error", err)
	}
	if w.m != nil {
		w.m.ObserveWorker(true, w.opts.Concurrency)
	}
	w.mu.Unlock()
	// Recorded before the loop starts, so that its heartbeats, and Stop's
	// draining and stopped (which wait for the loop), come after.
	w.putRecord(ctx, backend.WorkerRunning)
	go w.loop(loopCtx, events)
	addLocalWorker(w)
	return nil
}

// Run starts the worker and blocks until ctx is done, then stops it
// gracefully within ShutdownGracePeriod. It returns nil after a clean stop.
// It also stops, and returns the backend's error, when the backend
// reports itself unusable (an error wrapping [backend.ErrUnusable], such
// as a damaged SQLite file): see [Worker.Err].
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-w.unusable:
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), w.opts.ShutdownGracePeriod+10*time.Second)
	defer cancel()
	return errors.Join(w.Err(), w.Stop(stopCtx))
}

// Err returns nil while the worker claims runs, or after it was stopped;
// once a claim failed with an error wrapping [backend.ErrUnusable] (the
// backend can serve nothing more: a damaged SQLite file, for instance),
// it returns that error. The worker then claims no more runs and fires no
// more schedules, having logged the error once; the passes executing
// finish or fail as the backend lets them. Call [Worker.Stop] to release
// them.
func (w *Worker) Err() error {
	select {
	case <-w.unusable:
		return w.unusableErr
	default:
		return nil
	}
}

// stopUnusable ends the worker's loops on err, an error wrapping
// backend.ErrUnusable, once, saying why: retrying cannot succeed.
func (w *Worker) stopUnusable(err error) {
	w.log.Error("openworkflow: worker stopped claiming runs: the backend can no longer be used", "error", err)
	w.unusableErr = err
	close(w.unusable)
	w.mu.Lock()
	cancel := w.loopCancel
	w.mu.Unlock()
	cancel()
}

// Stop stops claiming, waits up to ShutdownGracePeriod (or ctx's end, if
// sooner) for executing passes to finish, then cancels the rest and
// releases their runs at once so another worker can take them, rather than
// leaving them to wait for their lease to expire. User code that ignores
// its canceled context is abandoned AbandonStepAfter later (see
// WorkerOptions.AbandonStepAfter), so Stop does not wait for it: it
// returns, within ShutdownGracePeriod plus AbandonStepAfter and the
// release's writes, an error wrapping [ErrAbandonedSteps] that says how
// many abandoned passes still run when the grace period (or ctx) ended.
// It returns ctx's error if passes were still returning when ctx ended.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if started {
		removeLocalWorker(w)
		w.mu.Lock()
		w.stopping = true
		w.mu.Unlock()
		w.loopCancel()
		<-w.loopDone
		if w.m != nil {
			defer w.stopObserved.Do(func() { w.m.ObserveWorker(false, w.opts.Concurrency) })
		}
		w.putRecord(ctx, backend.WorkerDraining)
		defer w.putRecord(ctx, backend.WorkerStopped)
	}
	done := make(chan struct{})
	go func() { w.passes.Wait(); close(done) }()
	grace := time.NewTimer(w.opts.ShutdownGracePeriod)
	defer grace.Stop()
	graceOver := false
	select {
	case <-done:
	case <-grace.C:
		graceOver = true
	case <-ctx.Done():
	}
	select {
	case <-done:
	default:
		w.release()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("openworkflow: worker stopped with passes still returning: %w", ctx.Err())
		}
	}
	w.commit.Wait()
	// Abandoned user code records nothing, but it is user code still
	// running: give it what is left of the grace period to return.
	for {
		w.mu.Lock()
		n := w.abandoned
		if n > 0 && w.abandonedCh == nil {
			w.abandonedCh = make(chan struct{})
		}
		changed := w.abandonedCh
		w.mu.Unlock()
		if n == 0 {
			return nil
		}
		if graceOver || ctx.Err() != nil {
			return fmt.Errorf("%w: the worker stopped with %d abandoned passes still running (their runs were settled; "+
				"nothing they do is recorded)", ErrAbandonedSteps, n)
		}
		select {
		case <-changed:
		case <-grace.C:
			graceOver = true
		case <-ctx.Done():
		}
	}
}

// release cancels every executing pass and hands its run back (parked,
// available now), fenced so a run that meanwhile moved is left alone. A
// pass that returns on the cancel releases its own run (see finish); the
// ones still running user code that ignores its context are released here.
func (w *Worker) release() {
	w.hardCancel(errCauseShutdown)
	w.mu.Lock()
	xs := make([]*pass, 0, len(w.executing))
	for _, x := range w.executing {
		xs = append(xs, x)
	}
	w.mu.Unlock()
	for _, x := range xs {
		w.releaseRun(x)
	}
}

// releaseRun hands x's run back to the queue once: nothing more of the pass
// is committed, and the run is parked available now for any worker.
func (w *Worker) releaseRun(x *pass) {
	x.releaseOnce.Do(func() {
		x.markLost(lossFenced, nil)
		err := w.commit.Submit([]backend.Write{{Kind: backend.WriteParkRun, WorkflowRunID: x.run.ID, WorkerID: x.workerID, AvailableAt: w.opts.Now()}}).Wait()
		switch {
		case err == nil:
			w.log.Info("openworkflow: released run at shutdown", "run", x.run.ID)
		case !errors.Is(err, backend.ErrNotOwner):
			w.log.Warn("openworkflow: could not release run at shutdown; it waits for its lease to expire", "run", x.run.ID, "error", err)
		}
	})
}
