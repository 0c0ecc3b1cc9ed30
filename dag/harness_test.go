package dag_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/dag"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		// A worker process of the crash tests: no leak check, it is killed.
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}

// target is a backend a test runs on: a SQLite file of its own, or a
// fresh PostgreSQL schema dropped when the test ends. open's now is the
// backend's injected clock; nil means the real one (the database's, on
// PostgreSQL).
type target struct {
	name string
	open func(t testing.TB, now func() time.Time) (b backend.Backend, dsn string)
}

var targets = []target{
	{"sqlite", func(t testing.TB, now func() time.Time) (backend.Backend, string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "ow.db")
		b, err := sqlite.Open(context.Background(), path, sqlite.Options{Synchronous: "NORMAL", Now: now})
		if err != nil {
			t.Fatalf("open sqlite: %v", err)
		}
		t.Cleanup(func() { b.Close() })
		return b, path
	}},
	{"postgres", func(t testing.TB, now func() time.Time) (backend.Backend, string) {
		t.Helper()
		b := pgtest.Open(t, postgres.Options{Now: now})
		return b, b.Schema()
	}},
}

// forEachTarget runs f as a parallel subtest on each backend.
func forEachTarget(t *testing.T, f func(t *testing.T, fx *fixture)) {
	t.Helper()
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			b, _ := tg.open(t, nil)
			f(t, newFixture(t, b, dag.Options{}))
		})
	}
}

// fixture is a backend with a client, an engine and a recorder of
// handler executions.
type fixture struct {
	t   *testing.T
	ctx context.Context
	b   backend.Backend
	c   *ow.Client
	eng *dag.Engine
	rec *recorder
}

func newFixture(t *testing.T, b backend.Backend, opts dag.Options) *fixture {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	c := ow.NewClient(b)
	return &fixture{t: t, ctx: ctx, b: b, c: c, eng: dag.New(c, opts), rec: &recorder{}}
}

// handle registers a recorded handler: fn runs between the recorded start
// and end events (a nil fn returns the step's name).
func (fx *fixture) handle(name string, fn dag.Handler) {
	fx.t.Helper()
	if err := fx.eng.Handle(name, fx.rec.wrap(name, fn)); err != nil {
		fx.t.Fatal(err)
	}
}

func (fx *fixture) define(d dag.Definition) dag.Definition {
	fx.t.Helper()
	got, err := fx.eng.Define(fx.ctx, d)
	if err != nil {
		fx.t.Fatalf("define %s: %v", d.Name, err)
	}
	return got
}

// startWorker starts a worker executing the DAG workflows names, stopped
// when the test ends.
func (fx *fixture) startWorker(opts ow.WorkerOptions, names ...string) *ow.Worker {
	fx.t.Helper()
	w := ow.NewWorker(fx.b, opts)
	for _, n := range names {
		if err := w.Register(fx.eng.Workflow(n)); err != nil {
			fx.t.Fatal(err)
		}
	}
	if err := w.Start(fx.ctx); err != nil {
		fx.t.Fatal(err)
	}
	fx.t.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			fx.t.Errorf("stop worker: %v", err)
		}
	})
	return w
}

func (fx *fixture) start(name string, input any) string {
	fx.t.Helper()
	h, err := fx.eng.Start(fx.ctx, name, input)
	if err != nil {
		fx.t.Fatalf("start %s: %v", name, err)
	}
	return h.ID
}

// finish waits until the run is terminal and returns its DAG status.
func (fx *fixture) finish(runID string) *dag.RunStatus {
	fx.t.Helper()
	var st *dag.RunStatus
	waitFor(fx.t, time.Minute, "run "+runID+" to end", func() (bool, error) {
		run, err := fx.c.GetRun(fx.ctx, runID)
		if err != nil {
			return false, err
		}
		if !run.Status.Terminal() {
			return false, nil
		}
		st, err = fx.eng.Status(fx.ctx, runID)
		return true, err
	})
	return st
}

// waitFor polls cond every 10 ms until it holds, fails or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after %v", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// event is one recorded handler start or end.
type event struct {
	seq     int
	handler string
	step    string
	attempt int
	end     bool
	comp    bool
	at      time.Time
	sc      dag.StepContext
}

// recorder records handler executions in order, safely across goroutines.
type recorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recorder) add(e event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.seq, e.at = len(r.events), time.Now()
	r.events = append(r.events, e)
}

func (r *recorder) wrap(name string, fn dag.Handler) dag.Handler {
	return func(ctx context.Context, sc dag.StepContext) (any, error) {
		r.add(event{handler: name, step: sc.Step, attempt: sc.Attempt, comp: sc.Compensation, sc: sc})
		var out any = sc.Step
		var err error
		if fn != nil {
			out, err = fn(ctx, sc)
		}
		r.add(event{handler: name, step: sc.Step, attempt: sc.Attempt, comp: sc.Compensation, end: true, sc: sc})
		return out, err
	}
}

func (r *recorder) all() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events...)
}

// starts returns the start events of handler executions, in order, as
// "step" (or "compensate:step") with "#k" for attempts after the first.
func (r *recorder) starts() []string {
	var out []string
	for _, e := range r.all() {
		if e.end {
			continue
		}
		s := e.step
		if e.comp {
			s = "compensate:" + s
		}
		if e.attempt > 1 {
			s += fmt.Sprintf("#%d", e.attempt)
		}
		out = append(out, s)
	}
	return out
}

// count counts the executions of a step's handler (compensations apart).
func (r *recorder) count(step string, comp bool) int {
	n := 0
	for _, e := range r.all() {
		if !e.end && e.step == step && e.comp == comp {
			n++
		}
	}
	return n
}

// resultError returns the run's stored error, via Result.
func resultError(t *testing.T, c *ow.Client, runID string) *ow.Error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Handle(runID).Result(ctx)
	var rf *ow.RunFailedError
	if !errors.As(err, &rf) {
		t.Fatalf("Result of run %s: %v, want a RunFailedError", runID, err)
	}
	return rf.Err
}

// def builds a definition tersely, one spec per step:
// "name[:handler[:compensate]][<-dep,dep]"; the handler defaults to the
// step name.
func def(name string, specs ...string) dag.Definition {
	d := dag.Definition{Name: name}
	for _, spec := range specs {
		var s dag.Step
		head, deps, _ := strings.Cut(spec, "<-")
		parts := strings.Split(head, ":")
		s.Name = parts[0]
		s.Handler = parts[0]
		if len(parts) > 1 && parts[1] != "" {
			s.Handler = parts[1]
		}
		if len(parts) > 2 {
			s.Compensate = parts[2]
		}
		if deps != "" {
			s.DependsOn = strings.Split(deps, ",")
		}
		d.Steps = append(d.Steps, s)
	}
	return d
}

// outputOf decodes a JSON output.
func outputOf[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}
