package openworkflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// WorkerOptions configure a [Worker]. The zero value is usable: every zero
// field takes the default stated beside it.
type WorkerOptions struct {
	// Concurrency is the number of runs executed at once (slots). A worker
	// claims only when a slot is free. Default 10.
	Concurrency int
	// LeaseDuration is how long a claim holds a run before another worker
	// may take it, unless renewed by a heartbeat. Default 30 s.
	LeaseDuration time.Duration
	// HeartbeatInterval is how often an executing run's lease is renewed;
	// it is also the longest a cancel takes to reach a step when the
	// backend cannot notify. Default LeaseDuration / 2 (15 s).
	HeartbeatInterval time.Duration
	// MaxPollInterval caps the idle poll backoff (100 ms × 2^n with jitter
	// in [0.5, 1], as in OpenWorkflow). Default 1 s.
	MaxPollInterval time.Duration
	// ShutdownGracePeriod is how long [Worker.Stop] lets executing passes
	// finish before canceling them and releasing their runs to other
	// workers. Default 30 s.
	ShutdownGracePeriod time.Duration
	// Logger receives the worker's logs. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock the worker reads (deadlines, wake-up times, retry
	// backoff). Default time.Now. Tests inject a fake clock here and in the
	// backend.
	Now func() time.Time
	// RunningStepAfter is how long a step may execute before its attempt
	// is recorded as running (so dashboards show long steps); a step that
	// returns sooner costs one write, its finished attempt. Default 50 ms.
	RunningStepAfter time.Duration
	// OnlyRegistered makes the worker claim only runs of the workflows
	// (name and version) registered on it, leaving other runs to the
	// workers that have them: set it when workers of other languages (the
	// TypeScript SDK) or other deployments share the namespace. Default
	// false: as in OpenWorkflow, any run is claimed and a run whose
	// workflow is not registered is rescheduled with backoff (5 s ×2 up to
	// 5 min) for another worker.
	OnlyRegistered bool
	// TracerProvider receives OpenTelemetry spans: one workflow_run.execute
	// per pass (a new trace linked to the span that created the run, with
	// the pass's outcome), step_attempt.execute per executed step,
	// workflow_run.create per child and signal.send per signal step, named
	// and attributed as in OpenWorkflow 0.10. Nil: no tracing.
	TracerProvider trace.TracerProvider
	// ID prefixes the worker ids written to runs ("<ID>/<slot>"). Default
	// "<hostname>-<pid>-<random>".
	ID string
	// ClaimAhead is how long before a parked run's wake-up the worker may
	// claim it (backend.ClaimWorkflowRunsParams.Lookahead) and hold it in
	// its slot, history read, until its earliest wait (a sleep, or a
	// child's or signal's timeout) is due, so that the claim and the
	// history read are done when it wakes rather than after. A run never
	// proceeds past a wait before the wait is due. Default 10 ms; negative
	// disables it (claims take due runs only, as in OpenWorkflow). The hold
	// is timed in real time: a test driving a fake clock (Now) that stops
	// it just short of a wake-up should disable it.
	ClaimAhead time.Duration
}

func (o WorkerOptions) withDefaults() WorkerOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = 10
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 30 * time.Second
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = o.LeaseDuration / 2
	}
	if o.MaxPollInterval <= 0 {
		o.MaxPollInterval = time.Second
	}
	if o.ShutdownGracePeriod <= 0 {
		o.ShutdownGracePeriod = 30 * time.Second
	}
	switch {
	case o.ClaimAhead == 0:
		o.ClaimAhead = defaultClaimAhead
	case o.ClaimAhead < 0:
		o.ClaimAhead = 0
	}
	if o.RunningStepAfter <= 0 {
		o.RunningStepAfter = 50 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ID == "" {
		host, _ := os.Hostname()
		u := id.New("wkr") // its last characters are the ULID's random part (the first are its time)
		o.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), u[len(u)-10:])
	}
	return o
}

// Worker claims runs from a backend and executes them: it replays each
// claimed run's workflow, records steps, heartbeats the lease, and parks,
// completes, fails or reschedules the run. Workers are stateless; run as
// many as you like against one backend.
type Worker struct {
	b      backend.Backend
	opts   WorkerOptions
	commit *committer
	tr     tracing
	reg    registry
	log    *slog.Logger

	mu           sync.Mutex
	free         []string              // worker ids of free slots
	executing    map[string]*execution // by run id
	nextWake     time.Time             // earliest known wake-up of a run (parked here, or from NextDueAt)
	dueCheckedAt time.Time             // when NextDueAt was last asked
	dueStale     bool                  // nextWake passed: the wake-up after it is unknown
	started      bool

	wake       chan struct{}
	hardCtx    context.Context // canceled when the grace period ends
	hardCancel context.CancelCauseFunc
	loopCancel context.CancelFunc
	loopDone   chan struct{}
	passes     sync.WaitGroup
}

// NewWorker returns a worker on b. Register workflows, then Start it (or
// call Run).
func NewWorker(b backend.Backend, opts WorkerOptions) *Worker {
	opts = opts.withDefaults()
	w := &Worker{b: b, opts: opts, log: opts.Logger, commit: newCommitter(b), tr: newTracing(opts.TracerProvider), executing: make(map[string]*execution), wake: make(chan struct{}, 1)}
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

// Start begins claiming and executing runs in the background, until
// [Worker.Stop]. ctx bounds only the start-up itself.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("openworkflow: worker already started")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w.started = true
	loopCtx, cancel := context.WithCancel(context.Background())
	w.loopCancel = cancel
	w.loopDone = make(chan struct{})
	events, err := w.b.Subscribe(loopCtx)
	if err != nil && !errors.Is(err, backend.ErrNotSupported) {
		w.log.Warn("openworkflow: wake-up notifications unavailable; polling only", "error", err)
	}
	go w.loop(loopCtx, events)
	return nil
}

// Run starts the worker and blocks until ctx is done, then stops it
// gracefully within ShutdownGracePeriod. It returns nil after a clean stop.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), w.opts.ShutdownGracePeriod+10*time.Second)
	defer cancel()
	return w.Stop(stopCtx)
}

// Stop stops claiming, waits up to ShutdownGracePeriod (or ctx's end, if
// sooner) for executing passes to finish, then cancels the rest and
// releases their runs at once so another worker can take them, rather than
// leaving them to wait for their lease to expire. It returns ctx's error if
// passes were still returning when ctx ended.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if started {
		w.loopCancel()
		<-w.loopDone
	}
	done := make(chan struct{})
	go func() { w.passes.Wait(); close(done) }()
	grace := time.NewTimer(w.opts.ShutdownGracePeriod)
	defer grace.Stop()
	select {
	case <-done:
		w.commit.wg.Wait()
		return nil
	case <-grace.C:
	case <-ctx.Done():
	}
	w.release()
	select {
	case <-done:
		w.commit.wg.Wait()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("openworkflow: worker stopped with passes still returning: %w", ctx.Err())
	}
}

// release cancels every executing pass and hands its run back (parked,
// available now), fenced so a run that meanwhile moved is left alone. A
// pass that returns on the cancel releases its own run (see finish); the
// ones still running user code that ignores its context are released here.
func (w *Worker) release() {
	w.hardCancel(errCauseShutdown)
	w.mu.Lock()
	xs := make([]*execution, 0, len(w.executing))
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
func (w *Worker) releaseRun(x *execution) {
	x.releaseOnce.Do(func() {
		x.markLost()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := w.b.SleepWorkflowRun(ctx, backend.SleepWorkflowRunParams{WorkflowRunID: x.run.ID, WorkerID: x.workerID, AvailableAt: w.opts.Now()})
		switch {
		case err == nil:
			w.log.Info("openworkflow: released run at shutdown", "run", x.run.ID)
		case !errors.Is(err, backend.ErrNotOwner):
			w.log.Warn("openworkflow: could not release run at shutdown; it waits for its lease to expire", "run", x.run.ID, "error", err)
		}
	})
}

// Tick claims runs for the free slots and executes one pass of each,
// returning when those passes have ended, with the number of runs claimed.
// It is meant for tests that drive a worker step by step; a started worker
// ticks by itself.
func (w *Worker) Tick(ctx context.Context) (int, error) {
	var wg sync.WaitGroup
	n, _, err := w.claim(ctx, &wg)
	wg.Wait()
	return n, err
}

// claim claims runs for the free slots and starts their passes, each
// tracked by w.passes and, if not nil, by wg. It returns how many runs it
// claimed and for how many free slots it asked.
func (w *Worker) claim(ctx context.Context, wg *sync.WaitGroup) (claimed, asked int, err error) {
	w.mu.Lock()
	ids := append([]string(nil), w.free...)
	w.mu.Unlock()
	if len(ids) == 0 {
		return 0, 0, nil
	}
	p := backend.ClaimWorkflowRunsParams{WorkerIDs: ids, LeaseDuration: w.opts.LeaseDuration, Lookahead: w.opts.ClaimAhead}
	if w.opts.OnlyRegistered {
		p.Workflows = w.reg.keys()
	}
	runs, err := w.b.ClaimWorkflowRuns(ctx, p)
	if err != nil {
		return 0, len(ids), fmt.Errorf("claim workflow runs: %w", err)
	}
	start := func(run *backend.WorkflowRun, hist *[]backend.StepAttempt) {
		w.mu.Lock()
		for i, s := range w.free {
			if run.WorkerID != nil && s == *run.WorkerID {
				w.free = append(w.free[:i], w.free[i+1:]...)
				break
			}
		}
		w.mu.Unlock()
		if wg != nil {
			wg.Add(1)
		}
		w.passes.Add(1)
		go func() {
			defer w.passes.Done()
			if wg != nil {
				defer wg.Done()
			}
			w.execute(run, hist)
			w.mu.Lock()
			w.free = append(w.free, *run.WorkerID)
			w.mu.Unlock()
			w.poke()
		}()
	}
	// Runs claimed for the first time have no history: they start before
	// the resumed runs' histories are read.
	for _, run := range runs {
		if run.Attempts <= 1 {
			start(run, nil)
		}
	}
	histories := w.readHistories(ctx, runs)
	for _, run := range runs {
		if run.Attempts <= 1 {
			continue
		}
		var hist *[]backend.StepAttempt
		if h, ok := histories[run.ID]; ok {
			hist = &h
		}
		start(run, hist)
	}
	return len(runs), len(ids), nil
}

// defaultClaimAhead is WorkerOptions.ClaimAhead's default: long enough to
// cover a claim and a history read on a loaded machine (a few
// milliseconds each), short enough that runs held ahead of their wake-up
// take few slots.
const defaultClaimAhead = 10 * time.Millisecond

// claimBatchWait is the longest a busy worker whose last claim filled
// every free slot (so more runs are probably waiting) lets slots free up
// before it claims again, unless a quarter of its slots are free sooner.
// Claiming as soon as any slot freed made claims of a few runs each, and
// every claim and every small group commit has a fixed cost in the
// database. Measured (W1, PostgreSQL, concurrency 100, three alternating
// rounds): 5 ms gave 4–8 % more steps/s than no wait in each round and
// 0.11–0.12 commits/step instead of 0.14; 10 ms was mixed.
const claimBatchWait = 5 * time.Millisecond

// awaitClaimBatch waits, after a claim that filled every free slot, until
// a quarter of the slots are free or claimBatchWait passed. Every busy slot
// belongs to a pass that frees it and pokes the worker when it ends.
func (w *Worker) awaitClaimBatch(ctx context.Context, timer *time.Timer) {
	want := max(1, w.opts.Concurrency/4)
	timer.Reset(claimBatchWait)
	defer timer.Stop()
	for {
		w.mu.Lock()
		free := len(w.free)
		w.mu.Unlock()
		if free >= want {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		case <-w.wake:
		}
	}
}

// readHistories reads, in one query when the backend can
// (backend.HistoryReader), the step histories of the claimed runs that
// executed before: a run claimed for the first time has none. The map has
// an entry, possibly empty, for each run read; a run without one reads its
// own history (also when the query failed, which is only logged).
func (w *Worker) readHistories(ctx context.Context, runs []*backend.WorkflowRun) map[string][]backend.StepAttempt {
	hr, ok := w.b.(backend.HistoryReader)
	if !ok {
		return nil
	}
	var ids []string
	for _, run := range runs {
		if run.Attempts > 1 {
			ids = append(ids, run.ID)
		}
	}
	if len(ids) < 2 {
		return nil // one run reads its own: the same one query
	}
	got, err := hr.ListStepHistories(ctx, ids)
	if err != nil {
		w.log.Debug("openworkflow: step histories of claimed runs not read together; each run reads its own", "error", err)
		return nil
	}
	read := make(map[string][]backend.StepAttempt, len(ids))
	for _, id := range ids {
		read[id] = got[id] // runs without attempts: read, and empty
	}
	return read
}

func (w *Worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// loop is the poll loop: claim while there is work and a free slot (after
// a claim that filled every free slot, in batches: awaitClaimBatch), else
// wait for a wake-up event, a freed slot, a due parked run, or the idle
// backoff (as in OpenWorkflow: 100 ms × 2^(n−1), at most MaxPollInterval,
// times a jitter in [0.5, 1]).
func (w *Worker) loop(ctx context.Context, events <-chan backend.Event) {
	var listener sync.WaitGroup
	defer close(w.loopDone)
	defer listener.Wait()
	if events != nil {
		listener.Add(1)
		go func() {
			defer listener.Done()
			for ev := range events { // closed when ctx ends
				w.handleEvent(ev)
			}
		}()
	}
	idle := 0
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ctx.Err() == nil {
		n, asked, err := w.claim(ctx, nil)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("openworkflow: worker tick failed", "error", err)
		}
		if n > 0 {
			idle = 0
			if n == asked {
				w.awaitClaimBatch(ctx, timer)
			}
			continue
		}
		idle++
		delay := w.idleDelay(idle)
		w.refreshNextWake(ctx)
		w.mu.Lock()
		if !w.nextWake.IsZero() {
			until := w.nextWake.Sub(w.opts.Now())
			// Wake ClaimAhead early, so that the claim takes the parked run
			// ahead of its wake-up. Inside that window the claim just made
			// could not take it (no free slot, or not a parked run: a
			// delayed start, a lease running out): wait for the due time
			// itself, or for a freed slot, rather than ask again at once.
			if until > w.opts.ClaimAhead {
				until -= w.opts.ClaimAhead
			}
			if until <= 0 {
				w.nextWake, w.dueStale = time.Time{}, true
				delay = 0
			} else if until < delay {
				delay = until
			}
		}
		w.mu.Unlock()
		if delay == 0 {
			continue
		}
		timer.Reset(delay)
		select {
		case <-ctx.Done():
		case <-timer.C:
		case <-w.wake:
			idle = 0
		}
		timer.Stop() // since Go 1.23 a stopped timer delivers nothing stale
	}
}

func (w *Worker) handleEvent(ev backend.Event) {
	switch ev.Kind {
	case backend.EventRunFinished:
		w.mu.Lock()
		x := w.executing[ev.WorkflowRunID]
		w.mu.Unlock()
		if x != nil {
			// Canceled (or finished elsewhere) while we execute it.
			x.cancel(errCauseCanceled)
		}
	case backend.EventWorkAvailable:
		w.poke()
	}
}

func (w *Worker) idleDelay(n int) time.Duration {
	d := 100 * time.Millisecond
	for i := 1; i < n && d < w.opts.MaxPollInterval; i++ {
		d *= 2
	}
	d = min(d, w.opts.MaxPollInterval)
	jitter := 0.5 + rand.Float64()*0.5
	return max(time.Duration(float64(d)*jitter), time.Millisecond)
}

// refreshNextWake asks a backend that can tell (backend.DueTimer) when the
// namespace's next run comes due — a parked run waking, a delayed start, a
// lease expiring — so the idle loop claims it on time instead of at its
// next poll. Runs this worker parks are known without asking (noteWake,
// which keeps the earliest), so while no wake-up is known it asks at most
// once per dueCheckEvery MaxPollIntervals (an idle worker makes about 1.2
// queries per second by default: a claim per poll interval, and this),
// and once after each known wake-up passed, to learn the one after it:
// runs parked in a stream (1,000 sleeps started over half a second) then
// wake one after another on time rather than at the next poll.
func (w *Worker) refreshNextWake(ctx context.Context) {
	dt, ok := w.b.(backend.DueTimer)
	if !ok {
		return
	}
	w.mu.Lock()
	now := time.Now()
	skip := !w.nextWake.IsZero() || (!w.dueStale && now.Sub(w.dueCheckedAt) < dueCheckEvery*w.opts.MaxPollInterval)
	if !skip {
		w.dueCheckedAt, w.dueStale = now, false
	}
	w.mu.Unlock()
	if skip {
		return
	}
	at, due, err := dt.NextDueAt(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Debug("openworkflow: next due run unknown", "error", err)
		}
		return
	}
	if due {
		w.noteWake(at)
	}
}

// dueCheckEvery is how many poll intervals pass between two NextDueAt
// queries of an idle worker.
const dueCheckEvery = 5

// noteWake remembers the earliest wake-up of runs this worker parked, so
// the poll loop looks again then instead of at its next idle poll.
func (w *Worker) noteWake(at time.Time) {
	w.mu.Lock()
	if w.nextWake.IsZero() || at.Before(w.nextWake) {
		w.nextWake = at
	}
	w.mu.Unlock()
	w.poke()
}
