package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/openflow"
)

// writeFlow writes a flow file into the env's directory.
func (e *env) writeFlow(name, doc string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

const addFlow = `summary: add two numbers
value:
  modules:
    - id: add
      value:
        type: rawscript
        language: python3
        content: |
          def main(a, b):
              return a + b
        input_transforms:
          a: {type: javascript, expr: flow_input.a}
          b: {type: javascript, expr: flow_input.b}
schema:
  type: object
  properties:
    a: {type: number}
    b: {type: number}
  required: [a, b]
`

const failFlow = `{"summary": "fails", "value": {"modules": [
  {"id": "boom", "value": {"type": "rawscript", "language": "bash", "content": "echo about to fail\nexit 2"}}]}}`

func TestFlowRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	add := e.writeFlow("add.flow.yaml", addFlow)

	t.Run("a successful flow prints its result and exits 0", func(t *testing.T) {
		r := e.ok("flow", "run", add, "--args", `{"a": 2, "b": 3}`)
		if strings.TrimSpace(r.stdout) != "5" {
			t.Errorf("stdout %q, want 5", r.stdout)
		}
		mustContain(t, "stderr", r.stderr, "run wrun_", "✓ add (python3)")
	})

	t.Run("--json prints exactly one object {success, result}", func(t *testing.T) {
		got := decode[map[string]json.RawMessage](t, e.ok("flow", "run", add, "--args", `{"a": 1, "b": 1}`, "--json"))
		if len(got) != 2 || string(got["success"]) != "true" || string(got["result"]) != "2" {
			t.Errorf("--json = %v", got)
		}
	})

	t.Run("a failed flow exits 1 and its result is still printed", func(t *testing.T) {
		fail := e.writeFlow("fail.json", failFlow)
		r := e.run("flow", "run", fail, "--json")
		if r.code != 1 {
			t.Fatalf("exit %d, want 1", r.code)
		}
		got := decode[openflow.Result](t, r)
		want := `{"error":{"name":"ExecutionErr","message":"exit code for \"bash\": 2, last log lines:\nabout to fail","step_id":"boom"}}`
		var compact bytes.Buffer
		_ = json.Compact(&compact, got.Result)
		if got.Success || compact.String() != want {
			t.Errorf("got %+v, want failure with %s", got, want)
		}
		mustContain(t, "stderr", r.stderr, "✗ boom (bash)", "ow: flow failed (run wrun_")
	})

	t.Run("a loop longer than a run's 1,000 steps completes", func(t *testing.T) {
		long := e.writeFlow("long.json", `{"summary": "long loop", "value": {"modules": [{"id": "l", "value": {"type": "forloopflow",
  "iterator": {"type": "javascript", "expr": "Array.from({length: 1200}, (_, i) => i)"},
  "modules": [{"id": "a", "value": {"type": "identity"}}]}}]}}`)
		got := decode[openflow.Result](t, e.ok("flow", "run", long, "--json"))
		var items []struct {
			Iter struct {
				Index int `json:"index"`
			} `json:"iter"`
		}
		if err := json.Unmarshal(got.Result, &items); err != nil || !got.Success || len(items) != 1200 || items[1199].Iter.Index != 1199 {
			t.Errorf("success %v, %d results (%v), want 1200", got.Success, len(items), err)
		}
	})

	t.Run("bad args and bad flows start no run", func(t *testing.T) {
		before := e.ok("runs", "list", "--json").stdout
		r := e.run("flow", "run", add, "--args", `{"a": "x"}`)
		if r.code != 1 {
			t.Fatalf("exit %d", r.code)
		}
		mustContain(t, "stderr", r.stderr, "invalid flow input", "a: got string, want number", "missing property 'b'")
		r = e.run("flow", "run", add, "--args", `not json`)
		mustContain(t, "stderr", r.stderr, "invalid --args")
		bad := e.writeFlow("bad.json", `{"value":{"modules":[{"id":"l","value":{"type":"forloopflow","modules":[]}}]}}`)
		r = e.run("flow", "run", bad)
		mustContain(t, "stderr", r.stderr, "value.modules[0].value.iterator: missing; expected an input transform")
		r = e.run("flow", "run", bad, "--json")
		var refused struct {
			Success bool `json:"success"`
			Result  struct {
				Error struct {
					Name     string             `json:"name"`
					Problems []openflow.Problem `json:"problems"`
				} `json:"error"`
			} `json:"result"`
		}
		if r.code != 1 || json.Unmarshal([]byte(r.stdout), &refused) != nil || refused.Success ||
			refused.Result.Error.Name != "ValidationError" || len(refused.Result.Error.Problems) != 1 ||
			refused.Result.Error.Problems[0].Path != "value.modules[0].value.iterator" {
			t.Errorf("--json of a refused flow: exit %d, %s", r.code, r.stdout)
		}
		if after := e.ok("runs", "list", "--json").stdout; after != before {
			t.Errorf("runs changed:\n%s\n→\n%s", before, after)
		}
	})
}

func TestFlowValidate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	add := e.writeFlow("add.flow.yaml", addFlow)
	r := e.ok("flow", "validate", add)
	mustContain(t, "stdout", r.stdout, "valid flow, 1 top-level modules, languages: python3")

	bad := e.writeFlow("bad.json", `{"value":{"modules":[{"id":"a","value":{"type":"identity"}},{"id":"a","value":{"type":"rawscript","language":"rust","content":""}}]}}`)
	r = e.run("flow", "validate", bad, "--json")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1", r.code)
	}
	v := decode[flowValidation](t, r)
	if v.Valid || len(v.Problems) != 2 || v.Problems[0].Path != "value.modules[1].id" || v.Problems[1].Path != "value.modules[1].value.language" {
		t.Errorf("validation = %+v", v)
	}
}

func TestFlowResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	flow := e.writeFlow("approve.json", `{"value":{"modules":[
		{"id":"ask","value":{"type":"identity"},"suspend":{"required_events":1}},
		{"id":"done","value":{"type":"rawscript","language":"python3","content":"def main(r, who):\n    return [r, who]",
		 "input_transforms":{"r":{"type":"javascript","expr":"resume"},"who":{"type":"javascript","expr":"approvers"}}}}]}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type out struct {
		code           int
		stdout, stderr string
	}
	done := make(chan out, 1)
	var se lockedBuffer
	go func() {
		var so bytes.Buffer
		code := execute(ctx, []string{"--postgres-url=", "--sqlite-path", e.db, "flow", "run", flow, "--json"}, &so, &se, e.dir)
		done <- out{code, so.String(), se.String()}
	}()
	c := e.client()
	var runID string
	for runID == "" { // the user sees the suspension, then resumes
		select {
		case <-ctx.Done():
			t.Fatalf("the run never showed its suspension:\n%s", se.String())
		case <-time.After(50 * time.Millisecond):
		}
		runs, err := c.ListRuns(ctx, backend.ListWorkflowRunsParams{Limit: 1})
		if err != nil || len(runs.Data) == 0 || !strings.Contains(se.String(), "⏸ ask") {
			continue
		}
		if mods, err := openflow.Suspended(ctx, c, runs.Data[0].ID); err == nil && len(mods) == 1 {
			runID = runs.Data[0].ID
		}
	}
	r := e.ok("flow", "resume", runID, "--payload", `{"ok": true}`, "--approver", "ada")
	mustContain(t, "resume", r.stdout, "resumed module ask of run "+runID)
	res := <-done
	if res.code != 0 {
		t.Fatalf("flow run exit %d:\n%s", res.code, res.stderr)
	}
	if !strings.Contains(res.stdout, `"result": [`) || !strings.Contains(res.stdout, `"ok": true`) || !strings.Contains(res.stdout, `"ada"`) {
		t.Errorf("flow run stdout:\n%s", res.stdout)
	}
	mustContain(t, "flow run stderr", res.stderr, "⏸ ask: waiting for a resume event; approve with: ow flow resume "+runID)
	r = e.run("flow", "resume", runID)
	if r.code != 1 || !strings.Contains(r.stderr, "not waiting for a resume event") {
		t.Errorf("resuming a finished run: exit %d, %s", r.code, r.stderr)
	}
}

// lockedBuffer is a bytes.Buffer written by a command and read by the
// test at the same time.
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

func TestWorkerRunsTheFlowsOfConfiguredDirs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.writeFlow("flows/f/math/add.flow.yaml", addFlow)
	e.writeFlow("openworkflow.yaml", "openflow:\n  dirs: [flows]\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wctx, stop := context.WithCancel(ctx)
	var so, se lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- execute(wctx, []string{"--postgres-url=", "--sqlite-path", e.db, "worker"}, &so, &se, e.dir)
	}()
	c := e.client()
	h, err := c.StartByName(ctx, "f/math/add", "", map[string]int{"a": 40, "b": 2})
	if err != nil {
		t.Fatal(err)
	}
	res, err := openflow.Wait(ctx, c, h.ID)
	stop()
	if code := <-done; code != 0 {
		t.Errorf("ow worker exit %d:\n%s", code, se.String())
	}
	if err != nil || !res.Success || string(res.Result) != "42" {
		t.Fatalf("run of f/math/add: %+v, %v\n%s", res, err, se.String())
	}
	mustContain(t, "worker stderr", se.String(), "1 flow(s) from "+filepath.Join(e.dir, "flows"), "f/math/add")
}

// TestResumeRefusesAnEventTheFlowCannotRead: `ow hooks resume` with a
// payload that is not a resume event, and `ow flow resume` with an
// approval the resume form refuses, fail (exit 1) naming what is wrong;
// nothing is delivered, and the flow, still waiting, completes with the
// approval that follows.
func TestResumeRefusesAnEventTheFlowCannotRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	flow := e.writeFlow("approve.json", `{"value":{"modules":[
		{"id":"ask","value":{"type":"identity"},"suspend":{"required_events":1,
		 "resume_form":{"schema":{"type":"object","properties":{"comment":{"type":"string"}},"required":["comment"]}}}},
		{"id":"done","value":{"type":"identity"}}]}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan int, 1)
	var so, se lockedBuffer
	go func() {
		done <- execute(ctx, []string{"--postgres-url=", "--sqlite-path", e.db, "flow", "run", flow, "--json"}, &so, &se, e.dir)
	}()
	c := e.client()
	var waiting []openflow.SuspendedModule
	for len(waiting) == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the run never suspended:\n%s", se.String())
		case <-time.After(50 * time.Millisecond):
		}
		runs, err := c.ListRuns(ctx, backend.ListWorkflowRunsParams{Limit: 1})
		if err != nil || len(runs.Data) == 0 {
			continue
		}
		if mods, err := openflow.Suspended(ctx, c, runs.Data[0].ID); err == nil && len(mods) == 1 {
			waiting = mods
		}
	}
	runs, err := c.ListRuns(ctx, backend.ListWorkflowRunsParams{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	runID := runs.Data[0].ID

	r := e.run("hooks", "resume", waiting[0].Token, "--payload", `"x"`)
	t.Logf("ow hooks resume with \"x\": %s", r.stderr)
	if r.code != 1 || !strings.Contains(r.stderr, "got string, want object") || !strings.Contains(r.stderr, "nothing was delivered") {
		t.Errorf("ow hooks resume with \"x\": exit %d, stderr %s; want exit 1 naming the problem", r.code, r.stderr)
	}
	r = e.run("flow", "resume", runID, "--payload", `{}`)
	t.Logf("ow flow resume with {}: %s", r.stderr)
	if r.code != 1 || !strings.Contains(r.stderr, "comment") {
		t.Errorf("ow flow resume without the form's field: exit %d, stderr %s; want exit 1 naming comment", r.code, r.stderr)
	}
	if mods, err := openflow.Suspended(ctx, c, runID); err != nil || len(mods) != 1 || mods[0].Events != 0 {
		t.Fatalf("after refused events: %+v, %v; want module ask waiting with 0 events", mods, err)
	}
	e.ok("flow", "resume", runID, "--payload", `{"comment": "ship it"}`)
	if code := <-done; code != 0 {
		t.Fatalf("flow run exit %d:\n%s", code, se.String())
	}
	if !strings.Contains(so.String(), `"success": true`) {
		t.Errorf("flow run stdout:\n%s", so.String())
	}
	if hooks, err := c.ListHooks(ctx, runID); err != nil || len(hooks) != 1 || hooks[0].Payloads != 1 {
		t.Errorf("the run's hooks: %+v, %v; want one with the approval alone", hooks, err)
	}
}
