package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

type parentOut struct {
	Parent      string   `json:"parent"`
	ChildOutput childOut `json:"childOutput"`
}

// A Go parent starts a child implemented in TypeScript (declared in Go with
// ow.Declare) and waits for it; the TypeScript side completes the child and
// wakes the parked Go parent with its own wake-up query.
//
// The workers take turns (the Go one driven by Tick) so that neither claims
// the other's run: see TestGoWorkerLeavesRunsOfUnregisteredWorkflowsAlone
// for what happens when both poll one namespace.
func TestGoParentRunsTSChild(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	child := ow.Declare[childIn, childOut](ow.Spec{Name: "ts-child-double"})
	parent := ow.Define(ow.Spec{Name: "go-parent"}, func(ctx ow.Context, n int) (parentOut, error) {
		out, err := ow.RunWorkflow(ctx, child, childIn{N: n})
		return parentOut{Parent: "go", ChildOutput: out}, err
	})
	w := e.goManualWorker(parent)

	h, err := parent.Start(context.Background(), e.client, 21)
	must(t, err)
	e.tickUntil(w, 10*time.Second, "the Go parent to park on its child", func() (bool, string) {
		r := e.run(h.ID)
		return r.Status == backend.RunRunning && r.WorkerID == nil, string(r.Status)
	})
	steps := e.steps(h.ID)
	if len(steps) != 1 || steps[0].Kind != backend.StepWorkflow || steps[0].ChildWorkflowRunID == nil {
		t.Fatalf("parent history %+v; want one linked workflow step", steps)
	}
	wf := steps[0]
	childID := *wf.ChildWorkflowRunID
	assertWaitContext(t, wf.Context, "workflow", false)

	// The child row as the Go parent created it, read by TypeScript.
	var seen tsRun
	ts.call("get", map[string]any{"id": childID}, &seen)
	if seen.WorkflowName != "ts-child-double" || seen.Status != "pending" || !jsonEq(seen.Input, []byte(`{"n":21}`)) {
		t.Errorf("TS reads the child as %+v", seen)
	}
	c := e.run(childID)
	wantKey := fmt.Sprintf("__workflow:%s:%s", e.ns, wf.ID)
	if c.IdempotencyKey == nil || *c.IdempotencyKey != wantKey || c.ParentStepAttemptID == nil || *c.ParentStepAttemptID != wf.ID ||
		c.ParentStepAttemptNamespaceID == nil || *c.ParentStepAttemptNamespaceID != e.ns {
		t.Errorf("child %s: idempotency key %v, parent step %v/%v; want %s and %s/%s",
			childID, c.IdempotencyKey, c.ParentStepAttemptNamespaceID, c.ParentStepAttemptID, wantKey, e.ns, wf.ID)
	}

	// TypeScript runs the child; stop its worker as soon as the child's
	// step ran, so it finishes that pass but claims nothing more.
	ts.startWorker(1, tsWorkflow{Name: "ts-child-double", Kind: "child-double"})
	ts.waitEvent(20*time.Second, "child step", func(ev tsEvent) bool { return ev.RunID == childID && ev.Step == "double" })
	ts.stopWorker()
	if c := e.run(childID); c.Status != backend.RunCompleted {
		t.Fatalf("child %s is %s after the TS worker stopped, want completed", childID, c.Status)
	}
	p := e.run(h.ID)
	if p.AvailableAt == nil || time.Since(*p.AvailableAt) < -time.Second {
		t.Errorf("the TS child's completion did not wake the parked Go parent: available_at %v", p.AvailableAt)
	}

	e.tickUntil(w, 10*time.Second, "the Go parent to complete", func() (bool, string) {
		r := e.run(h.ID)
		return r.Status == backend.RunCompleted, string(r.Status)
	})
	out := result(t, h, 5*time.Second)
	if out != (parentOut{Parent: "go", ChildOutput: childOut{Child: "ts", Doubled: 42}}) {
		t.Errorf("parent output %+v", out)
	}
}

// The reverse: a TypeScript parent (step.runWorkflow) runs a child
// implemented in Go; the Go child's completion wakes the TS parent.
func TestTSParentRunsGoChild(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	w := e.goManualWorker(goChildDouble("go-child-double"))

	ts.startWorker(1, tsWorkflow{Name: "ts-parent", Kind: "parent-of"})
	var run tsRun
	ts.call("start", map[string]any{"name": "ts-parent", "input": map[string]any{"child": "go-child-double", "childInput": childIn{N: 5}}}, &run)
	e.waitParked(run.ID, backend.StepWorkflow, 20*time.Second)
	ts.stopWorker()
	steps := e.steps(run.ID)
	if len(steps) != 1 || steps[0].ChildWorkflowRunID == nil {
		t.Fatalf("TS parent history %+v; want one linked workflow step", steps)
	}
	childID := *steps[0].ChildWorkflowRunID
	assertWaitContext(t, steps[0].Context, "workflow", true)

	// The TS worker may have claimed the child before it stopped (it polls
	// every run of the namespace) and rescheduled it 5 s later as "not
	// registered"; the deadline allows for that.
	e.tickUntil(w, 20*time.Second, "the Go child to complete", func() (bool, string) {
		r := e.run(childID)
		return r.Status == backend.RunCompleted, string(r.Status)
	})
	if p := e.run(run.ID); p.AvailableAt == nil || time.Since(*p.AvailableAt) < -time.Second {
		t.Errorf("the Go child's completion did not wake the parked TS parent: available_at %v", p.AvailableAt)
	}

	ts.startWorker(1, tsWorkflow{Name: "ts-parent", Kind: "parent-of"})
	raw := ts.resultOf(run.ID, 30*time.Second)
	var out struct {
		Parent      string   `json:"parent"`
		ChildOutput childOut `json:"childOutput"`
	}
	must(t, json.Unmarshal(raw, &out))
	if out.Parent != "ts" || out.ChildOutput != (childOut{Child: "go", Doubled: 10}) {
		t.Errorf("TS parent output %s", raw)
	}
}

// A Go child started by a TypeScript parent is claimed first, at once, by
// the TypeScript worker that runs the parent (it polls again right after
// the parent's pass and claims every run of its namespace), which hands it
// back as "not registered" 5 s later. That claim counts in the child's
// attempts, and a Go workflow's retry budget (Spec.RetryPolicy's
// MaximumAttempts) counts the run's attempts: a child allowed 2 attempts
// that fails its first Go execution is not retried. A step's retry budget
// counts the step's failed attempts only, so a step retry policy is not
// affected. docs/interop.md ("A Go child of a TypeScript parent") documents
// both (issue 20, item 11).
func TestTSClaimOfAGoChildCountsAgainstItsWorkflowRetriesNotItsSteps(t *testing.T) {
	setup(t)
	fast := ow.RetryPolicy{InitialInterval: 100 * time.Millisecond, BackoffCoefficient: 1, MaximumInterval: time.Second, MaximumAttempts: 2}
	flaky := errors.New("flaky: fails its first execution")
	for _, tc := range []struct {
		name   string
		define func(name string, calls *atomic.Int32) ow.Definition
		want   backend.RunStatus
	}{
		{"workflow retry policy of 2 attempts: not retried", func(name string, calls *atomic.Int32) ow.Definition {
			return ow.Define(ow.Spec{Name: name, RetryPolicy: &fast}, func(ctx ow.Context, in childIn) (childOut, error) {
				if calls.Add(1) == 1 {
					return childOut{}, flaky
				}
				return childOut{Child: "go", Doubled: in.N * 2}, nil
			})
		}, backend.RunFailed},
		{"step retry policy of 2 attempts: retried", func(name string, calls *atomic.Int32) ow.Definition {
			return ow.Define(ow.Spec{Name: name}, func(ctx ow.Context, in childIn) (childOut, error) {
				d, err := ow.Run(ctx, "double", func(context.Context) (int, error) {
					if calls.Add(1) == 1 {
						return 0, flaky
					}
					return in.N * 2, nil
				}, ow.WithRetryPolicy(fast))
				return childOut{Child: "go", Doubled: d}, err
			})
		}, backend.RunCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ts := e.ts()
			ts.startWorker(1, tsWorkflow{Name: "ts-parent", Kind: "parent-of"})
			var run tsRun
			ts.call("start", map[string]any{"name": "ts-parent", "input": map[string]any{"child": "go-flaky-child", "childInput": childIn{N: 5}}}, &run)
			var childID string
			eventually(t, 20*time.Second, "the TS worker to claim the Go child", func() (bool, string) {
				steps := e.steps(run.ID)
				if len(steps) == 0 || steps[0].ChildWorkflowRunID == nil {
					return false, "no child yet"
				}
				childID = *steps[0].ChildWorkflowRunID
				r := e.run(childID)
				return r.Attempts >= 1 && strings.Contains(string(r.Error), "is not registered"),
					fmt.Sprintf("child %s, %d claims, error %s", r.Status, r.Attempts, r.Error)
			})
			ts.stopWorker() // no further TS claims: the Go worker alone from here
			var calls atomic.Int32
			w := e.goManualWorker(tc.define("go-flaky-child", &calls))
			e.tickUntil(w, 30*time.Second, "the Go child to finish", func() (bool, string) {
				r := e.run(childID)
				return r.Status.Terminal(), fmt.Sprintf("%s, %d claims, error %s", r.Status, r.Attempts, r.Error)
			})
			r := e.run(childID)
			if r.Status != tc.want {
				t.Fatalf("Go child ended %s after %d claims (%d Go executions), error %s; want %s",
					r.Status, r.Attempts, calls.Load(), r.Error, tc.want)
			}
			if tc.want == backend.RunFailed && (calls.Load() != 1 || !strings.Contains(string(r.Error), "flaky")) {
				t.Errorf("the failed child ran %d times in Go with error %s; want once, failed by its own error", calls.Load(), r.Error)
			}
		})
	}
}
