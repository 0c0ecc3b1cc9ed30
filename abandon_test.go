package openworkflow_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/testhooks"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// The tests of this file hold user code that ignores its context: a step
// function (or the workflow function, or parallel steps) blocked on a
// channel the test closes at its end, so that no goroutine outlives the
// test (TestMain's goleak check).

// gate is a channel user code blocks on, ignoring its context, until the
// test opens it; it is opened at the latest when the test ends.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{ch: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// abandonMetrics records the abandoned-steps gauge a worker reports, and
// lets a test wait for a value of it.
type abandonMetrics struct {
	telemetry.NoMetrics
	mu      sync.Mutex
	n       int
	changed chan struct{} // closed and replaced at each change
}

func newAbandonMetrics() *abandonMetrics { return &abandonMetrics{changed: make(chan struct{})} }

func (m *abandonMetrics) ObserveAbandonedStep(abandoned bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if abandoned {
		m.n++
	} else {
		m.n--
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

// waitFor waits until the gauge is n, for at most 10 s.
func (m *abandonMetrics) waitFor(t *testing.T, n int) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		m.mu.Lock()
		got, changed := m.n, m.changed
		m.mu.Unlock()
		if got == n {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("abandoned steps gauge is %d after 10 s, want %d", got, n)
		}
	}
}

// waitAbandoned waits until w counts n abandoned steps, for at most 10 s.
func waitAbandoned(t *testing.T, w *ow.Worker, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for w.AbandonedSteps() != n {
		if time.Now().After(deadline) {
			t.Fatalf("the worker counts %d abandoned steps after 10 s, want %d", w.AbandonedSteps(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// requireNothingRecordedAfter checks that run id's history holds only
// attempts of the step named stuck, still running as the fencing left
// them: neither its late result nor any later step was written.
func requireNothingRecordedAfter(t *testing.T, b backend.Backend, id, stuck string) {
	t.Helper()
	page, err := b.ListStepAttempts(context.Background(), backend.ListStepAttemptsParams{WorkflowRunID: id, Limit: backend.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range page.Data {
		if s.StepName != stuck || s.Status != backend.StepRunning {
			t.Errorf("run %s: step %s is %s; an abandoned step's late return must record nothing", id, s.StepName, s.Status)
		}
	}
}

// startStubbornWorker starts a worker on b with opts and defs registered
// and returns it with a context bounding the test (20 s). When the test
// ends the worker is stopped, whatever its abandoned steps (Stop's
// error is the tests' to check).
func startStubbornWorker(t *testing.T, b backend.Backend, opts ow.WorkerOptions, defs ...ow.Definition) (*ow.Worker, context.Context) {
	t.Helper()
	w := ow.NewWorker(b, opts)
	if err := w.Register(defs...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Stop(stopCtx)
	})
	return w, ctx
}

// TestStepsIgnoringTheirContextFreeTheirSlotsOnceTheirRunsFailed holds all
// four slots of a worker with steps that ignore their context, in runs
// with a deadline: once the runs failed at their deadline, the worker
// abandons the steps (their goroutines run on, counted by the
// abandoned-steps gauge and logged with their run and step), so a fifth
// run completes while they are still blocked; when they return at last
// the gauge goes down, and nothing of them is recorded.
func TestStepsIgnoringTheirContextFreeTheirSlotsOnceTheirRunsFailed(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend.Backend) {
		const slots = 4
		release := newGate(t)
		started := make(chan string, slots)
		var after counter
		stubborn := ow.Define(ow.Spec{Name: "stubborn"}, func(ctx ow.Context, _ int) (int, error) {
			n, err := ow.Run(ctx, "ignore-context", func(context.Context) (int, error) {
				started <- ctx.RunInfo().ID
				<-release.ch // ignores its context
				return 1, nil
			})
			if err != nil {
				return 0, err
			}
			after.inc("after")
			return ow.Run(ctx, "after", func(context.Context) (int, error) { return n + 1, nil })
		})
		quick := ow.Define(ow.Spec{Name: "quick"}, func(ctx ow.Context, in int) (int, error) {
			return ow.Run(ctx, "add", func(context.Context) (int, error) { return in + 1, nil })
		})
		m := newAbandonMetrics()
		var logs syncBuffer
		w, ctx := startStubbornWorker(t, b, ow.WorkerOptions{Concurrency: slots, AbandonStepAfter: 100 * time.Millisecond, Metrics: m,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))}, stubborn, quick)
		c := ow.NewClient(b)
		deadline := time.Now().Add(2 * time.Second)
		var ids []string
		for range slots {
			h, err := stubborn.Start(ctx, c, 0, ow.WithDeadline(deadline))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, h.ID)
		}
		for range slots {
			select {
			case <-started:
			case <-ctx.Done():
				t.Fatal("the steps did not all start")
			}
		}
		for _, id := range ids {
			if r := waitTerminal(t, b, id); r.Status != backend.RunFailed || !jsonEq(r.Error, backend.DeadlineExceededError()) {
				t.Fatalf("run %s is %s (%s), want failed at its deadline", id, r.Status, r.Error)
			}
		}

		// Every slot's step is still blocked, yet a fifth run completes.
		h, err := quick.Start(ctx, c, 41)
		if err != nil {
			t.Fatal(err)
		}
		waitCtx, stopWaiting := context.WithTimeout(ctx, 10*time.Second)
		defer stopWaiting()
		out, err := h.Result(waitCtx)
		if err != nil || out != 42 {
			t.Fatalf("the fifth run: %d, %v; want 42 while the four steps that ignore their context still run", out, err)
		}
		m.waitFor(t, slots)
		if n := w.AbandonedSteps(); n != slots {
			t.Errorf("AbandonedSteps() = %d, want %d", n, slots)
		}
		for _, id := range ids {
			line := excerpt(excerpt(logs.String(), "abandon"), id)
			if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "ignore-context") || !strings.Contains(line, "running=") {
				t.Errorf("no warning names run %s, its step and how long it runs:\n%s", id, logs.String())
			}
		}

		release.open() // the abandoned steps return at last
		m.waitFor(t, 0)
		if n := w.AbandonedSteps(); n != 0 {
			t.Errorf("AbandonedSteps() = %d after the steps returned, want 0", n)
		}
		if err := w.Stop(ctx); err != nil {
			t.Fatalf("stop: %v", err)
		}
		for _, id := range ids {
			if !strings.Contains(excerpt(excerpt(logs.String(), "returned"), id), "ignore-context") {
				t.Errorf("the return of run %s's abandoned step was not logged:\n%s", id, logs.String())
			}
			if r := waitTerminal(t, b, id); r.Status != backend.RunFailed {
				t.Errorf("run %s is %s after its abandoned step returned, want still failed", id, r.Status)
			}
			requireNothingRecordedAfter(t, b, id, "ignore-context")
		}
		if n := after.get("after"); n != 0 {
			t.Errorf("a workflow went on past its abandoned step %d times", n)
		}
	})
}

// TestUserCodeIgnoringItsContextIsAbandonedWhereverItBlocks cancels runs
// whose user code ignores its context in a step, in two parallel steps,
// or in the workflow function between steps, on a worker with one slot:
// each is abandoned (the log says where it blocks), another run then
// completes in the slot, and the late return records nothing.
func TestUserCodeIgnoringItsContextIsAbandonedWhereverItBlocks(t *testing.T) {
	cases := []struct {
		name   string
		where  []string // what the abandonment's log line names
		starts int      // the signals on started once the user code blocks
		body   func(ctx ow.Context, release <-chan struct{}, started chan<- struct{}) (int, error)
	}{
		{"step", []string{"block"}, 1, func(ctx ow.Context, release <-chan struct{}, started chan<- struct{}) (int, error) {
			return ow.Run(ctx, "block", func(context.Context) (int, error) {
				started <- struct{}{}
				<-release
				return 1, nil
			})
		}},
		{"parallel steps", []string{"left", "right"}, 2, func(ctx ow.Context, release <-chan struct{}, started chan<- struct{}) (int, error) {
			var fs []*ow.Future[int]
			for _, name := range []string{"left", "right"} {
				fs = append(fs, ow.Go(ctx, name, func(context.Context) (int, error) {
					started <- struct{}{}
					<-release
					return 1, nil
				}))
			}
			sum := 0
			for _, f := range fs {
				n, err := f.Get()
				if err != nil {
					return 0, err
				}
				sum += n
			}
			return sum, nil
		}},
		{"workflow code", []string{"no step"}, 1, func(ctx ow.Context, release <-chan struct{}, started chan<- struct{}) (int, error) {
			n, err := ow.Run(ctx, "before", func(context.Context) (int, error) { return 1, nil })
			if err != nil {
				return 0, err
			}
			started <- struct{}{}
			<-release // the workflow's own code ignores its context
			return ow.Run(ctx, "after", func(context.Context) (int, error) { return n + 1, nil })
		}},
	}
	for i, tc := range cases {
		t.Run(testBackend()+"/"+tc.name, func(t *testing.T) {
			b := openTestBackend(t, nil)
			release := newGate(t)
			started := make(chan struct{}, 2)
			stuck := ow.Define(ow.Spec{Name: fmt.Sprintf("stuck-%d", i)}, func(ctx ow.Context, _ int) (int, error) {
				return tc.body(ctx, release.ch, started)
			})
			quick := ow.Define(ow.Spec{Name: fmt.Sprintf("quick-%d", i)}, func(ctx ow.Context, in int) (int, error) { return in + 1, nil })
			m := newAbandonMetrics()
			var logs syncBuffer
			w, ctx := startStubbornWorker(t, b, ow.WorkerOptions{Concurrency: 1, AbandonStepAfter: 100 * time.Millisecond, Metrics: m,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}, stuck, quick)
			c := ow.NewClient(b)
			h, err := stuck.Start(ctx, c, 0)
			if err != nil {
				t.Fatal(err)
			}
			for range tc.starts {
				select {
				case <-started:
				case <-ctx.Done():
					t.Fatal("the user code never started")
				}
			}
			if _, err := c.CancelRun(ctx, h.ID); err != nil {
				t.Fatal(err)
			}
			m.waitFor(t, 1)
			line := excerpt(excerpt(logs.String(), "abandon"), h.ID)
			for _, where := range tc.where {
				if !strings.Contains(line, where) {
					t.Errorf("the abandonment's log line does not name %q:\n%s", where, logs.String())
				}
			}
			q, err := quick.Start(ctx, c, 1)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := q.Result(ctx); err != nil || out != 2 {
				t.Fatalf("the next run in the freed slot: %d, %v", out, err)
			}
			release.open()
			m.waitFor(t, 0)
			if err := w.Stop(ctx); err != nil {
				t.Fatalf("stop: %v", err)
			}
			if r := waitTerminal(t, b, h.ID); r.Status != backend.RunCanceled {
				t.Errorf("run is %s after its abandoned code returned, want still canceled", r.Status)
			}
			page, err := b.ListStepAttempts(ctx, backend.ListStepAttemptsParams{WorkflowRunID: h.ID, Limit: backend.MaxPageSize})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page.Data {
				if s.StepName == "after" || (s.StepName != "before" && s.Status != backend.StepRunning) {
					t.Errorf("step %s is %s; the abandoned code's late return must record nothing", s.StepName, s.Status)
				}
			}
		})
	}
}

// tickWithin runs one tick of w, failing the test if it has not returned
// after 10 s, and returns what it returned.
func tickWithin(t *testing.T, w *ow.Worker) (int, error) {
	t.Helper()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := testhooks.Tick(context.Background(), w)
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		return r.n, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("a tick has not returned after 10 s: it waits for steps that ignore their context")
		return 0, nil
	}
}

// TestAWorkerSaturatedByAbandonedStepsClaimsNothingAndSaysSo abandons
// MaxAbandonedSteps steps: the worker then claims nothing, though its
// slots are free, and says why and what to do; when one of the steps
// returns, it claims again.
func TestAWorkerSaturatedByAbandonedStepsClaimsNothingAndSaysSo(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, func(o *ow.WorkerOptions) {
		o.Concurrency, o.MaxAbandonedSteps, o.AbandonStepAfter = 2, 2, 50*time.Millisecond
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	gates := []*gate{newGate(t), newGate(t)}
	stubborn := ow.Define(ow.Spec{Name: "stubborn"}, func(ctx ow.Context, i int) (int, error) {
		return ow.Run(ctx, "ignore-context", func(context.Context) (int, error) {
			<-gates[i].ch
			return i, nil
		})
	})
	quick := ow.Define(ow.Spec{Name: "quick"}, func(ctx ow.Context, in int) (int, error) { return in + 1, nil })
	e.register(stubborn, quick)
	// The pass's context ends at the deadline, counted in real time from
	// the fake clock's now.
	for i := range gates {
		start(e, stubborn, i, ow.WithDeadline(e.clock.Now().Add(500*time.Millisecond)))
	}
	if n, err := tickWithin(t, e.worker); n != 2 || err != nil {
		t.Fatalf("first tick: claimed %d, %v; want 2 runs, abandoned", n, err)
	}
	if n := e.worker.AbandonedSteps(); n != 2 {
		t.Fatalf("AbandonedSteps() = %d, want 2", n)
	}
	id := start(e, quick, 1)
	n, err := tickWithin(t, e.worker)
	if n != 0 || !errors.Is(err, ow.ErrAbandonedSteps) {
		t.Fatalf("tick of a saturated worker: claimed %d, %v; want none, ErrAbandonedSteps", n, err)
	}
	for _, want := range []string{"MaxAbandonedSteps", "restart"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if line := excerpt(logs.String(), "saturated"); !strings.Contains(line, "level=ERROR") {
		t.Errorf("no error logged that the worker is saturated:\n%s", logs.String())
	}
	e.requireStatus(id, backend.RunPending)

	gates[0].open()
	waitAbandoned(t, e.worker, 1)
	if n, err := tickWithin(t, e.worker); n != 1 || err != nil {
		t.Fatalf("tick after an abandoned step returned: claimed %d, %v; want 1", n, err)
	}
	if got := output[int](e, id); got != 2 {
		t.Fatalf("output %d, want 2", got)
	}
	gates[1].open()
	waitAbandoned(t, e.worker, 0)
}

// TestStopReturnsThoughAStepIgnoresItsContext stops a worker whose step
// ignores its context: Stop hands the run back and returns after the
// grace period and AbandonStepAfter, reporting the abandoned step, rather
// than waiting for it; the step's late return records nothing.
func TestStopReturnsThoughAStepIgnoresItsContext(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend.Backend) {
		release := newGate(t)
		started := make(chan struct{}, 1)
		wf := ow.Define(ow.Spec{Name: "stubborn"}, func(ctx ow.Context, _ int) (int, error) {
			return ow.Run(ctx, "ignore-context", func(context.Context) (int, error) {
				started <- struct{}{}
				<-release.ch
				return 1, nil
			})
		})
		w, ctx := startStubbornWorker(t, b, ow.WorkerOptions{Concurrency: 1, ID: "stopping", ShutdownGracePeriod: 100 * time.Millisecond,
			AbandonStepAfter: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}, wf)
		h, err := wf.Start(ctx, ow.NewClient(b), 0)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the step never started")
		}
		stopCtx, stopCancel := context.WithTimeout(ctx, 10*time.Second)
		defer stopCancel()
		err = w.Stop(stopCtx)
		if !errors.Is(err, ow.ErrAbandonedSteps) || !strings.Contains(err.Error(), "1 ") {
			t.Fatalf("Stop: %v; want ErrAbandonedSteps, saying one step was abandoned", err)
		}
		r, err := b.GetWorkflowRun(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.WorkerID != nil && strings.HasPrefix(*r.WorkerID, "stopping/") {
			t.Errorf("the run is still leased to the stopped worker (%s, %s)", r.Status, *r.WorkerID)
		}
		release.open()
		waitAbandoned(t, w, 0)
		requireNothingRecordedAfter(t, b, h.ID, "ignore-context")
	})
}

// TestAStepIgnoringItsContextIsAbandonedWhenASiblingsWriteFails runs a
// parallel step that ignores its context while a step of the same pass
// fails to record (the backend lost the connection): the pass has lost its
// run, so its context ends, the blocked step is abandoned, and the run is
// handed back at once; once the step returned, the next pass completes
// the run.
func TestAStepIgnoringItsContextIsAbandonedWhenASiblingsWriteFails(t *testing.T) {
	e := newEnv(t)
	fb := &failingOnce{Backend: e.b, k: backend.WriteInsertStep}
	e.worker = ow.NewWorker(fb, ow.WorkerOptions{Concurrency: 1, Now: e.clock.Now, ClaimAhead: -1, RunningStepAfter: time.Hour,
		AbandonStepAfter: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	release := newGate(t)
	started := make(chan struct{}, 1)
	wf := ow.Define(ow.Spec{Name: "sibling-fails"}, func(ctx ow.Context, in int) (int, error) {
		slow := ow.Go(ctx, "slow", func(context.Context) (int, error) {
			select {
			case started <- struct{}{}:
			default:
			}
			<-release.ch // ignores its context
			return 1, nil
		})
		<-started // replays: the gate is open, slow returns at once
		quick, err := ow.Run(ctx, "quick", func(context.Context) (int, error) { return 2, nil })
		if err != nil {
			return 0, err
		}
		// This step's barrier commits quick's record: the first pass's
		// commit fails there.
		next, err := ow.Run(ctx, "next", func(context.Context) (int, error) { return 3, nil })
		if err != nil {
			return 0, err
		}
		s, err := slow.Get()
		return in + s + quick + next, err
	})
	e.register(wf)
	id := start(e, wf, 10)
	if n, err := tickWithin(t, e.worker); n != 1 || err != nil {
		t.Fatalf("first tick: claimed %d, %v", n, err)
	}
	if n := e.worker.AbandonedSteps(); n != 1 {
		t.Fatalf("AbandonedSteps() = %d, want 1: the slow step ignores the context of a pass that lost its run", n)
	}
	if r := e.run(id); r.Status == backend.RunRunning && r.WorkerID != nil {
		t.Fatalf("the run is still leased to %s; want it handed back at once", *r.WorkerID)
	}
	release.open()
	waitAbandoned(t, e.worker, 0)
	e.drain()
	if got := output[int](e, id); got != 16 {
		t.Fatalf("output %d, want 16", got)
	}
}

// TestAStepIgnoringItsContextIsAbandonedWhenItsLeaseIsLost lets a run's
// lease expire while its step ignores its context, and a second worker
// take the run over and complete it: the first worker's heartbeat is
// refused, its pass's context ends and the step is abandoned; when the
// step returns at last, its result is not recorded over the second
// worker's.
func TestAStepIgnoringItsContextIsAbandonedWhenItsLeaseIsLost(t *testing.T) {
	const lease = time.Minute
	e := newEnv(t, func(o *ow.WorkerOptions) {
		o.Concurrency, o.LeaseDuration, o.HeartbeatInterval, o.AbandonStepAfter = 1, lease, 200*time.Millisecond, 50*time.Millisecond
		o.Logger = slog.New(slog.DiscardHandler)
	})
	release := newGate(t)
	started := make(chan struct{}, 1)
	var c counter
	wf := ow.Define(ow.Spec{Name: "taken-over"}, func(ctx ow.Context, in int) (int, error) {
		return ow.Run(ctx, "step", func(context.Context) (int, error) {
			if c.inc("step") == 1 {
				started <- struct{}{}
				<-release.ch // the first attempt ignores its context
				return -1, nil
			}
			return in + 1, nil
		})
	})
	e.register(wf)
	second := ow.NewWorker(e.b, ow.WorkerOptions{Concurrency: 1, ID: "second-worker", Now: e.clock.Now, ClaimAhead: -1, LeaseDuration: lease,
		Logger: slog.New(slog.DiscardHandler)})
	if err := second.Register(wf); err != nil {
		t.Fatal(err)
	}
	id := start(e, wf, 41)
	first := make(chan error, 1)
	go func() {
		_, err := testhooks.Tick(context.Background(), e.worker)
		first <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the step never started")
	}
	// The lease runs out by the clock the backend reads; the first
	// worker's heartbeat may renew it just before the second claims, so
	// the clock moves on until the second worker has the run.
	for i := 0; ; i++ {
		if i == 10 {
			t.Fatal("the second worker never took the run over")
		}
		e.clock.Advance(2 * lease)
		n, err := tickWithin(t, second)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
	}
	if got := output[int](e, id); got != 42 {
		t.Fatalf("output %d, want 42 from the second worker", got)
	}
	select {
	case err := <-first:
		if err != nil {
			t.Fatalf("the first worker's tick: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first worker's tick waits for its step, though its lease was lost")
	}
	if n := e.worker.AbandonedSteps(); n != 1 {
		t.Fatalf("AbandonedSteps() = %d, want 1", n)
	}
	release.open()
	waitAbandoned(t, e.worker, 0)
	if got := output[int](e, id); got != 42 {
		t.Fatalf("output %d after the abandoned step returned, want still 42", got)
	}
	completed := 0
	for _, s := range e.steps(id) {
		if s.Status == backend.StepCompleted {
			completed++
			if string(s.Output) != "42" {
				t.Errorf("step %s completed with %s, want 42", s.StepName, s.Output)
			}
		}
	}
	if completed != 1 {
		t.Errorf("%d completed attempts of the step, want 1 (the second worker's)", completed)
	}
}
