package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/dag"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
	"github.com/openworkflow-go/openworkflow/openflow"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		// Every status a route answered in the tests is documented.
		for _, problem := range statuses.undocumented() {
			fmt.Fprintln(os.Stderr, "openapi.json:", problem)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// backends are the targets every API test runs on: a SQLite file of its
// own, or a PostgreSQL schema of its own dropped at the end.
var backends = []struct {
	name string
	open func(t testing.TB) backend.Backend
}{
	{"sqlite", func(t testing.TB) backend.Backend {
		b, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ow.db"), sqlite.Options{Synchronous: "NORMAL"})
		if err != nil {
			t.Fatalf("open sqlite: %v", err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}},
	{"postgres", func(t testing.TB) backend.Backend {
		if pgtest.Skipped() {
			t.Skip("OPENWORKFLOW_SKIP_POSTGRES=1")
		}
		return pgtest.Open(t, postgres.Options{})
	}},
}

// eachBackend runs f as a parallel subtest per backend, with a server.
func eachBackend(t *testing.T, opts api.Options, f func(t *testing.T, s *server)) {
	t.Helper()
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			t.Parallel()
			f(t, newServer(t, bk.open(t), opts))
		})
	}
}

// server is the API over real HTTP (loopback), with a worker running the
// test workflows on the same backend.
type server struct {
	t     *testing.T
	ctx   context.Context
	b     backend.Backend
	c     *ow.Client
	url   string
	token string
	calls *calls
	// dag runs the DAG workflows of dag_test.go (their interpreters are
	// registered on the worker).
	dag *dag.Engine
	// flows runs OpenFlow flows (flow_test.go).
	flows *openflow.Engine
}

// calls counts the executions of the test workflows' step functions.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) add(key string) {
	c.mu.Lock()
	c.n[key]++
	c.mu.Unlock()
}

func (c *calls) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

func newServer(t *testing.T, b backend.Backend, opts api.Options) *server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	s := &server{t: t, ctx: ctx, b: b, c: ow.NewClient(b), token: opts.Token, calls: &calls{n: map[string]int{}}}
	s.dag = dag.New(s.c, dag.Options{Handlers: dagHandlers(s.calls)})
	w := ow.NewWorker(b, ow.WorkerOptions{})
	if err := w.Register(append(testWorkflows(s.calls), s.dag.Workflow(orderWorkflow))...); err != nil {
		t.Fatal(err)
	}
	s.flows = openflow.New(openflow.Options{WorkDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err := s.flows.Register(w, false); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Errorf("stop worker: %v", err)
		}
	})
	done := make(chan struct{})
	opts.Done = done
	h := api.New(s.c, opts)
	hs := httptest.NewServer(statuses.record(h))
	t.Cleanup(func() { close(done); hs.Close() })
	s.url = hs.URL
	return s
}

// failing holds the keys for which flaky's second step fails; a test
// removes its key to let a retry succeed.
var failing sync.Map

func testWorkflows(c *calls) []ow.Definition {
	add := ow.Define(ow.Spec{Name: "add", InputExample: `{"A": 2, "B": 3}`}, func(ctx ow.Context, in struct{ A, B int }) (int, error) {
		return ow.Run(ctx, "sum", func(context.Context) (int, error) { c.add("add/sum"); return in.A + in.B, nil })
	})
	echo := ow.Define(ow.Spec{Name: "echo"}, func(ctx ow.Context, in json.RawMessage) (json.RawMessage, error) {
		return in, nil
	})
	// flaky runs two steps; the second fails without retry while its input
	// says so and the run's "fail" switch is on.
	flaky := ow.Define(ow.Spec{Name: "flaky"}, func(ctx ow.Context, key string) (string, error) {
		a, err := ow.Run(ctx, "first", func(context.Context) (string, error) { c.add(key + "/first"); return "one", nil })
		if err != nil {
			return "", err
		}
		b, err := ow.Run(ctx, "second", func(context.Context) (string, error) {
			c.add(key + "/second")
			if _, fail := failing.Load(key); fail {
				return "", ow.NonRetryable(errors.New("second step refused"))
			}
			return "two", nil
		})
		if err != nil {
			return "", err
		}
		return a + "+" + b, nil
	})
	// approval creates a hook with the token it is given and returns the n
	// payloads it receives.
	// With Schema, its metadata names it as the hook's payload schema.
	type approvalIn struct {
		Token  string
		N      int
		Schema json.RawMessage
	}
	approval := ow.Define(ow.Spec{Name: "approval"}, func(ctx ow.Context, in approvalIn) ([]json.RawMessage, error) {
		meta := map[string]any{"for": "test"}
		if in.Schema != nil {
			meta["payloadSchema"] = in.Schema
		}
		h, err := ow.CreateHook[json.RawMessage](ctx, "approve", ow.WithToken(in.Token), ow.WithMetadata(meta))
		if err != nil {
			return nil, err
		}
		var got []json.RawMessage
		for range in.N {
			v, ok, err := h.Receive(ow.WithTimeout(time.Minute))
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, errors.New("timed out")
			}
			got = append(got, v)
		}
		return got, nil
	})
	// streamer writes each of its chunks (base64 in the input) to stream
	// "out", waiting for signal "more-<key>" before the second half, and
	// closes the stream.
	type streamIn struct {
		Key    string
		Chunks [][]byte
	}
	streamer := ow.Define(ow.Spec{Name: "streamer"}, func(ctx ow.Context, in streamIn) (int, error) {
		half := len(in.Chunks) / 2
		write := func(name string, chunks [][]byte, closing bool) error {
			_, err := ow.Run(ctx, name, func(sctx context.Context) (int, error) {
				w, err := ow.OpenStream(sctx, "out")
				if err != nil {
					return 0, err
				}
				for _, ch := range chunks {
					if _, err := w.Write(ch); err != nil {
						return 0, err
					}
				}
				if closing {
					return 0, w.Close()
				}
				return 0, nil
			})
			return err
		}
		if err := write("first-half", in.Chunks[:half], false); err != nil {
			return 0, err
		}
		if _, _, err := ow.WaitForSignal[string](ctx, "more-"+in.Key, ow.WithTimeout(time.Minute)); err != nil {
			return 0, err
		}
		if err := write("second-half", in.Chunks[half:], true); err != nil {
			return 0, err
		}
		return len(in.Chunks), nil
	})
	// countdown continues as new with n-1 until n is 0 (continue-as-new).
	countdown := ow.Define(ow.Spec{Name: "countdown"}, func(ctx ow.Context, n int) (string, error) {
		if n > 0 {
			return "", ow.ContinueAsNew(n - 1)
		}
		return "liftoff", nil
	})
	// counter handles updates "add" (a positive number; the handler's
	// runs are counted per key) until signal "stop" ends it.
	counter := ow.Define(ow.Spec{Name: "counter"}, func(ctx ow.Context, key string) (string, error) {
		err := ow.HandleUpdate(ctx, "add", func(ctx context.Context, n int) (string, error) {
			c.add(key + "/add")
			return fmt.Sprintf("added %d", n), nil
		}, func(n int) error {
			if n <= 0 {
				return fmt.Errorf("%d is not positive", n)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		if _, _, err := ow.WaitForSignal[string](ctx, "stop", ow.WithTimeout(time.Minute)); err != nil {
			return "", err
		}
		return "stopped", nil
	})
	return []ow.Definition{add, echo, flaky, approval, streamer, countdown, counter, eventWaiter}
}

// response is an answer of the server.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// apiError decodes an error answer and checks its shape.
func (r response) apiError(t testing.TB) api.Error {
	t.Helper()
	var e api.Error
	r.decode(t, &e)
	if e.Code == "" || e.Message == "" {
		t.Fatalf("error answer without code or message: %s", r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error answer of type %q", ct)
	}
	return e
}

// do sends a request with the server's token (if any) and reads the
// whole answer.
func (s *server) do(method, path string, body any, header ...string) response {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(s.ctx, method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: raw}
}

// must sends a request and fails the test unless it answers want.
func (s *server) must(want int, method, path string, body any, header ...string) response {
	s.t.Helper()
	r := s.do(method, path, body, header...)
	if r.status != want {
		s.t.Fatalf("%s %s answered %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// start starts a run through the API.
func (s *server) start(workflow string, input any, extra ...any) api.Run {
	s.t.Helper()
	body := map[string]any{"workflowName": workflow, "input": input}
	for i := 0; i+1 < len(extra); i += 2 {
		body[extra[i].(string)] = extra[i+1]
	}
	var run api.Run
	s.must(http.StatusCreated, "POST", "/v1/runs", body).decode(s.t, &run)
	return run
}

// until polls cond every 5 ms until it holds, failing the test after
// 30 s with what it waited for.
func (s *server) until(what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hookExists reports whether a live hook holds tok, failing the test on
// an answer other than 200 or 404.
func (s *server) hookExists(tok string) bool {
	s.t.Helper()
	r := s.do("GET", "/v1/hooks/"+tok, nil)
	if r.status != http.StatusOK && r.status != http.StatusNotFound {
		s.t.Fatalf("GET /v1/hooks/%s answered %d: %s", tok, r.status, r.body)
	}
	return r.status == http.StatusOK
}

// waitStatus polls the run through the API until it has status.
func (s *server) waitStatus(id, status string) api.Run {
	s.t.Helper()
	for {
		var run api.Run
		s.must(http.StatusOK, "GET", "/v1/runs/"+id, nil).decode(s.t, &run)
		if run.Status == status {
			return run
		}
		if run.Status != "pending" && run.Status != "running" {
			s.t.Fatalf("run %s is %s (error %s), want %s", id, run.Status, run.Error, status)
		}
		select {
		case <-s.ctx.Done():
			s.t.Fatalf("run %s still %s, want %s", id, run.Status, status)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// statuses records, across the package's tests, which statuses each
// route answered, so that TestMain can hold them against the OpenAPI
// document.
var statuses = &statusRecorder{seen: map[string]map[int]bool{}}

type statusRecorder struct {
	mu      sync.Mutex
	seen    map[string]map[int]bool // "METHOD pattern" -> statuses
	samples []sample                // JSON answers, to validate against the document's schemas
}

// sample is one JSON answer of a route.
type sample struct {
	method, pattern string
	status          int
	body            []byte
}

func (sr *statusRecorder) record(h *api.Handler) http.Handler {
	mux := http.NewServeMux()
	registered := map[string]bool{}
	for _, rt := range h.Routes() {
		if !registered[rt.Pattern] {
			mux.Handle(rt.Pattern, http.NotFoundHandler())
			registered[rt.Pattern] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusWriter{ResponseWriter: w, keep: strings.HasPrefix(r.URL.Path, "/v1/") && r.URL.Path != "/v1/openapi.json"}
		h.ServeHTTP(rec, r)
		_, pattern := mux.Handler(r)
		if pattern == "" {
			return
		}
		method := r.Method
		sr.mu.Lock()
		key := method + " " + pattern
		if sr.seen[key] == nil {
			sr.seen[key] = map[int]bool{}
		}
		sr.seen[key][rec.status()] = true
		if rec.keep && strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") && len(sr.samples) < 5000 {
			sr.samples = append(sr.samples, sample{method, pattern, rec.status(), rec.body.Bytes()})
		}
		sr.mu.Unlock()
	})
}

type statusWriter struct {
	http.ResponseWriter
	code int
	keep bool
	body bytes.Buffer
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if w.keep && w.body.Len() < 1<<20 {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
