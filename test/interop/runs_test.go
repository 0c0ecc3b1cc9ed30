package interop

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

var (
	uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	ulidPattern = func(prefix string) *regexp.Regexp {
		return regexp.MustCompile(`^` + prefix + `_[0-9A-HJKMNP-TV-Z]{26}$`)
	}
)

func TestRunStartedByTSClientIsExecutedByGoWorker(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	e.goWorker(goEcho(ow.Spec{Name: "interop-echo", Version: "v1"}))

	var run tsRun
	ts.call("start", map[string]any{"name": "interop-echo", "version": "v1", "input": map[string]any{"msg": "hi", "n": 41}}, &run)
	if !uuidPattern.MatchString(run.ID) {
		t.Errorf("TS run id %q is not a UUID", run.ID)
	}
	raw := ts.resultOf(run.ID, 30*time.Second)
	var out echoOut
	must(t, json.Unmarshal(raw, &out))
	if out.By != "go" || out.Echo != (echoIn{Msg: "hi", N: 41}) || out.RunID != run.ID || out.Version == nil || *out.Version != "v1" {
		t.Errorf("TS handle read %s; want the Go worker's echo of {msg:hi,n:41} for run %s version v1", raw, run.ID)
	}

	// The Go side reads the TS-created (UUID) run and its history.
	r := e.run(run.ID)
	if r.Status != backend.RunCompleted || r.Attempts != 1 || r.WorkerID == nil || !strings.HasPrefix(*r.WorkerID, "go-") {
		t.Errorf("Go read run %+v; want completed after 1 claim by the Go worker", r)
	}
}

func TestRunStartedByGoClientIsExecutedByTSWorker(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	ts.startWorker(2, tsWorkflow{Name: "interop-echo-ts", Version: "2", Kind: "echo"})

	wf := ow.Declare[echoIn, echoOut](ow.Spec{Name: "interop-echo-ts", Version: "2"})
	ctx := contextWithTimeout(t, 30*time.Second)
	h, err := wf.Start(ctx, e.client, echoIn{Msg: "from go", N: 7})
	must(t, err)
	if !ulidPattern("wrun").MatchString(h.ID) {
		t.Errorf("Go run id %q is not wrun_<ULID>", h.ID)
	}
	out := result(t, h, 30*time.Second)
	if out.By != "ts" || out.Echo != (echoIn{Msg: "from go", N: 7}) || out.RunID != h.ID || out.Version == nil || *out.Version != "2" {
		t.Errorf("Go handle read %+v; want the TS worker's echo for run %s version 2", out, h.ID)
	}

	// What TypeScript sees of the Go run: the ULID id as an opaque string,
	// in getWorkflowRun as in its run metadata.
	var seen tsRun
	ts.call("get", map[string]any{"id": h.ID}, &seen)
	if seen.ID != h.ID || seen.Status != "completed" || seen.WorkflowName != "interop-echo-ts" {
		t.Errorf("TS getWorkflowRun(%s) = %+v", h.ID, seen)
	}
}

// A run whose version the Go worker did not register is either left alone
// (a worker that claims only registered workflows, see
// TestGoWorkerLeavesRunsOfUnregisteredWorkflowsAlone) or handed back with
// OpenWorkflow's "not registered" error, byte for byte the TypeScript one,
// and its 5 s backoff.
func TestUnregisteredVersionIsLeftOrRescheduledWithTheTSMessage(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	e.goWorker(goEcho(ow.Spec{Name: "interop-echo", Version: "v1"}))

	for _, c := range []struct{ version, want string }{
		{"", `{"message":"Workflow \"interop-echo\" is not registered"}`},
		{"v2", `{"message":"Workflow \"interop-echo\" (version: v2) is not registered"}`},
	} {
		var run tsRun
		ts.call("start", map[string]any{"name": "interop-echo", "version": c.version, "input": map[string]any{}}, &run)
		var r *backend.WorkflowRun
		deadline := time.Now().Add(2 * time.Second)
		for {
			r = e.run(run.ID)
			if r.Attempts > 0 && r.Status == backend.RunPending || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if r.Attempts == 0 {
			if r.Status != backend.RunPending || r.Error != nil {
				t.Errorf("version %q: unclaimed run is %s with error %s", c.version, r.Status, r.Error)
			}
			continue // left for a worker that has it
		}
		if r.Status != backend.RunPending || !jsonEq(r.Error, []byte(c.want)) {
			t.Errorf("version %q: %s with error %s, want pending with %s", c.version, r.Status, r.Error, c.want)
		}
		if r.AvailableAt == nil || r.AvailableAt.Sub(r.UpdatedAt) < 4*time.Second {
			t.Errorf("version %q: rescheduled for %v (updated %v), want about 5 s later", c.version, r.AvailableAt, r.UpdatedAt)
		}
	}
}

// The Go handle's Result on a run the TypeScript worker failed: the stored
// error is {name, message, stack} and reads as an *ow.Error.
func TestTSFailureIsReadByGoHandle(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	ts.startWorker(1, tsWorkflow{Name: "ts-fail", Kind: "fail"})

	h, err := ow.Declare[struct{}, struct{}](ow.Spec{Name: "ts-fail"}).Start(context.Background(), e.client, struct{}{})
	must(t, err)
	ctx := contextWithTimeout(t, 30*time.Second)
	_, err = h.Result(ctx)
	var rf *ow.RunFailedError
	if !errors.As(err, &rf) {
		t.Fatalf("Result = %v; want *ow.RunFailedError", err)
	}
	if rf.Err.Name != "InteropError" || rf.Err.Message != "boom from ts" || !strings.HasPrefix(rf.Err.Stack, "InteropError: boom from ts\n") {
		t.Errorf("stored TS error read as %+v", rf.Err)
	}
	assertErrorShape(t, e.run(h.ID).Error, true)
}

// The TypeScript client's result() on a run the Go worker failed.
func TestGoFailureIsReadByTSHandle(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	e.goWorker(ow.Define(ow.Spec{Name: "go-fail"}, func(ctx ow.Context, _ struct{}) (struct{}, error) {
		return struct{}{}, ow.NonRetryable(&interopError{msg: "boom from go"})
	}))

	var run tsRun
	ts.call("start", map[string]any{"name": "go-fail", "input": map[string]any{}}, &run)
	var r tsResult
	ts.call("result", map[string]any{"id": run.ID, "timeoutMs": 30000}, &r)
	want := `Workflow go-fail failed: {"name":"interopError","message":"boom from go"}`
	if r.Error != want {
		t.Errorf("TS result() error %q, want %q", r.Error, want)
	}
	assertErrorShape(t, e.run(run.ID).Error, false)
}

type interopError struct{ msg string }

func (e *interopError) Error() string { return e.msg }

// assertErrorShape checks stored error JSON is {name, message, stack?}
// with string values.
func assertErrorShape(t *testing.T, raw json.RawMessage, wantStack bool) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("stored error %s: %v", raw, err)
	}
	for _, k := range []string{"name", "message"} {
		if _, ok := m[k].(string); !ok {
			t.Errorf("stored error %s: %q is not a string", raw, k)
		}
	}
	if _, ok := m["stack"].(string); ok != wantStack {
		t.Errorf("stored error %s: has stack = %v, want %v", raw, ok, wantStack)
	}
	for k := range m {
		if k != "name" && k != "message" && k != "stack" {
			t.Errorf("stored error %s: unexpected key %q", raw, k)
		}
	}
}
