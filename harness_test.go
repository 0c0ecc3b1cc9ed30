package openworkflow_test

import (
	"context"
	"encoding/json"
	"path/filepath"
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

// fakeClock is the injected clock of executor tests: time moves only when
// the test says so.
type fakeClock = owtest.Clock

// env is a worker, a client and a backend (this round's: see TestMain)
// sharing one clock. Tests drive the worker pass by pass with tick.
type env struct {
	t      *testing.T
	ctx    context.Context
	clock  *fakeClock // nil on the real clock
	b      backend.Backend
	worker *ow.Worker
	client *ow.Client
}

// openTestBackend opens this round's backend for t on the clock now (nil:
// the real one): a SQLite file of the test's own, or a PostgreSQL schema of
// its own.
func openTestBackend(t *testing.T, now func() time.Time) backend.Backend {
	t.Helper()
	if testBackend() == "postgres" {
		return pgtest.Open(t, postgres.Options{Now: now})
	}
	b, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ow.db"), sqlite.Options{Now: now, Synchronous: "NORMAL"})
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newEnv is an env on a fake clock, with four slots, as owtest.New makes
// one (on this round's backend).
func newEnv(t *testing.T, opts ...func(*ow.WorkerOptions)) *env {
	t.Helper()
	clock := owtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	wo := ow.WorkerOptions{Concurrency: 4, ID: "test-worker", ClaimAhead: -1}
	for _, o := range opts {
		o(&wo)
	}
	wo.Now = clock.Now
	b := openTestBackend(t, clock.Now)
	return &env{t: t, ctx: context.Background(), clock: clock, b: b, worker: ow.NewWorker(b, wo), client: ow.NewClient(b)}
}

// newRealTimeEnv is an env on the real clock, for tests of started workers
// whose behaviour depends on time really passing (leases, wake-ups).
func newRealTimeEnv(t *testing.T) *env {
	t.Helper()
	b := openTestBackend(t, nil)
	w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: 4, ID: "test-worker"})
	return &env{t: t, ctx: context.Background(), b: b, worker: w, client: ow.NewClient(b)}
}

// startWorker starts a worker on b with opts and defs registered, for a
// test of a started worker, and returns a context bounding the test's
// waits (60 s: a bound for a test that hangs, wide enough for CI's loaded
// machines — the worker runs under it too). The worker is stopped when the
// test ends.
func startWorker(t *testing.T, b backend.Backend, opts ow.WorkerOptions, defs ...ow.Definition) context.Context {
	t.Helper()
	w := ow.NewWorker(b, opts)
	if err := w.Register(defs...); err != nil {
		t.Fatalf("register: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	if err := w.Start(ctx); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Errorf("stop worker: %v", err)
		}
	})
	return ctx
}

func (e *env) register(defs ...ow.Definition) {
	e.t.Helper()
	if err := e.worker.Register(defs...); err != nil {
		e.t.Fatalf("register: %v", err)
	}
}

// tick runs one worker tick (claim + one pass of each claimed run) and
// returns the number of runs claimed.
func (e *env) tick() int {
	e.t.Helper()
	n, err := testhooks.Tick(e.ctx, e.worker)
	if err != nil {
		e.t.Fatalf("tick: %v", err)
	}
	return n
}

// drain ticks until nothing is claimable at the current fake time.
func (e *env) drain() {
	e.t.Helper()
	for i := 0; ; i++ {
		if i > 100 {
			e.t.Fatal("drain: still claiming after 100 ticks")
		}
		if e.tick() == 0 {
			return
		}
	}
}

func (e *env) run(id string) *backend.WorkflowRun {
	e.t.Helper()
	r, err := e.b.GetWorkflowRun(e.ctx, id)
	if err != nil {
		e.t.Fatalf("get run %s: %v", id, err)
	}
	return r
}

func (e *env) steps(runID string) []backend.StepAttempt {
	e.t.Helper()
	p, err := e.b.ListStepAttempts(e.ctx, backend.ListStepAttemptsParams{WorkflowRunID: runID, Limit: backend.MaxPageSize})
	if err != nil {
		e.t.Fatalf("list steps of %s: %v", runID, err)
	}
	return p.Data
}

func (e *env) stepNames(runID string) []string {
	var names []string
	for _, s := range e.steps(runID) {
		names = append(names, s.StepName)
	}
	return names
}

func (e *env) requireStatus(runID string, want backend.RunStatus) *backend.WorkflowRun {
	e.t.Helper()
	r := e.run(runID)
	if r.Status != want {
		e.t.Fatalf("run %s: status %q, want %q (error %s)", runID, r.Status, want, r.Error)
	}
	return r
}

// output decodes a completed run's output.
func output[T any](e *env, runID string) T {
	e.t.Helper()
	r := e.requireStatus(runID, backend.RunCompleted)
	var v T
	if err := json.Unmarshal(r.Output, &v); err != nil {
		e.t.Fatalf("decode output %s: %v", r.Output, err)
	}
	return v
}

func start[I, O any](e *env, wf *ow.Workflow[I, O], in I, opts ...ow.StartOption) string {
	e.t.Helper()
	h, err := wf.Start(e.ctx, e.client, in, opts...)
	if err != nil {
		e.t.Fatalf("start %s: %v", wf.Spec().Name, err)
	}
	return h.ID
}

// errorOf decodes a run's stored error.
func errorOf(e *env, r *backend.WorkflowRun) map[string]any {
	e.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Error, &m); err != nil {
		e.t.Fatalf("decode error %s: %v", r.Error, err)
	}
	return m
}

// counter counts executions per key, safely across goroutines.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) inc(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
	return c.n[k]
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

// eachBackend runs f as a subtest, named after this round's backend (see
// TestMain), on that backend on the real clock.
func eachBackend(t *testing.T, f func(t *testing.T, b backend.Backend)) {
	t.Helper()
	t.Run(testBackend(), func(t *testing.T) { f(t, openTestBackend(t, nil)) })
}

// bothBackends runs f as a subtest on SQLite and then on PostgreSQL, in
// one process, for a test that compares what the two stored. It runs in
// the SQLite round only (TestMain's PostgreSQL round would repeat it).
func bothBackends(t *testing.T, f func(t *testing.T, b backend.Backend)) {
	t.Helper()
	if testBackend() != "sqlite" {
		t.Skip("compares both backends; ran in the SQLite round")
	}
	t.Run("sqlite", func(t *testing.T) { f(t, openTestBackend(t, nil)) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.Open(t, postgres.Options{})) })
}

// waitTerminal waits (up to 30 s) until run id is terminal and returns it.
func waitTerminal(t *testing.T, b backend.Backend, id string) *backend.WorkflowRun {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := b.GetWorkflowRun(context.Background(), id)
		if err != nil {
			t.Fatalf("get run %s: %v", id, err)
		}
		if r.Status.Terminal() {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %s after 30 s", id, r.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// storedError decodes a run's stored error.
func storedError(t *testing.T, r *backend.WorkflowRun) ow.Error {
	t.Helper()
	var e ow.Error
	if err := json.Unmarshal(r.Error, &e); err != nil {
		t.Fatalf("run %s: decode error %s: %v", r.ID, r.Error, err)
	}
	return e
}
