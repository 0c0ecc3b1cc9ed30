package interop

import (
	"context"
	"errors"
	"github.com/jackc/pgx/v5"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/testhooks"
)

// env is one test's namespace: a Go backend and client on it, and the
// means to start Go workers and TypeScript processes on the same one.
type env struct {
	t      *testing.T
	ns     string
	schema string
	b      *postgres.Backend
	client *ow.Client
}

// newEnv opens a fresh random namespace in the shared schema.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvIn(t, sharedSchema, randomName("interop-"))
}

// newEnvIn opens namespace ns of schema, which must be migrated already.
func newEnvIn(t *testing.T, schema, ns string) *env {
	t.Helper()
	b, err := postgres.FromPool(pool, postgres.Options{NamespaceID: ns, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return &env{t: t, ns: ns, schema: schema, b: b, client: ow.NewClient(b)}
}

// ts starts a TypeScript harness process on the env's namespace and schema.
func (e *env) ts() *tsProc {
	e.t.Helper()
	return startTS(e.t, e.ns, tsOptions{Schema: e.schema})
}

// goWorker starts a Go worker with short leases and polls, stopped when the
// test ends (or earlier by the returned stop function).
func (e *env) goWorker(defs ...ow.Definition) (stop func()) {
	e.t.Helper()
	w := ow.NewWorker(e.b, ow.WorkerOptions{
		Concurrency:         4,
		LeaseDuration:       5 * time.Second,
		MaxPollInterval:     200 * time.Millisecond,
		ShutdownGracePeriod: 2 * time.Second,
		Logger:              testLogger(e.t),
		ID:                  "go-" + e.ns,
	})
	if err := w.Register(defs...); err != nil {
		e.t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := w.Stop(ctx); err != nil {
				e.t.Errorf("stop Go worker: %v", err)
			}
		})
	}
	e.t.Cleanup(stop)
	return stop
}

// goManualWorker returns an unstarted Go worker, driven by its Tick, for
// tests that must control exactly which runs the Go side claims.
func (e *env) goManualWorker(defs ...ow.Definition) *ow.Worker {
	e.t.Helper()
	w := ow.NewWorker(e.b, ow.WorkerOptions{Concurrency: 1, LeaseDuration: 5 * time.Second, Logger: testLogger(e.t), ID: "go-manual-" + e.ns})
	if err := w.Register(defs...); err != nil {
		e.t.Fatal(err)
	}
	return w
}

// tickUntil ticks w every 50 ms until cond holds.
func (e *env) tickUntil(w *ow.Worker, timeout time.Duration, what string, cond func() (bool, string)) {
	e.t.Helper()
	eventually(e.t, timeout, what, func() (bool, string) {
		if ok, _ := cond(); ok {
			return true, ""
		}
		if _, err := testhooks.Tick(context.Background(), w); err != nil {
			return false, err.Error()
		}
		return cond()
	})
}

// testLogger logs warnings and errors of the Go worker to the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // a log line after the test ended
	w.t.Log(string(p))
	return len(p), nil
}

var _ io.Writer = testWriter{}

// run reads a run with the Go backend.
func (e *env) run(id string) *backend.WorkflowRun {
	e.t.Helper()
	r, err := e.b.GetWorkflowRun(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// steps lists a run's attempts with the Go backend.
func (e *env) steps(id string) []backend.StepAttempt {
	e.t.Helper()
	p, err := e.b.ListStepAttempts(context.Background(), backend.ListStepAttemptsParams{WorkflowRunID: id, Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	return p.Data
}

// waitParked waits until the run is parked (running, unowned) on a running
// attempt of kind k.
func (e *env) waitParked(id string, k backend.StepKind, timeout time.Duration) {
	e.t.Helper()
	eventually(e.t, timeout, "run "+id+" to park on a "+string(k)+" step", func() (bool, string) {
		r, err := e.b.GetWorkflowRun(context.Background(), id)
		if err != nil {
			return false, err.Error()
		}
		if r.Status != backend.RunRunning || r.WorkerID != nil {
			return false, "status " + string(r.Status)
		}
		for _, a := range e.steps(id) {
			if a.Kind == k && a.Status == backend.StepRunning {
				return true, ""
			}
		}
		return false, "no running " + string(k) + " attempt"
	})
}

// result waits for a Go handle's result within timeout.
func result[O any](t *testing.T, h *ow.Handle[O], timeout time.Duration) O {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := h.Result(ctx)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Go handle.Result of run %s: no result within %v", h.ID, timeout)
		}
		t.Fatalf("Go handle.Result of run %s: %v", h.ID, err)
	}
	return out
}

// table is the quoted name of a table of the shared schema, for the
// tests' own SQL.
func table(name string) string { return pgx.Identifier{sharedSchema, name}.Sanitize() }
