// Package owtest tests workflows without waiting on real time: an [Env] is
// a worker, a client and an embedded SQLite database (in the test's temp
// directory) sharing a fake [Clock], and the test drives the worker one
// pass at a time.
//
//	func TestGreet(t *testing.T) {
//		env := owtest.New(t, ow.WorkerOptions{}, greet)
//		h, err := greet.Start(t.Context(), env.Client, "ada")
//		if err != nil {
//			t.Fatal(err)
//		}
//		env.Drain()                  // runs until the run parks on its sleep
//		env.Clock.Advance(time.Hour) // the sleep is over
//		env.Drain()                  // and the run completes
//		out, err := h.Result(t.Context())
//		...
//	}
//
// Drain returns when nothing is claimable at the clock's time: a run that
// parks on a sleep or a wait is resumed by advancing the clock past it (or
// by the event it waits for), then draining again; a schedule's tick
// starts its run when the clock has passed it and Drain (or
// FireSchedules) is called. Step functions run for real; only the
// engine's notion of time is faked.
package owtest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/internal/clock"
	"github.com/openworkflow-go/openworkflow/internal/testhooks"
)

// Clock is a fake clock: it stands still until the test advances it
// (Advance, Set), and its Now fits every clock the engine takes
// (ow.WorkerOptions.Now, sqlite.Options.Now). It is safe for concurrent
// use.
type Clock = clock.Fake

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return clock.NewFake(t) }

// epoch is where an Env's clock stands when New returns.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Env is a worker, a client and a SQLite backend sharing one fake clock.
// The worker is never started: Tick and Drain execute its passes, on the
// test's goroutine's watch.
type Env struct {
	// Clock is the time of the worker and of the backend.
	Clock *Clock
	// Backend is the SQLite database, a file in the test's temp directory,
	// closed when the test ends.
	Backend *sqlite.Backend
	// Worker executes the registered workflows' runs when ticked.
	Worker *ow.Worker
	// Client starts and inspects runs.
	Client *ow.Client

	t testing.TB
}

// New returns an Env with defs registered on its worker, its clock at
// 2026-01-02 03:04:05 UTC. opts are the
// worker's options; New sets their Now to the Env's clock, an ID when
// none is given, and ClaimAhead to none (it is timed in real time, see
// ow.WorkerOptions.ClaimAhead). It fails t if the database cannot be
// opened or a definition cannot be registered.
func New(t testing.TB, opts ow.WorkerOptions, defs ...ow.Definition) *Env {
	t.Helper()
	c := NewClock(epoch)
	b, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "openworkflow.db"),
		sqlite.Options{Now: c.Now, Synchronous: "NORMAL"})
	if err != nil {
		t.Fatalf("owtest: open SQLite: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	opts.Now = c.Now
	if opts.ID == "" {
		opts.ID = "owtest"
	}
	if opts.ClaimAhead == 0 {
		opts.ClaimAhead = -1
	}
	e := &Env{Clock: c, Backend: b, Worker: ow.NewWorker(b, opts), Client: ow.NewClient(b), t: t}
	if err := e.Worker.Register(defs...); err != nil {
		t.Fatalf("owtest: register: %v", err)
	}
	return e
}

// Tick claims the runs claimable at the clock's time (as many as the
// worker has slots) and executes one pass of each, returning when those
// passes have ended (or their user code, ignoring its ended context, was
// abandoned: see ow.WorkerOptions.AbandonStepAfter), with the number of
// runs claimed. It fails the test if the claim fails.
func (e *Env) Tick() int {
	e.t.Helper()
	n, err := testhooks.Tick(context.Background(), e.Worker)
	if err != nil {
		e.t.Fatalf("owtest: tick: %v", err)
	}
	return n
}

// Drain fires the schedule ticks due at the clock's time (FireSchedules),
// then ticks until nothing is claimable: every run that can move has moved
// as far as it can without the clock advancing. It fails the test after
// 1,000 ticks that each claimed something (a run that never parks nor
// ends).
func (e *Env) Drain() {
	e.t.Helper()
	e.FireSchedules()
	for i := 0; e.Tick() > 0; i++ {
		if i == 1000 {
			e.t.Fatal("owtest: Drain: runs still claimable after 1,000 ticks")
		}
	}
}

// FireSchedules fires the ticks of the Env's schedules due at the clock's
// time, as a started worker does (each tick starts one run, by its
// overlap policy; ticks older than the catch-up window are skipped), and
// returns how many runs they started. Drain calls it first.
func (e *Env) FireSchedules() int {
	e.t.Helper()
	started := 0
	for more := true; more; {
		r, err := e.Backend.FireDueSchedules(context.Background(), backend.FireDueSchedulesParams{})
		if err != nil {
			e.t.Fatalf("owtest: fire schedules: %v", err)
		}
		for _, f := range r.Firings {
			for _, tk := range f.Ticks {
				if tk.Outcome == backend.TickStarted {
					started++
				}
			}
		}
		more = r.More
	}
	return started
}

// Run returns the stored run id, failing the test if it cannot be read.
func (e *Env) Run(id string) *backend.WorkflowRun {
	e.t.Helper()
	r, err := e.Backend.GetWorkflowRun(context.Background(), id)
	if err != nil {
		e.t.Fatalf("owtest: get run %s: %v", id, err)
	}
	return r
}

// Steps returns the step attempts of run id, oldest first.
func (e *Env) Steps(id string) []backend.StepAttempt {
	e.t.Helper()
	p, err := e.Backend.ListStepAttempts(context.Background(), backend.ListStepAttemptsParams{WorkflowRunID: id, Limit: backend.MaxPageSize})
	if err != nil {
		e.t.Fatalf("owtest: list the steps of run %s: %v", id, err)
	}
	return p.Data
}
