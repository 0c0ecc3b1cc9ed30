package openworkflow

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/testhooks"
)

func init() {
	testhooks.Tick = func(ctx context.Context, w any) (int, error) { return w.(*Worker).tick(ctx) }
	testhooks.Deliver = func(w any, e backend.Event) { w.(*Worker).handleEvent(e) }
	testhooks.Idle = func(w any) bool { return w.(*Worker).idleForStarts() }
}

// tick claims runs for the free slots and executes one pass of each,
// returning when those passes have ended, with the number of runs claimed:
// package owtest drives a worker step by step with it (a started worker
// ticks by itself).
func (w *Worker) tick(ctx context.Context) (int, error) {
	w.mu.Lock()
	limitsRead := w.limits.declared != nil
	w.mu.Unlock()
	if !limitsRead {
		// A worker driven by ticks is never started: store and read the
		// limits of its workflows at its first tick, as Start does.
		if err := w.startLimits(ctx); err != nil {
			return 0, err
		}
		if err := w.startTriggers(ctx); err != nil {
			return 0, err
		}
	}
	var wg sync.WaitGroup
	n, _, err := w.claim(ctx, &wg)
	wg.Wait()
	return n, err
}

// claim claims runs for the free slots and starts their passes, each
// tracked by w.passes and, if not nil, by wg. It returns how many runs it
// claimed and for how many free slots it asked.
func (w *Worker) claim(ctx context.Context, wg *sync.WaitGroup) (claimed, asked int, err error) {
	if err := w.releaseQuarantined(ctx); err != nil {
		return 0, 0, err
	}
	w.refreshLimits(ctx)
	saturated := w.checkSaturated()
	w.mu.Lock()
	ids := append([]string(nil), w.free...)
	if saturated != nil {
		ids = nil // claim nothing, but keep the deadline sweep going
	}
	admit, caps := w.claimLimits()
	sweep := time.Since(w.sweptAt) >= deadlineSweepEvery
	if len(ids) > 0 || sweep {
		w.sweptAt = time.Now()
	}
	if len(ids) == 0 {
		w.drained = false // runs may be waiting for a slot
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		if sweep {
			// No free slot, but runs past their deadline must still fail
			// on time: a claim of nothing runs only the deadline sweep.
			if _, err := w.b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{}); err != nil {
				return 0, 0, fmt.Errorf("fail runs past their deadline: %w", err)
			}
		}
		return 0, 0, saturated
	}
	p := backend.ClaimWorkflowRunsParams{WorkerIDs: ids, LeaseDuration: w.opts.LeaseDuration, Lookahead: w.opts.ClaimAhead, Admit: admit, Caps: caps}
	if !w.opts.ClaimUnregistered {
		p.Workflows = w.reg.keys()
	}
	var began time.Time
	if w.m != nil {
		began = time.Now()
	}
	leased := time.Now() // the leases run from no earlier than this
	runs, err := w.b.ClaimWorkflowRuns(ctx, p)
	if w.m != nil {
		w.m.ObserveClaim(time.Since(began), len(ids), len(runs), err)
	}
	if err != nil {
		if ctx.Err() == nil {
			w.quarantine(ids)
		}
		return 0, len(ids), err // the backend says what failed ("claim workflow runs: …")
	}
	// Drained: fewer runs than free slots, all of them new starts (which
	// are announced), or none. Runs claimed again (woken by time, handed
	// back) come due in streams that announce nothing, so after those the
	// loop claims again at once, as after a claim that filled every slot.
	// A worker drained and idle may take a run its own process starts
	// (worker_startclaim.go); its end then claims nothing for the slot.
	drained := len(runs) < len(ids)
	for _, run := range runs {
		drained = drained && run.Attempts <= 1
	}
	w.mu.Lock()
	w.drained = drained
	w.mu.Unlock()
	// Runs claimed for the first time have no history: they start before
	// the resumed runs' histories are read.
	for _, run := range runs {
		if run.Attempts <= 1 {
			w.beginPass(run, nil, leased, wg, false, nil)
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
		w.beginPass(run, hist, leased, wg, false, nil)
	}
	return len(runs), len(ids), nil
}

// quarantine takes the slot ids of a failed claim out of use: the
// database may have committed the claim and lost only its answer, so
// those ids may hold runs this worker never learned of. They are used
// again once releaseQuarantined handed such runs back.
func (w *Worker) quarantine(ids []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if i := slices.Index(w.free, id); i >= 0 {
			w.free = slices.Delete(w.free, i, i+1)
			w.quarantined = append(w.quarantined, id)
		}
	}
}

// releaseQuarantined hands back the runs leased to quarantined slot ids
// (backend.Backend.ReleaseWorkflowRuns) and frees the slots: runs a failed
// claim may have taken move again at once, not when their lease expires.
// While the backend does not answer, the slots stay out of use.
func (w *Worker) releaseQuarantined(ctx context.Context) error {
	w.mu.Lock()
	// A copy: the DeleteFunc below compacts w.quarantined in place and
	// zeroes its tail, which an alias would see as empty slot ids.
	ids := slices.Clone(w.quarantined)
	w.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	n, err := w.b.ReleaseWorkflowRuns(ctx, ids)
	if err != nil {
		return fmt.Errorf("release the runs a failed claim may have taken: %w", err)
	}
	if n > 0 {
		w.log.Info("openworkflow: handed back runs a failed claim had taken", "runs", n)
	}
	w.mu.Lock()
	w.quarantined = slices.DeleteFunc(w.quarantined, func(id string) bool { return slices.Contains(ids, id) })
	w.free = append(w.free, ids...)
	w.mu.Unlock()
	return nil
}

// deadlineSweepEvery is how often a worker without a free slot runs the
// claim's deadline sweep alone, so that pending and parked runs past their
// deadline fail within about a second whatever the load (executing runs
// fail at their deadline by their own pass, see Worker.expire).
const deadlineSweepEvery = 500 * time.Millisecond

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
	if ss, ok := w.b.(backend.ScheduleStore); ok && !w.opts.SkipSchedules {
		listener.Add(1)
		go func() {
			defer listener.Done()
			w.scheduleLoop(ctx, ss)
		}()
	}
	if w.workerRegistry() != nil {
		listener.Add(1)
		go func() {
			defer listener.Done()
			w.registryLoop(ctx)
		}()
	}
	if bs, ok := w.b.(backend.BatchStore); ok && w.reg.batched() {
		listener.Add(1)
		go func() {
			defer listener.Done()
			w.batchLoop(ctx, bs)
		}()
	}
	if bs, ok := w.b.(backend.BulkActionStore); ok && !w.opts.SkipBulkActions {
		listener.Add(1)
		go func() {
			defer listener.Done()
			w.bulkLoop(ctx, bs)
		}()
	}
	idle := 0
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ctx.Err() == nil {
		n, asked, err := w.claim(ctx, nil)
		if errors.Is(err, backend.ErrUnusable) {
			w.stopUnusable(err) // no retry can succeed
			return
		}
		if err != nil && ctx.Err() == nil && !errors.Is(err, ErrAbandonedSteps) { // saturation: logged by checkSaturated
			w.log.Warn("openworkflow: worker tick failed", "error", err)
		}
		if n > 0 {
			idle = 0
			if n == asked {
				w.awaitClaimBatch(ctx, timer)
				continue
			}
			w.mu.Lock()
			drained := w.drained
			w.mu.Unlock()
			if !drained {
				continue
			}
			// Fewer new starts than free slots: nothing else was due.
			// Claiming again at once found nothing (one empty claim, a
			// commit, per run of an idle worker); wait as an idle worker
			// does, for an announcement, a freed slot or a due time.
		} else {
			idle++
		}
		delay := w.idleDelay(max(idle, 1))
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
	case backend.EventScheduleChanged:
		w.pokeSchedules()
	case backend.EventResync:
		// Announcements were lost (a failover): claim, and look at the
		// schedules, as if each had come.
		w.poke()
		w.pokeSchedules()
	case backend.EventRunPaused:
		w.notePause(ev)
	}
}

// pauseHint is an EventRunPaused for one of this worker's slots that came
// before the pass of its run began (the claim had committed, the pass was
// not yet executing: a history read, say), kept for that pass.
type pauseHint struct {
	workerID string    // the slot the run was leased to when paused
	at       time.Time // when the event came (real time), to forget it
}

// notePause acts on an EventRunPaused (PauseRun of a run a worker
// executes): the pass executing the run under the announced slot starts
// no further step and hands the run back, as when its heartbeat finds the
// run paused (pass.pause), but within the notification's delivery rather
// than at the next heartbeat. A pause for a slot of this worker whose pass
// has not begun is kept for it (takePauseHint). The event is a hint and
// is not confirmed with the database: if the run was resumed meanwhile,
// the hand-back is a mere release (the run is due at once, and claimed
// again), which costs one more pass and no step runs twice.
func (w *Worker) notePause(ev backend.Event) {
	w.mu.Lock()
	x := w.executing[ev.WorkflowRunID]
	if x == nil || x.workerID != ev.WorkerID {
		if x == nil && strings.HasPrefix(ev.WorkerID, w.opts.ID+"/") {
			now := time.Now()
			for id, h := range w.pauseHints {
				if now.Sub(h.at) > w.opts.LeaseDuration {
					delete(w.pauseHints, id) // its pass never began: the lease expired
				}
			}
			if w.pauseHints == nil {
				w.pauseHints = make(map[string]pauseHint)
			}
			w.pauseHints[ev.WorkflowRunID] = pauseHint{workerID: ev.WorkerID, at: now}
		}
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	if x.pause(w.opts.Now()) {
		w.log.Info("openworkflow: run paused (announced); its pass starts no further step and hands it back", "run", x.run.ID)
	}
}

// takePauseHint reports, and forgets, whether a pause was announced for
// run runID under slot workerID before its pass began. w.mu is held.
func (w *Worker) takePauseHint(runID, workerID string) bool {
	h, ok := w.pauseHints[runID]
	if !ok {
		return false
	}
	delete(w.pauseHints, runID)
	return h.workerID == workerID
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

// beginPass starts the pass of run, claimed (or created claimed) under
// the slot *run.WorkerID with its lease running from no earlier than
// leased, tracked by w.passes and, if not nil, by wg. reserved says the
// slot already left w.free and w.passes already counts the pass (a start
// that claimed its own run, worker_startclaim.go); ended, if not nil, is
// closed when the pass's slot is freed (its writes returned).
func (w *Worker) beginPass(run *backend.WorkflowRun, hist *[]backend.StepAttempt, leased time.Time, wg *sync.WaitGroup, reserved bool, ended chan struct{}) {
	w.mu.Lock()
	if !reserved {
		for i, s := range w.free {
			if run.WorkerID != nil && s == *run.WorkerID {
				w.free = append(w.free[:i], w.free[i+1:]...)
				break
			}
		}
	}
	w.limits.running[run.WorkflowName]++
	w.mu.Unlock()
	if wg != nil {
		wg.Add(1)
	}
	if w.m != nil {
		w.m.ObserveSlot(true)
	}
	if !reserved {
		w.passes.Add(1)
	}
	// The pass's end frees its slot; so does the abandonment of its
	// user code (worker_abandon.go), before its goroutine returns.
	endSlot := func() {
		if w.m != nil {
			w.m.ObserveSlot(false)
		}
		w.mu.Lock()
		w.free = append(w.free, *run.WorkerID)
		w.limits.running[run.WorkflowName]--
		// A freed slot matters only if runs may be waiting for one: the
		// last claim filled every free slot, or limits held runs back
		// (a run waiting for admission may be admitted now). Otherwise
		// the claim it would trigger finds nothing; new work announces
		// itself (an idle W2 run made one such claim per run).
		waiting := !w.drained || len(w.limits.admit) > 0 || len(w.limits.perWorker) > 0
		w.mu.Unlock()
		if waiting {
			w.poke()
		}
		if _, scheduled := backend.ScheduledRunOf(run.Context); scheduled {
			// A tick buffered behind this run (buffer_one) may start
			// now, rather than at the schedule loop's next look.
			w.pokeSchedules()
		}
		if wg != nil {
			wg.Done()
		}
		if ended != nil {
			close(ended)
		}
		w.passes.Done()
	}
	go w.execute(run, hist, leased, endSlot)
}
