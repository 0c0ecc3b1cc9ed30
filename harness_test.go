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
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
)

// fakeClock is the injected clock of executor tests: time moves only when
// the test says so.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is a worker, a client and a SQLite backend sharing one fake clock.
// Tests drive the worker pass by pass with tick.
type env struct {
	t      *testing.T
	ctx    context.Context
	clock  *fakeClock
	b      *sqlite.Backend
	worker *ow.Worker
	client *ow.Client
}

func newEnv(t *testing.T, opts ...func(*ow.WorkerOptions)) *env {
	t.Helper()
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return newEnvWithClock(t, clock.Now, clock, opts...)
}

// newRealTimeEnv is an env on the real clock, for tests of started workers
// whose behaviour depends on time really passing (leases, wake-ups).
func newRealTimeEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWithClock(t, time.Now, nil)
}

func newEnvWithClock(t *testing.T, now func() time.Time, clock *fakeClock, opts ...func(*ow.WorkerOptions)) *env {
	ctx := context.Background()
	b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ow.db"), sqlite.Options{Now: now, Synchronous: "NORMAL"})
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	wo := ow.WorkerOptions{Concurrency: 4, Now: now, ID: "test-worker"}
	for _, o := range opts {
		o(&wo)
	}
	return &env{t: t, ctx: ctx, clock: clock, b: b, worker: ow.NewWorker(b, wo), client: ow.NewClient(b)}
}

// startWorker starts a worker on b with opts and defs registered, for a
// test of a started worker, and returns a context bounding the test's
// waits (10 s). The worker is stopped when the test ends.
func startWorker(t *testing.T, b backend.Backend, opts ow.WorkerOptions, defs ...ow.Definition) context.Context {
	t.Helper()
	w := ow.NewWorker(b, opts)
	if err := w.Register(defs...); err != nil {
		t.Fatalf("register: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
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
	n, err := e.worker.Tick(e.ctx)
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
	p, err := e.b.ListStepAttempts(e.ctx, backend.ListStepAttemptsParams{WorkflowRunID: runID, Limit: 10000})
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
