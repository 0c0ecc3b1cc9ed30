package dag_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/dag"
	"github.com/openworkflow-go/openworkflow/internal/clock"
	"github.com/openworkflow-go/openworkflow/internal/testhooks"
)

// clocked is a fixture whose backend, worker and engine share one fake
// clock; the test drives the worker pass by pass (tick).
type clocked struct {
	*fixture
	clock  *clock.Fake
	worker *ow.Worker
}

func newClocked(t *testing.T, tg target) *clocked {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	b, _ := tg.open(t, clk.Now)
	// ClaimAhead off: the worker claims a parked run at its wake-up only
	// (the claim-ahead hold is timed in real time).
	w := ow.NewWorker(b, ow.WorkerOptions{Now: clk.Now, ClaimAhead: -1, ID: "clocked"})
	return &clocked{fixture: newFixture(t, b, dag.Options{Now: clk.Now}), clock: clk, worker: w}
}

// forEachClocked runs f as a parallel subtest on each backend, clocked.
func forEachClocked(t *testing.T, f func(t *testing.T, c *clocked)) {
	t.Helper()
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			f(t, newClocked(t, tg))
		})
	}
}

func (c *clocked) register(names ...string) {
	c.t.Helper()
	for _, n := range names {
		if err := c.worker.Register(c.eng.Workflow(n)); err != nil {
			c.t.Fatal(err)
		}
	}
}

// tick runs one claim and the passes of the runs claimed.
func (c *clocked) tick() int {
	c.t.Helper()
	n, err := testhooks.Tick(c.ctx, c.worker)
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// requireParkedUntil checks that the run is parked (running, no worker)
// until at.
func (c *clocked) requireParkedUntil(runID string, at time.Time) {
	c.t.Helper()
	r, err := c.c.GetRun(c.ctx, runID)
	if err != nil {
		c.t.Fatal(err)
	}
	if r.Status != backend.RunRunning || r.WorkerID != nil || r.AvailableAt == nil || !r.AvailableAt.Equal(at) {
		c.t.Fatalf("run %s, worker %v, available at %v; want parked until %v", r.Status, r.WorkerID, r.AvailableAt, at)
	}
}

func TestRetriesBackOffDurablyWhileOtherBranchesRun(t *testing.T) {
	forEachClocked(t, testRetriesBackOffDurably)
}

func testRetriesBackOffDurably(t *testing.T, c *clocked) {
	var flaky int
	c.handle("flaky", func(context.Context, dag.StepContext) (any, error) {
		flaky++
		if flaky <= 3 {
			return nil, fmt.Errorf("failure %d", flaky)
		}
		return "ok", nil
	})
	for _, h := range []string{"b1", "b2", "b3"} {
		c.handle(h, nil)
	}
	c.define(def("retry", "flaky", "b1", "b2<-b1", "b3<-b2"))
	c.register("retry")
	t0 := c.clock.Now()
	runID := c.start("retry", nil)

	// Pass 1: flaky fails; the independent chain b1 → b2 → b3 runs to its
	// end meanwhile; then only the backoff remains and the run parks.
	c.tick()
	c.requireParkedUntil(runID, t0.Add(time.Second))
	st, err := c.eng.Status(c.ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Steps["flaky"]; st.Status != dag.StatusRunning || s.Status != dag.StatusPending || s.Attempts != 1 ||
		s.Error != "failure 1" || s.NextAttemptAt == nil || !s.NextAttemptAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("while waiting: run %s, flaky %+v", st.Status, s)
	}
	for _, b := range []string{"b1", "b2", "b3"} {
		if st.Steps[b].Status != dag.StatusCompleted {
			t.Fatalf("step %s is %s while flaky waits, want completed", b, st.Steps[b].Status)
		}
	}

	// Failures 1, 2 and 3 back off 1 s, 2 s and 4 s; the retry is not
	// started a millisecond before.
	at := t0
	for i, backoff := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		at = at.Add(backoff)
		c.requireParkedUntil(runID, at)
		c.clock.Advance(backoff - time.Millisecond)
		if n := c.tick(); n != 0 {
			t.Fatalf("after failure %d, the run was claimed %v before its backoff of %v ended", i+1, time.Millisecond, backoff)
		}
		c.clock.Advance(time.Millisecond)
		if n := c.tick(); n != 1 {
			t.Fatalf("after failure %d, the run was not claimed when its backoff ended", i+1)
		}
	}
	st = c.finish(runID)
	if s := st.Steps["flaky"]; st.Status != dag.StatusCompleted || s.Status != dag.StatusCompleted || s.Attempts != 4 || string(s.Output) != `"ok"` {
		t.Fatalf("run %s, flaky %+v; want completed on attempt 4", st.Status, s)
	}
	// The first pass ran flaky and the whole chain b1 → b2 → b3 (flaky's
	// place among them is the scheduler's); the retries came after.
	got := c.rec.starts()
	first := slices.DeleteFunc(slices.Clone(got[:min(4, len(got))]), func(s string) bool { return s == "flaky" })
	if len(got) != 7 || !slices.Equal(first, []string{"b1", "b2", "b3"}) || !slices.Equal(got[4:], []string{"flaky#2", "flaky#3", "flaky#4"}) {
		t.Fatalf("executions %v, want flaky, b1, b2, b3 (b in order), then flaky#2, flaky#3, flaky#4", got)
	}
}

func TestAStepFailsForGoodAfterItsRetries(t *testing.T) {
	forEachClocked(t, testFailsForGoodAfterRetries)
}

func testFailsForGoodAfterRetries(t *testing.T, c *clocked) {
	calls := 0
	c.handle("always", func(context.Context, dag.StepContext) (any, error) {
		calls++
		return nil, errors.New("declined")
	})
	c.handle("after", nil)
	c.define(dag.Definition{Name: "fail", Steps: []dag.Step{
		{Name: "always", Handler: "always", Retries: dag.Retries(2)},
		{Name: "after", Handler: "after", DependsOn: []string{"always"}},
	}})
	c.register("fail")
	runID := c.start("fail", nil)
	for range 10 {
		c.tick()
		c.clock.Advance(30 * time.Second)
	}
	st := c.finish(runID)
	if calls != 3 {
		t.Fatalf("the step executed %d times, want 3 (retries 2)", calls)
	}
	s := st.Steps["always"]
	if st.Status != dag.StatusFailed || s.Status != dag.StatusFailed || s.Attempts != 3 || s.Error != "declined" ||
		st.Steps["after"].Status != dag.StatusSkipped {
		t.Fatalf("run %s, always %+v, after %+v", st.Status, s, st.Steps["after"])
	}
	if e := resultError(t, c.c, runID); e.Code != dag.CodeStepFailed || e.Name != "StepFailedError" ||
		e.Message != `step "always" failed after 3 attempts: declined` {
		t.Fatalf("stored error %+v", e)
	}
}

func TestRetryDelaysAreEnforcedOnARealClock(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		var calls int
		var mu sync.Mutex
		fx.handle("flaky", func(context.Context, dag.StepContext) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls < 3 {
				return nil, errors.New("not yet")
			}
			return calls, nil
		})
		fx.define(dag.Definition{Name: "real", Steps: []dag.Step{{Name: "flaky", Handler: "flaky", Retries: dag.Retries(2)}}})
		fx.startWorker(ow.WorkerOptions{}, "real")
		runID := fx.start("real", nil)
		// While it waits for its first retry the run is parked: no worker
		// holds it.
		waitFor(t, 30*time.Second, "the first backoff", func() (bool, error) {
			st, err := fx.eng.Status(fx.ctx, runID)
			if err != nil || st.Steps["flaky"].NextAttemptAt == nil {
				return false, err
			}
			run, err := fx.c.GetRun(fx.ctx, runID)
			if err != nil {
				return false, err
			}
			if run.WorkerID != nil && st.Steps["flaky"].Attempts == 1 {
				return false, fmt.Errorf("worker %s holds the run during the backoff", *run.WorkerID)
			}
			return true, nil
		})
		st := fx.finish(runID)
		if st.Status != dag.StatusCompleted || st.Steps["flaky"].Attempts != 3 {
			t.Fatalf("run %s, flaky %+v", st.Status, st.Steps["flaky"])
		}
		page, err := fx.c.ListSteps(fx.ctx, backend.ListStepAttemptsParams{WorkflowRunID: runID})
		if err != nil {
			t.Fatal(err)
		}
		byKey := map[string]backend.StepAttempt{}
		for _, a := range page.Data {
			byKey[a.StepName] = a
		}
		for k, backoff := range map[int]time.Duration{2: time.Second, 3: 2 * time.Second} {
			prev, next := byKey[keyOf("flaky", k-1)], byKey[keyOf("flaky", k)]
			if prev.FinishedAt == nil || next.StartedAt == nil || next.StartedAt.Before(prev.FinishedAt.Add(backoff)) {
				t.Errorf("attempt %d started at %v, less than %v after attempt %d ended at %v", k, next.StartedAt, backoff, k-1, prev.FinishedAt)
			}
		}
	})
}

// keyOf is the durable key of attempt k of a step.
func keyOf(step string, k int) string {
	if k == 1 {
		return step
	}
	return fmt.Sprintf("%s#%d", step, k)
}

func TestNonRetryableErrorsAndMissingHandlersFailAtOnce(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		fx.handle("fatal", func(context.Context, dag.StepContext) (any, error) {
			return nil, ow.NonRetryable(errors.New("card reported stolen"))
		})
		fx.handle("elsewhere", nil)
		fx.define(def("fatal", "fatal"))
		fx.define(def("unhandled", "elsewhere"))
		// This worker's engine lacks the handler "elsewhere", registered
		// where the workflow was defined.
		w := ow.NewWorker(fx.b, ow.WorkerOptions{})
		other := dag.New(fx.c, dag.Options{Handlers: map[string]dag.Handler{"fatal": fx.rec.wrap("fatal", func(context.Context, dag.StepContext) (any, error) {
			return nil, ow.NonRetryable(errors.New("card reported stolen"))
		})}})
		if err := w.Register(other.Workflow("fatal"), other.Workflow("unhandled")); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(fx.ctx); err != nil {
			t.Fatal(err)
		}
		defer w.Stop(context.Background())
		st := fx.finish(fx.start("fatal", nil))
		if s := st.Steps["fatal"]; st.Status != dag.StatusFailed || s.Status != dag.StatusFailed || s.Attempts != 1 || s.Error != "card reported stolen" {
			t.Fatalf("non-retryable: run %s, step %+v", st.Status, s)
		}
		if n := fx.rec.count("fatal", false); n != 1 {
			t.Fatalf("non-retryable: %d executions, want 1", n)
		}
		st = fx.finish(fx.start("unhandled", nil))
		if s := st.Steps["elsewhere"]; st.Status != dag.StatusFailed || s.Attempts != 1 || s.Error != `No handler registered for "elsewhere"` {
			t.Fatalf("missing handler: run %s, step %+v", st.Status, s)
		}
	})
}
