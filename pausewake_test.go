package openworkflow_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/testhooks"
	"github.com/openworkflow-go/openworkflow/owtest"
)

// manySteps is a workflow of n steps named s000…, each adding its index
// to the sum; the step at blockAt blocks, on its first execution, until
// release is closed, having closed inStep. starts counts every step start.
type manySteps struct {
	wf              *ow.Workflow[int, int]
	starts          atomic.Int64
	calls           counter
	inStep, release chan struct{}
	releaseOnce     sync.Once
}

func newManySteps(t *testing.T, name string, n, blockAt int) *manySteps {
	m := &manySteps{inStep: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(m.unblock) // a failed test must not leave the step blocked
	m.wf = ow.Define(ow.Spec{Name: name}, func(ctx ow.Context, _ int) (int, error) {
		sum := 0
		for i := range n {
			step := fmt.Sprintf("s%03d", i)
			v, err := ow.Run(ctx, step, func(context.Context) (int, error) {
				m.starts.Add(1)
				if m.calls.inc(step) == 1 && i == blockAt {
					close(m.inStep)
					<-m.release
				}
				return i, nil
			})
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	return m
}

func (m *manySteps) unblock() { m.releaseOnce.Do(func() { close(m.release) }) }

// eachOnce fails t unless each of the n steps ran exactly once.
func (m *manySteps) eachOnce(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		if got := m.calls.get(fmt.Sprintf("s%03d", i)); got != 1 {
			t.Errorf("step s%03d ran %d times; want exactly once", i, got)
		}
	}
	if got := m.starts.Load(); got != int64(n) {
		t.Errorf("%d step starts in all; want %d", got, n)
	}
}

func TestPauseReachesTheExecutingPassBeforeItsNextStepNotAtItsHeartbeat(t *testing.T) {
	clock := owtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	b := openTestBackend(t, clock.Now)
	const n, blockAt = 200, 50
	m := newManySteps(t, "p-wake-many", n, blockAt)

	seen := logSignal{sub: "run paused", once: new(sync.Once), ch: make(chan struct{})}
	// The heartbeat comes every hour: on main, where only the heartbeat
	// reports a pause, the worker would run the 149 other steps.
	w := ow.NewWorker(b, ow.WorkerOptions{
		Now: clock.Now, HeartbeatInterval: time.Hour, LeaseDuration: 2 * time.Hour, Logger: slog.New(seen),
	})
	if err := w.Register(m.wf); err != nil {
		t.Fatal(err)
	}
	client := ow.NewClient(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		m.unblock()
		if err := w.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	h, err := m.wf.Start(ctx, client, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, "step s050 to start", m.inStep)

	res, err := client.PauseRun(ctx, h.ID, "now")
	if err != nil || !res.Acted {
		t.Fatalf("PauseRun: %+v, %v; want acted", res, err)
	}
	atPause := m.starts.Load() // s000…s050: the last one is executing
	if atPause != blockAt+1 {
		t.Fatalf("%d step starts when the pause returned; want %d", atPause, blockAt+1)
	}
	waitClosed(t, "the executing worker to learn of the pause (its heartbeat is an hour away)", seen.ch)
	m.unblock() // the step in progress finishes after the worker learned

	waitFor(t, "the paused run to be handed back", func() bool {
		r, err := client.GetRun(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		return r.WorkerID == nil
	})
	if got := m.starts.Load(); got != atPause {
		t.Fatalf("%d steps started after PauseRun returned; want none but the one executing", got-atPause)
	}
	r, err := client.GetRun(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Paused() || r.Status.Terminal() {
		t.Fatalf("handed back run: status %s, paused %v; want paused, not finished", r.Status, r.Paused())
	}
	steps, err := client.ListSteps(ctx, ow.ListStepAttemptsParams{WorkflowRunID: h.ID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps.Data) != blockAt+1 || steps.Data[blockAt].StepName != "s050" || steps.Data[blockAt].Status != "completed" {
		t.Fatalf("%d steps recorded after the pause; want %d, the last s050 completed", len(steps.Data), blockAt+1)
	}

	if up, err := client.ResumeRun(ctx, h.ID); err != nil || !up.Acted {
		t.Fatalf("ResumeRun: %+v, %v; want acted", up, err)
	}
	out, err := client.Handle(h.ID).Result(ctx)
	if err != nil || string(out) != fmt.Sprint(n*(n-1)/2) {
		t.Fatalf("result %s, %v; want %d", out, err, n*(n-1)/2)
	}
	m.eachOnce(t, n)
}

// A pause announced to the executing worker, then undone by a resume
// before the pass hands the run back: the hand-back of a run that is no
// longer paused is a mere release, and the run is claimed again at once
// (the fake clock does not move) and finishes, each step once.
func TestPauseAnnouncedThenResumedBeforeTheHandBackIsHarmless(t *testing.T) {
	clock := owtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	b := openTestBackend(t, clock.Now)
	const n, blockAt = 20, 5
	m := newManySteps(t, "p-wake-stale", n, blockAt)

	seen := logSignal{sub: "run paused", once: new(sync.Once), ch: make(chan struct{})}
	w := ow.NewWorker(b, ow.WorkerOptions{
		Now: clock.Now, HeartbeatInterval: time.Hour, LeaseDuration: 2 * time.Hour, Logger: slog.New(seen),
	})
	if err := w.Register(m.wf); err != nil {
		t.Fatal(err)
	}
	client := ow.NewClient(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		m.unblock()
		if err := w.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	h, err := m.wf.Start(ctx, client, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, "step s005 to start", m.inStep)
	if res, err := client.PauseRun(ctx, h.ID, ""); err != nil || !res.Acted {
		t.Fatalf("PauseRun: %+v, %v; want acted", res, err)
	}
	waitClosed(t, "the executing worker to learn of the pause", seen.ch)
	if up, err := client.ResumeRun(ctx, h.ID); err != nil || !up.Acted || up.Run.Paused() {
		t.Fatalf("ResumeRun: %+v, %v; want acted, not paused", up, err)
	}
	m.unblock() // the pass now hands back a run that is not paused

	out, err := client.Handle(h.ID).Result(ctx)
	if err != nil || string(out) != fmt.Sprint(n*(n-1)/2) {
		t.Fatalf("result %s, %v; want %d", out, err, n*(n-1)/2)
	}
	m.eachOnce(t, n)
	r, err := client.GetRun(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Paused() || r.PausedAt != nil || r.Attempts != 2 {
		t.Fatalf("finished run: paused %v at %v, %d attempts; want not paused, claimed twice (released once by the stale pause)",
			r.Paused(), r.PausedAt, r.Attempts)
	}
}

// A pause announced for one of the worker's slots before the run's pass
// began (the pause landed between the claim and the pass) is kept for
// that pass, which then starts no step and hands the run back; one
// announced for another worker's slot changes nothing here. Neither run
// is paused in the database, so these announcements are stale: the
// hand-back is a release, and the next claim finishes the run, each step
// once.
func TestPauseAnnouncedBeforeThePassBeganReachesIt(t *testing.T) {
	clock := owtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	b := openTestBackend(t, clock.Now)
	const n = 3
	foreign := newManySteps(t, "p-wake-foreign", n, -1)
	early := newManySteps(t, "p-wake-early", n, -1)
	w := ow.NewWorker(b, ow.WorkerOptions{ID: "pw", Concurrency: 1, Now: clock.Now, HeartbeatInterval: time.Hour, LeaseDuration: 2 * time.Hour})
	if err := w.Register(foreign.wf, early.wf); err != nil {
		t.Fatal(err)
	}
	client := ow.NewClient(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := func() int {
		t.Helper()
		got, err := testhooks.Tick(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	h, err := foreign.wf.Start(ctx, client, 0)
	if err != nil {
		t.Fatal(err)
	}
	testhooks.Deliver(w, backend.Event{Kind: backend.EventRunPaused, WorkflowRunID: h.ID, WorkerID: "other/0"})
	if got := tick(); got != 1 {
		t.Fatalf("claimed %d runs, want 1", got)
	}
	if out, err := client.Handle(h.ID).Result(ctx); err != nil || string(out) != "3" {
		t.Fatalf("run after another worker's pause announcement: %s, %v; want it finished with 3", out, err)
	}
	foreign.eachOnce(t, n)

	h, err = early.wf.Start(ctx, client, 0)
	if err != nil {
		t.Fatal(err)
	}
	testhooks.Deliver(w, backend.Event{Kind: backend.EventRunPaused, WorkflowRunID: h.ID, WorkerID: "pw/0"})
	if got := tick(); got != 1 {
		t.Fatalf("claimed %d runs, want 1", got)
	}
	if got := early.starts.Load(); got != 0 {
		t.Fatalf("%d steps started in the pass announced paused before it began; want none", got)
	}
	r, err := client.GetRun(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.WorkerID != nil || r.Status.Terminal() || r.Paused() || r.AvailableAt == nil || r.AvailableAt.After(clock.Now()) {
		t.Fatalf("run after the announced pass: worker %v, status %s, paused %v, due %v; want handed back, due now (%v)",
			r.WorkerID, r.Status, r.Paused(), r.AvailableAt, clock.Now())
	}
	if got := tick(); got != 1 {
		t.Fatalf("claimed %d runs on the second tick, want the released run", got)
	}
	if out, err := client.Handle(h.ID).Result(ctx); err != nil || string(out) != "3" {
		t.Fatalf("released run: %s, %v; want it finished with 3", out, err)
	}
	early.eachOnce(t, n)
}
