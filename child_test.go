package openworkflow_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// childOf returns the single child run linked to a parent's workflow step.
func childOf(e *env, parentID string) *backend.WorkflowRun {
	e.t.Helper()
	for _, s := range e.steps(parentID) {
		if s.Kind == backend.StepWorkflow && s.ChildWorkflowRunID != nil {
			return e.run(*s.ChildWorkflowRunID)
		}
	}
	e.t.Fatalf("run %s has no linked child", parentID)
	return nil
}

func TestChildWorkflowOutputReachesTheParentWhichParkedMeanwhile(t *testing.T) {
	e := newEnv(t)
	var calls counter
	child := ow.Define(ow.Spec{Name: "child"}, func(ctx ow.Context, in int) (int, error) {
		calls.inc("child")
		return in * in, nil
	})
	parent := ow.Define(ow.Spec{Name: "parent"}, func(ctx ow.Context, in int) (int, error) {
		v, err := ow.RunWorkflow(ctx, child, in)
		if err != nil {
			return 0, err
		}
		return v + 1, nil
	})
	e.register(child, parent)
	id := start(e, parent, 7)
	e.tick() // parent creates the child and parks; the child may run in the same tick or the next
	c := childOf(e, id)
	if c.ParentStepAttemptID == nil || c.WorkflowName != "child" {
		t.Fatalf("child %+v not linked to its parent step", c)
	}
	e.drain() // the child's completion wakes the parked parent
	if got := output[int](e, id); got != 50 {
		t.Fatalf("output %d, want 50", got)
	}
	if calls.get("child") != 1 {
		t.Fatalf("child ran %d times", calls.get("child"))
	}
	runs, _ := e.client.ListRuns(e.ctx, backend.ListWorkflowRunsParams{WorkflowName: "child"})
	if len(runs.Data) != 1 {
		t.Fatalf("%d child runs, want exactly 1 across replays", len(runs.Data))
	}
}

func TestChildWorkflowFailureFailsTheParentStepWithoutRetryOrRespawn(t *testing.T) {
	e := newEnv(t)
	child := ow.Define(ow.Spec{Name: "bad-child"}, func(ctx ow.Context, _ int) (int, error) {
		return 0, errors.New("child broke")
	})
	var handled counter
	parent := ow.Define(ow.Spec{Name: "parent-of-bad"}, func(ctx ow.Context, _ int) (string, error) {
		_, err := ow.RunWorkflow(ctx, child, 0)
		var se *ow.StepError
		if errors.As(err, &se) {
			handled.inc("failure")
			return "", err
		}
		return "unexpected", err
	})
	e.register(child, parent)
	id := start(e, parent, 0)
	for range 5 {
		e.drain()
		e.clock.Advance(time.Minute)
	}
	r := e.requireStatus(id, backend.RunFailed)
	if msg := errorOf(e, r)["message"]; msg != "child broke" {
		t.Fatalf("parent error %v, want the child's", msg)
	}
	runs, _ := e.client.ListRuns(e.ctx, backend.ListWorkflowRunsParams{WorkflowName: "bad-child"})
	if len(runs.Data) != 1 || handled.get("failure") != 1 {
		t.Fatalf("%d child runs, %d failure passes; want 1 and 1", len(runs.Data), handled.get("failure"))
	}
}

func TestCanceledChildFailsTheParentStep(t *testing.T) {
	e := newEnv(t)
	child := ow.Define(ow.Spec{Name: "sleepy-child"}, func(ctx ow.Context, _ int) (int, error) {
		return 0, ow.Sleep(ctx, "long", time.Hour)
	})
	parent := ow.Define(ow.Spec{Name: "parent-of-canceled"}, func(ctx ow.Context, _ int) (int, error) {
		return ow.RunWorkflow(ctx, child, 0)
	})
	e.register(child, parent)
	id := start(e, parent, 0)
	e.drain()
	c := childOf(e, id)
	if _, err := e.client.CancelRun(e.ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	e.drain()
	r := e.requireStatus(id, backend.RunFailed)
	if msg, _ := errorOf(e, r)["message"].(string); !strings.Contains(msg, "was canceled") || !strings.Contains(msg, c.ID) {
		t.Fatalf("parent error %q", msg)
	}
}

func TestChildTimeoutFailsTheParentWhileTheChildKeepsRunning(t *testing.T) {
	e := newEnv(t)
	child := ow.Define(ow.Spec{Name: "slow-child"}, func(ctx ow.Context, _ int) (int, error) {
		if err := ow.Sleep(ctx, "long", time.Hour); err != nil {
			return 0, err
		}
		return 1, nil
	})
	parent := ow.Define(ow.Spec{Name: "impatient"}, func(ctx ow.Context, _ int) (int, error) {
		return ow.RunWorkflow(ctx, child, 0, ow.WithTimeout(10*time.Minute))
	})
	e.register(child, parent)
	id := start(e, parent, 0)
	e.drain()
	p := e.requireStatus(id, backend.RunRunning)
	if want := e.clock.Now().Add(10 * time.Minute); p.AvailableAt == nil || !p.AvailableAt.Equal(want) {
		t.Fatalf("parent parked until %v, want the wait's timeout %v", p.AvailableAt, want)
	}
	e.clock.Advance(10 * time.Minute)
	e.drain()
	r := e.requireStatus(id, backend.RunFailed)
	if msg := errorOf(e, r)["message"]; msg != "Timed out waiting for child workflow to complete" {
		t.Fatalf("parent error %v", msg)
	}
	c := childOf(e, id)
	if c.Status != backend.RunRunning {
		t.Fatalf("child %s after parent timeout, want still running", c.Status)
	}
	e.clock.Advance(time.Hour)
	e.drain()
	e.requireStatus(c.ID, backend.RunCompleted)
}

func TestParallelChildrenParkTheParentUntilAllFinish(t *testing.T) {
	e := newEnv(t)
	child := ow.Define(ow.Spec{Name: "sq"}, func(ctx ow.Context, in int) (int, error) {
		if err := ow.Sleep(ctx, "wait", time.Duration(in)*time.Second); err != nil {
			return 0, err
		}
		return in * in, nil
	})
	parent := ow.Define(ow.Spec{Name: "sum-sq"}, func(ctx ow.Context, n int) (int, error) {
		var fs []*ow.Future[int]
		for i := 1; i <= n; i++ {
			fs = append(fs, ow.GoWorkflow(ctx, child, i))
		}
		sum := 0
		for _, f := range fs {
			v, err := f.Get()
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	e.register(child, parent)
	id := start(e, parent, 3)
	for range 5 {
		e.drain()
		e.clock.Advance(time.Second)
	}
	if got := output[int](e, id); got != 14 {
		t.Fatalf("output %d, want 1+4+9", got)
	}
	runs, _ := e.client.ListRuns(e.ctx, backend.ListWorkflowRunsParams{WorkflowName: "sq"})
	if len(runs.Data) != 3 {
		t.Fatalf("%d children, want 3", len(runs.Data))
	}
}
