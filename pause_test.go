package openworkflow_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
	"github.com/openworkflow-go/openworkflow/internal/testhooks"
	"github.com/openworkflow-go/openworkflow/owtest"
)

// openReopenable opens this round's backend on a database that outlives
// it: open returns a new backend on the same SQLite file or PostgreSQL
// schema each time, closed when t ends (or before, by the test).
func openReopenable(t *testing.T, now func() time.Time) (open func() backend.Backend) {
	t.Helper()
	if testBackend() == "postgres" {
		schema := pgtest.NewSchema(t)
		return func() backend.Backend {
			b, err := postgres.Open(context.Background(), pgtest.URL(), postgres.Options{Schema: schema, Now: now})
			if err != nil {
				t.Fatalf("open postgres schema %s: %v", schema, err)
			}
			t.Cleanup(func() { _ = b.Close() })
			return b
		}
	}
	path := filepath.Join(t.TempDir(), "ow.db")
	return func() backend.Backend {
		b, err := sqlite.Open(context.Background(), path, sqlite.Options{Now: now, Synchronous: "NORMAL"})
		if err != nil {
			t.Fatalf("open sqlite %s: %v", path, err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
}

// logSignal is a slog handler that closes a channel the first time a
// record's message contains a substring: a condition a test can wait on.
type logSignal struct {
	sub  string
	once *sync.Once
	ch   chan struct{}
}

func (l logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (l logSignal) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, l.sub) {
		l.once.Do(func() { close(l.ch) })
	}
	return nil
}
func (l logSignal) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l logSignal) WithGroup(string) slog.Handler      { return l }

func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting: %s", what)
	}
}

func TestPauseMidStepRecordsTheStepStartsNoOtherSurvivesReopenAndResumesEachStepOnce(t *testing.T) {
	clock := owtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	open := openReopenable(t, clock.Now)
	b := open()

	var calls counter
	inFirst, release := make(chan struct{}), make(chan struct{})
	wf := ow.Define(ow.Spec{Name: "p-mid-step"}, func(ctx ow.Context, _ int) (int, error) {
		one, err := ow.Run(ctx, "first", func(context.Context) (int, error) {
			if calls.inc("first") == 1 {
				close(inFirst)
				<-release
			}
			return 1, nil
		})
		if err != nil {
			return 0, err
		}
		two, err := ow.Run(ctx, "second", func(context.Context) (int, error) {
			calls.inc("second")
			return 2, nil
		})
		if err != nil {
			return 0, err
		}
		return one + two, nil
	})

	seen := logSignal{sub: "run paused", once: new(sync.Once), ch: make(chan struct{})}
	w := ow.NewWorker(b, ow.WorkerOptions{
		Now: clock.Now, HeartbeatInterval: 20 * time.Millisecond, LeaseDuration: time.Hour,
		Logger: slog.New(seen),
	})
	if err := w.Register(wf); err != nil {
		t.Fatal(err)
	}
	client := ow.NewClient(b)
	h, err := wf.Start(context.Background(), client, 0)
	if err != nil {
		t.Fatal(err)
	}
	id := h.ID
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, "the first step to start", inFirst)

	res, err := client.PauseRun(ctx, id, "mid-step")
	if err != nil || !res.Acted || !res.Run.Paused() {
		t.Fatalf("PauseRun: %+v, %v; want the run paused", res, err)
	}
	waitClosed(t, "the worker to learn of the pause from its heartbeat", seen.ch)
	close(release) // the step in progress finishes after the pause was seen

	// The worker records the step and hands the run back.
	waitFor(t, "the paused run to be handed back", func() bool {
		r, err := client.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r.WorkerID == nil
	})
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	steps, err := client.ListSteps(ctx, ow.ListStepAttemptsParams{WorkflowRunID: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps.Data) != 1 || steps.Data[0].StepName != "first" || steps.Data[0].Status != backend.StepCompleted {
		t.Fatalf("steps after the pause: %+v; want only first, completed", steps.Data)
	}
	if calls.get("second") != 0 {
		t.Fatal("the second step ran after the pause was seen")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// A new process: the run is still paused and no worker takes it.
	b = open()
	client = ow.NewClient(b)
	r, err := client.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Paused() || r.PauseReason == nil || *r.PauseReason != "mid-step" || r.Status != backend.RunRunning {
		t.Fatalf("after reopening: status %s, paused %v, reason %v; want running and paused for mid-step", r.Status, r.Paused(), r.PauseReason)
	}
	w = ow.NewWorker(b, ow.WorkerOptions{Now: clock.Now, ClaimAhead: -1})
	if err := w.Register(wf); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour) // past any lease
	if n, err := testhooks.Tick(ctx, w); err != nil || n != 0 {
		t.Fatalf("tick on a paused run: claimed %d, %v; want nothing", n, err)
	}

	up, err := client.ResumeRun(ctx, id)
	if err != nil || !up.Acted || up.Run.Paused() {
		t.Fatalf("ResumeRun: %+v, %v; want acted and not paused", up, err)
	}
	for i := 0; ; i++ {
		n, err := testhooks.Tick(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 || i > 10 {
			break
		}
	}
	if out, err := client.Handle(id).Result(ctx); err != nil || string(out) != "3" {
		t.Fatalf("result %s, %v; want 3", out, err)
	}
	if calls.get("first") != 1 || calls.get("second") != 1 {
		t.Fatalf("step executions: first %d, second %d; want each exactly once", calls.get("first"), calls.get("second"))
	}
}

func TestResumeCanceledRunReplaysCompletedStepsAndRunsTheInterruptedOneAgain(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "p-resume-canceled"}, func(ctx ow.Context, _ int) (int, error) {
		one, err := ow.Run(ctx, "first", func(context.Context) (int, error) { calls.inc("first"); return 1, nil })
		if err != nil {
			return 0, err
		}
		if err := ow.Sleep(ctx, "nap", time.Minute); err != nil {
			return 0, err
		}
		two, err := ow.Run(ctx, "second", func(context.Context) (int, error) { calls.inc("second"); return 2, nil })
		return one + two, err
	})
	e.register(wf)
	id := start(e, wf, 0)
	e.tick() // first, then parks in the sleep
	if _, err := e.client.CancelRun(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	e.requireStatus(id, backend.RunCanceled)

	res, err := e.client.ResumeRun(e.ctx, id)
	if err != nil || !res.Acted || res.Run.Status != backend.RunPending || res.Run.ID != id {
		t.Fatalf("ResumeRun of a canceled run: %+v, %v; want the same run pending", res, err)
	}
	e.clock.Advance(2 * time.Minute)
	e.drain()
	if got := output[int](e, id); got != 3 {
		t.Fatalf("output %d, want 3", got)
	}
	if calls.get("first") != 1 || calls.get("second") != 1 {
		t.Fatalf("first ran %d times, second %d; want once each (first replayed from history)", calls.get("first"), calls.get("second"))
	}

	// Resume is not retry: a completed run is refused.
	if _, err := e.client.ResumeRun(e.ctx, id); !errors.Is(err, ow.ErrRunTerminal) {
		t.Fatalf("ResumeRun of a completed run: %v, want ErrRunTerminal", err)
	}
}
