package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// tsOptions configure one TypeScript harness process.
type tsOptions struct {
	// Schema is the PostgreSQL schema; empty means "openworkflow".
	Schema string
	// Migrate lets BackendPostgres.connect run OpenWorkflow's migrations.
	Migrate bool
	// Trace installs an API-only OpenTelemetry context manager and
	// propagator, so the TS client records trace context on runs.
	Trace bool
}

// tsProc is a running harness.mjs: a TypeScript client, backend and (on
// request) worker bound to one namespace, driven by JSON lines.
type tsProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu      sync.Mutex
	cond    *sync.Cond
	nextID  int
	replies map[int]tsReply
	events  []tsEvent
	exited  bool
	stderr  lockedBuffer
}

type tsReply struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

// tsEvent is an unsolicited line: {"event":"step","workflow","step","runId"}.
type tsEvent struct {
	Event    string `json:"event"`
	Workflow string `json:"workflow"`
	Step     string `json:"step"`
	RunID    string `json:"runId"`
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startTS starts a harness process on namespace ns; it is stopped (stdin
// closed, then killed after 5 s) when the test ends, and its stderr is
// logged if the test failed.
func startTS(t *testing.T, ns string, o tsOptions) *tsProc {
	t.Helper()
	cmd := exec.Command("node", harnessPath)
	cmd.Env = append(os.Environ(), "OW_URL="+pgURL, "OW_NAMESPACE="+ns)
	if o.Schema != "" {
		cmd.Env = append(cmd.Env, "OW_SCHEMA="+o.Schema)
	}
	if o.Migrate {
		cmd.Env = append(cmd.Env, "OW_MIGRATE=1")
	}
	if o.Trace {
		cmd.Env = append(cmd.Env, "OW_TRACE=1")
	}
	p := &tsProc{t: t, cmd: cmd, replies: map[int]tsReply{}}
	p.cond = sync.NewCond(&p.mu)
	cmd.Stderr = &p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node harness: %v", err)
	}
	readerDone := make(chan struct{})
	go p.read(stdout, readerDone)
	t.Cleanup(func() {
		_ = p.stdin.Close()
		waited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
		}
		<-readerDone
		if t.Failed() {
			t.Logf("TypeScript harness (namespace %s) stderr:\n%s", ns, tail(p.stderr.String(), 4000))
		}
	})
	p.waitEvent(30*time.Second, "harness ready", func(e tsEvent) bool { return e.Event == "ready" })
	return p
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func (p *tsProc) read(r io.Reader, done chan struct{}) {
	defer close(done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var head struct {
			ID    *int   `json:"id"`
			Event string `json:"event"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			fmt.Fprintf(&p.stderr, "harness stdout (not JSON): %s\n", line)
			continue
		}
		p.mu.Lock()
		if head.ID != nil {
			var r tsReply
			_ = json.Unmarshal(line, &r)
			p.replies[*head.ID] = r
		} else {
			var e tsEvent
			_ = json.Unmarshal(line, &e)
			p.events = append(p.events, e)
		}
		p.cond.Broadcast()
		p.mu.Unlock()
	}
	p.mu.Lock()
	p.exited = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// callErr sends op with args and decodes the result into out (if not nil);
// it returns the harness's error, or a timeout after 60 s.
func (p *tsProc) callErr(op string, args any, out any) error {
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	p.mu.Unlock()
	req, err := json.Marshal(map[string]any{"id": id, "op": op, "args": args})
	if err != nil {
		return err
	}
	if _, err := p.stdin.Write(append(req, '\n')); err != nil {
		return fmt.Errorf("write to harness: %w", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	timer := time.AfterFunc(time.Until(deadline), func() { p.mu.Lock(); p.cond.Broadcast(); p.mu.Unlock() })
	defer timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if r, ok := p.replies[id]; ok {
			delete(p.replies, id)
			if !r.OK {
				return fmt.Errorf("TypeScript %s: %s", op, r.Error)
			}
			if out != nil {
				if err := json.Unmarshal(r.Result, out); err != nil {
					return fmt.Errorf("decode TypeScript %s result %s: %w", op, r.Result, err)
				}
			}
			return nil
		}
		if p.exited {
			return fmt.Errorf("TypeScript %s: harness exited", op)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("TypeScript %s: no answer within 60 s", op)
		}
		p.cond.Wait()
	}
}

// call is callErr that fails the test on error.
func (p *tsProc) call(op string, args any, out any) {
	p.t.Helper()
	if err := p.callErr(op, args, out); err != nil {
		p.t.Fatal(err)
	}
}

// waitEvent waits for an event matching pred (including past ones).
func (p *tsProc) waitEvent(timeout time.Duration, what string, pred func(tsEvent) bool) tsEvent {
	p.t.Helper()
	timer := time.AfterFunc(timeout, func() { p.mu.Lock(); p.cond.Broadcast(); p.mu.Unlock() })
	defer timer.Stop()
	deadline := time.Now().Add(timeout)
	e, ok, exited := func() (tsEvent, bool, bool) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for {
			for _, e := range p.events {
				if pred(e) {
					return e, true, false
				}
			}
			if p.exited || time.Now().After(deadline) {
				return tsEvent{}, false, p.exited
			}
			p.cond.Wait()
		}
	}()
	if !ok {
		p.t.Fatalf("TypeScript harness: no %s event within %v (exited=%v); stderr:\n%s", what, timeout, exited, tail(p.stderr.String(), 3000))
	}
	return e
}

// stepEvents returns the steps TypeScript really executed for run id.
func (p *tsProc) stepEvents(runID string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, e := range p.events {
		if e.Event == "step" && e.RunID == runID {
			out = append(out, e.Step)
		}
	}
	return out
}

// tsWorkflow names a TypeScript workflow implementation (a kind of
// harness.mjs) registered under name and version.
type tsWorkflow struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Kind    string `json:"kind"`
}

// startWorker starts a TypeScript worker with the workflows; it is stopped
// with the process.
func (p *tsProc) startWorker(concurrency int, wfs ...tsWorkflow) {
	p.t.Helper()
	p.call("startWorker", map[string]any{"workflows": wfs, "concurrency": concurrency}, nil)
}

// stopWorker stops the TypeScript worker gracefully (it waits for the
// passes in flight, as Worker.stop does).
func (p *tsProc) stopWorker() {
	p.t.Helper()
	p.call("stopWorker", nil, nil)
}

// tsRun is the part of a TypeScript WorkflowRun the tests read.
type tsRun struct {
	NamespaceID  string          `json:"namespaceId"`
	ID           string          `json:"id"`
	WorkflowName string          `json:"workflowName"`
	Version      *string         `json:"version"`
	Status       string          `json:"status"`
	Input        json.RawMessage `json:"input"`
	Output       json.RawMessage `json:"output"`
	Error        json.RawMessage `json:"error"`
	Context      json.RawMessage `json:"context"`
	WorkerID     *string         `json:"workerId"`
	Attempts     int             `json:"attempts"`
	CreatedAt    string          `json:"createdAt"`
}

// tsResult is the outcome of the TS handle's result().
type tsResult struct {
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error"`
}

// resultOf waits (TS client handle, 1 s polls) for a run this process
// started and fails the test if it did not complete.
func (p *tsProc) resultOf(runID string, timeout time.Duration) json.RawMessage {
	p.t.Helper()
	var r tsResult
	p.call("result", map[string]any{"id": runID, "timeoutMs": timeout.Milliseconds()}, &r)
	if r.Error != "" {
		p.t.Fatalf("TypeScript handle.result() of run %s: %s", runID, r.Error)
	}
	return r.Output
}

// contextWithTimeout is context.WithTimeout on Background, canceled at
// cleanup.
func contextWithTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// jsonEq reports whether two JSON texts hold the same value.
func jsonEq(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
