package openflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/openflow"
)

// TestMain fails the package if a test leaves a goroutine behind (a
// worker not stopped, a parallel branch not joined).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// defaultTestURL is used when OPENWORKFLOW_TEST_POSTGRES_URL is not set.
const defaultTestURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func testURL() string {
	if u := os.Getenv("OPENWORKFLOW_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return defaultTestURL
}

// backends are the backends every end-to-end test runs on.
var backends = []string{"sqlite", "postgres"}

// newBackend opens a fresh backend of kind: an SQLite file in the test's
// directory, or a PostgreSQL schema of its own, dropped when the test
// ends. PostgreSQL tests skip only when OPENWORKFLOW_SKIP_POSTGRES=1 and
// the server is unreachable.
func newBackend(t testing.TB, kind string) backend.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch kind {
	case "sqlite":
		b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ow.db"), sqlite.Options{})
		if err != nil {
			t.Fatalf("open sqlite: %v", err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	case "postgres":
		schema := fmt.Sprintf("openflow_test_%d_%d", os.Getpid(), schemaSeq.next())
		b, err := postgres.Open(ctx, testURL(), postgres.Options{Schema: schema})
		if err != nil {
			if os.Getenv("OPENWORKFLOW_SKIP_POSTGRES") == "1" {
				t.Skipf("postgres unreachable (OPENWORKFLOW_SKIP_POSTGRES=1): %v", err)
			}
			t.Fatalf("open postgres at %s (set OPENWORKFLOW_TEST_POSTGRES_URL, or OPENWORKFLOW_SKIP_POSTGRES=1): %v", testURL(), err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := b.Pool().Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
			}
			_ = b.Close()
		})
		return b
	}
	t.Fatalf("unknown backend %q", kind)
	return nil
}

type seq struct {
	mu sync.Mutex
	n  int
}

func (s *seq) next() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return s.n
}

var schemaSeq seq

// quietLogger drops the worker's logs below errors.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testdataDir is the directory of scripts and flows found by path.
func testdataDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.Abs("testdata/dirs")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// flowEnv is a started worker running an engine on one backend.
type flowEnv struct {
	t      testing.TB
	ctx    context.Context
	b      backend.Backend
	client *ow.Client
	engine *openflow.Engine
}

// startEnv starts a worker with the engine (and its directory flows)
// registered on a fresh backend of kind; it is stopped when the test
// ends. The returned context bounds the test's waits (3 minutes).
func startEnv(t testing.TB, kind string, opts ...func(*openflow.Options)) *flowEnv {
	t.Helper()
	return startEnvFor(t, kind, 3*time.Minute, opts...)
}

// startEnvFor is startEnv whose context lasts timeout.
func startEnvFor(t testing.TB, kind string, timeout time.Duration, opts ...func(*openflow.Options)) *flowEnv {
	t.Helper()
	b := newBackend(t, kind)
	o := openflow.Options{Dirs: []string{testdataDir(t)}, WorkDir: t.TempDir(), Logger: quietLogger()}
	for _, f := range opts {
		f(&o)
	}
	e := openflow.New(o)
	w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: 4, MaxPollInterval: 200 * time.Millisecond, Logger: quietLogger(), OnlyRegistered: true})
	if err := e.Register(w, true); err != nil {
		t.Fatalf("register: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	if err := w.Start(ctx); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Errorf("stop worker: %v", err)
		}
	})
	return &flowEnv{t: t, ctx: ctx, b: b, client: ow.NewClient(b), engine: e}
}

// start validates and starts a flow document with args.
func (e *flowEnv) start(doc []byte, args string) string {
	e.t.Helper()
	f, err := openflow.Parse(doc)
	if err != nil {
		e.t.Fatalf("parse: %v", err)
	}
	h, err := e.engine.Start(e.ctx, e.client, f, json.RawMessage(args), "test")
	if err != nil {
		e.t.Fatalf("start: %v", err)
	}
	return h.ID
}

// wait waits for a run's result.
func (e *flowEnv) wait(runID string) *openflow.Result {
	e.t.Helper()
	res, err := openflow.Wait(e.ctx, e.client, runID)
	if err != nil {
		e.t.Fatalf("wait for run %s: %v\nsteps:\n%s", runID, err, e.describeSteps(runID))
	}
	return res
}

// run starts a flow and waits for its result.
func (e *flowEnv) run(doc []byte, args string) *openflow.Result {
	e.t.Helper()
	return e.wait(e.start(doc, args))
}

// steps lists a run's step attempts.
func (e *flowEnv) steps(runID string) []backend.StepAttempt {
	e.t.Helper()
	s, err := openflow.RunSteps(e.ctx, e.client, runID)
	if err != nil {
		e.t.Fatalf("steps of %s: %v", runID, err)
	}
	return s
}

func (e *flowEnv) describeSteps(runID string) string {
	steps, err := openflow.RunSteps(context.Background(), e.client, runID)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&b, "  %s %s %s %s\n", s.StepName, s.Status, truncate(string(s.Output), 300), s.Error)
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// requireRunners skips the test when a runner it needs is not installed,
// saying how to install it (.ci/run installs bun and deno from npm).
func requireRunners(t testing.TB, f *openflow.Flow) {
	t.Helper()
	err := openflow.New(openflow.Options{Dirs: []string{testdataDir(t)}}).Check(f)
	var ve *openflow.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			if strings.Contains(p.Message, "runner is not installed") {
				t.Skipf("skipped: %s", p.Message)
			}
		}
		t.Fatalf("check: %v", err)
	}
}

// waitFor polls cond every 20 ms until it holds or ctx ends.
func waitFor(ctx context.Context, t testing.TB, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
