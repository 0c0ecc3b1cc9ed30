package openworkflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// tally is the state a counting workflow carries from run to run.
type tally struct {
	Total      int `json:"total"`
	Generation int `json:"generation"`
}

// counterWorkflow adds 1 in each of its steps, continuing as new once its
// run's history holds perStep steps, until generations runs have run.
func counterWorkflow(name string, perRun, generations int) *ow.Workflow[tally, int] {
	return ow.Define(ow.Spec{Name: name}, func(ctx ow.Context, s tally) (int, error) {
		for ow.HistoryLength(ctx) < perRun {
			n, err := ow.Run(ctx, "add", func(context.Context) (int, error) { return 1, nil })
			if err != nil {
				return 0, err
			}
			s.Total += n
		}
		if c := ctx.RunInfo().ContinuedFrom; (c == nil) != (s.Generation == 0) || (c != nil && c.Generation != s.Generation) {
			return 0, ow.NonRetryable(fmt.Errorf("RunInfo().ContinuedFrom = %+v in generation %d", c, s.Generation))
		}
		if s.Generation+1 < generations {
			return 0, ow.ContinueAsNew(tally{Total: s.Total, Generation: s.Generation + 1})
		}
		return s.Total, nil
	})
}

// chain reads the runs of the chain that starts at runID, following
// continuedTo, and checks that each successor names its predecessor and
// generation (lineage both ways).
func chain(e *env, runID string) []*backend.WorkflowRun {
	e.t.Helper()
	var runs []*backend.WorkflowRun
	for {
		r := e.run(runID)
		if n := len(runs); n > 0 {
			from, ok := backend.ContinuationOf(r.Context)
			if !ok || from.RunID != runs[n-1].ID || from.Generation != n {
				e.t.Fatalf("run %s records continuedFrom %+v (%v), want %s generation %d", r.ID, from, ok, runs[n-1].ID, n)
			}
		} else if _, ok := backend.ContinuationOf(r.Context); ok {
			e.t.Fatalf("the chain's first run %s records a predecessor", r.ID)
		}
		runs = append(runs, r)
		next, ok := backend.ContinuedTo(r.Context)
		if !ok {
			return runs
		}
		if r.Status != backend.RunCompleted {
			e.t.Fatalf("run %s names successor %s but is %s, want completed", r.ID, next, r.Status)
		}
		runID = next
	}
}

func TestACounterThatContinuesAsNewEndsWithTheRightValueAndBoundedHistories(t *testing.T) {
	e := newEnv(t)
	const perRun, generations = 5, 4
	wf := counterWorkflow("can-counter", perRun, generations)
	e.register(wf)
	h, err := wf.Start(e.ctx, e.client, tally{}, ow.WithPriority(3), ow.WithConcurrencyKey("tenant"))
	if err != nil {
		t.Fatal(err)
	}
	e.drain()

	got, err := h.Result(e.ctx)
	if err != nil {
		t.Fatalf("Result of the chain's first run: %v", err)
	}
	if got != perRun*generations {
		t.Fatalf("Result = %d, want %d (%d runs of %d steps)", got, perRun*generations, generations, perRun)
	}
	runs := chain(e, h.ID)
	if len(runs) != generations {
		t.Fatalf("the chain has %d runs, want %d", len(runs), generations)
	}
	page, err := e.client.ListRuns(e.ctx, backend.ListWorkflowRunsParams{WorkflowName: "can-counter"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != generations {
		t.Fatalf("%d runs of the workflow, want exactly %d: one successor per link", len(page.Data), generations)
	}
	for i, r := range runs {
		if steps := e.steps(r.ID); len(steps) != perRun {
			t.Errorf("run %d (%s) recorded %d attempts, want %d: each run's history is bounded", i, r.ID, len(steps), perRun)
		}
		if r.Priority != 3 || r.ConcurrencyKey == nil || *r.ConcurrencyKey != "tenant" {
			t.Errorf("run %d has priority %d, key %v; want the first run's 3 and tenant", i, r.Priority, r.ConcurrencyKey)
		}
	}
	last := runs[len(runs)-1]
	if string(last.Output) != fmt.Sprint(perRun*generations) {
		t.Fatalf("the last run's output = %s, want %d", last.Output, perRun*generations)
	}

	// Without following, the first run's result names its successor.
	_, err = h.Result(e.ctx, ow.DisableFollowingRuns())
	var rc *ow.RunContinuedError
	if !errors.As(err, &rc) || !errors.Is(err, ow.ErrContinuedAsNew) || rc.RunID != h.ID || rc.NextRunID != runs[1].ID {
		t.Fatalf("Result(DisableFollowingRuns) = %v, want a RunContinuedError naming %s", err, runs[1].ID)
	}
	// A replay finds nothing to do: no second continuation anywhere.
	e.drain()
	if again, _ := e.client.ListRuns(e.ctx, backend.ListWorkflowRunsParams{WorkflowName: "can-counter"}); len(again.Data) != generations {
		t.Fatalf("%d runs after draining again, want %d", len(again.Data), generations)
	}
}

func TestAStartWithTheFirstRunsIdempotencyKeyReturnsTheFirstRunWhoseResultIsTheChains(t *testing.T) {
	e := newEnv(t)
	wf := counterWorkflow("can-idem", 2, 3)
	e.register(wf)
	first, err := wf.Start(e.ctx, e.client, tally{}, ow.WithIdempotencyKey("job-1"))
	if err != nil {
		t.Fatal(err)
	}
	e.drain()
	again, err := wf.Start(e.ctx, e.client, tally{}, ow.WithIdempotencyKey("job-1"))
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID || !again.Reused {
		t.Fatalf("the second start with the key got run %s (reused %v), want the first run %s", again.ID, again.Reused, first.ID)
	}
	if got, err := again.Result(e.ctx); err != nil || got != 6 {
		t.Fatalf("Result through the key = %d, %v; want the chain's 6", got, err)
	}
	runs := chain(e, first.ID)
	for _, r := range runs[1:] {
		if r.IdempotencyKey != nil {
			t.Fatalf("successor %s has idempotency key %q, want none: the first run keeps it", r.ID, *r.IdempotencyKey)
		}
	}
	if runs[0].IdempotencyKey == nil || *runs[0].IdempotencyKey != "job-1" {
		t.Fatalf("the first run's key = %v, want job-1", runs[0].IdempotencyKey)
	}
}

func TestASignalSentToTheRunBeforeItContinuesReachesItsSuccessor(t *testing.T) {
	e := newEnv(t)
	var wf *ow.Workflow[int, string]
	wf = ow.Define(ow.Spec{Name: "can-inbox"}, func(ctx ow.Context, gen int) (string, error) {
		if gen == 0 {
			// The signal arrives while this run still runs: it is stored
			// for it, and moves with the switch.
			if _, err := ow.Run(ctx, "notify", func(context.Context) (bool, error) {
				_, err := e.client.SignalRun(e.ctx, ctx.RunInfo().ID, "msg", "hello", "")
				return true, err
			}); err != nil {
				return "", err
			}
			return "", ow.ContinueAsNew(1)
		}
		v, ok, err := ow.WaitForSignal[string](ctx, "msg")
		if err != nil || !ok {
			return "", fmt.Errorf("no signal (ok %v): %w", ok, err)
		}
		return v, nil
	})
	e.register(wf)
	h, err := wf.Start(e.ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	e.drain()
	if got, err := h.Result(e.ctx); err != nil || got != "hello" {
		t.Fatalf("Result = %q, %v; want the signal sent to the first run, received by its successor", got, err)
	}
	if runs := chain(e, h.ID); len(runs) != 2 {
		t.Fatalf("the chain has %d runs, want 2", len(runs))
	}
}

func TestASignalSentToAContinuedRunGoesToTheChainsCurrentRun(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "can-entity"}, func(ctx ow.Context, gen int) (string, error) {
		if gen < 2 {
			return "", ow.ContinueAsNew(gen + 1)
		}
		v, ok, err := ow.WaitForSignal[string](ctx, "msg")
		if err != nil || !ok {
			return "", fmt.Errorf("no signal (ok %v): %w", ok, err)
		}
		return v, nil
	})
	e.register(wf)
	h, err := wf.Start(e.ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	e.drain()
	runs := chain(e, h.ID)
	if len(runs) != 3 || runs[2].Status != backend.RunRunning {
		t.Fatalf("the chain has %d runs, the last %s; want 3, the last waiting", len(runs), runs[len(runs)-1].Status)
	}
	// Addressed to the first run, which completed two switches ago.
	s, err := e.client.SignalRun(e.ctx, h.ID, "msg", "to the chain", "")
	if err != nil || !s.Delivered {
		t.Fatalf("SignalRun to the chain's first run = %+v, %v; want it delivered to the waiting third run", s, err)
	}
	e.drain()
	if got, err := h.Result(e.ctx); err != nil || got != "to the chain" {
		t.Fatalf("Result = %q, %v; want the signal sent to the first run", got, err)
	}
	// A run that ended without continuing still refuses.
	if _, err := e.client.SignalRun(e.ctx, runs[2].ID, "msg", "late", ""); !errors.Is(err, backend.ErrRunTerminal) {
		t.Fatalf("SignalRun to the chain's completed last run: %v, want ErrRunTerminal", err)
	}
}

func TestAParentWaitingOnAChildGetsTheResultOfTheChildsLastRun(t *testing.T) {
	e := newEnv(t)
	child := counterWorkflow("can-child", 2, 3)
	parent := ow.Define(ow.Spec{Name: "can-parent"}, func(ctx ow.Context, _ int) (int, error) {
		return ow.RunWorkflow(ctx, child, tally{})
	})
	e.register(child, parent)
	id := start(e, parent, 0)
	e.drain()
	if got := output[int](e, id); got != 6 {
		t.Fatalf("the parent's output = %d, want the child chain's 6 (not the first link's)", got)
	}
	var childID string
	for _, s := range e.steps(id) {
		if s.Kind == backend.StepWorkflow && s.ChildWorkflowRunID != nil {
			childID = *s.ChildWorkflowRunID
		}
	}
	runs, err := e.client.ListRuns(e.ctx, backend.ListWorkflowRunsParams{WorkflowName: "can-child"})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs.Data) != 3 {
		t.Fatalf("%d child runs, want 3", len(runs.Data))
	}
	for _, r := range runs.Data {
		if r.ParentStepAttemptID == nil {
			t.Fatalf("child run %s has no parent link; every link of the chain keeps it", r.ID)
		}
		if _, continued := backend.ContinuedTo(r.Context); !continued && r.ID != childID {
			t.Fatalf("the parent's step links child %s, want the chain's last run %s", childID, r.ID)
		}
	}
}

func TestARunThatLostItsLeaseBeforeContinuingCreatesNoSuccessor(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "can-lost"}, func(ctx ow.Context, gen int) (int, error) {
		// The run is no longer this worker's; whatever the step's write
		// answers, the workflow then asks to continue.
		_, _ = ow.Run(ctx, "lose", func(context.Context) (bool, error) {
			_, err := e.client.CancelRun(e.ctx, ctx.RunInfo().ID)
			return true, err
		})
		return 0, ow.ContinueAsNew(gen + 1)
	})
	e.register(wf)
	id := start(e, wf, 0)
	e.drain()
	e.requireStatus(id, backend.RunCanceled)
	page, err := e.client.ListRuns(e.ctx, backend.ListWorkflowRunsParams{WorkflowName: "can-lost"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 {
		t.Fatalf("%d runs of the workflow, want 1: a pass that lost its run creates no successor", len(page.Data))
	}
}

func TestContinueAsNewFromAStepFailsTheStepAndFromAnUnencodableInputFailsTheRun(t *testing.T) {
	e := newEnv(t)
	fromStep := ow.Define(ow.Spec{Name: "can-step"}, func(ctx ow.Context, _ int) (int, error) {
		return ow.Run(ctx, "bad", func(context.Context) (int, error) { return 0, ow.ContinueAsNew(1) })
	})
	unencodable := ow.Define(ow.Spec{Name: "can-chan"}, func(ctx ow.Context, _ int) (int, error) {
		return 0, ow.ContinueAsNew(make(chan int))
	})
	e.register(fromStep, unencodable)
	a, b := start(e, fromStep, 0), start(e, unencodable, 0)
	e.drain()
	ra := e.requireStatus(a, backend.RunFailed)
	if msg, _ := errorOf(e, ra)["message"].(string); !strings.Contains(msg, "return it from the workflow function, not from a step") {
		t.Fatalf("the run whose step returned ContinueAsNew failed with %s, want an error saying to return it from the workflow", ra.Error)
	}
	r := e.requireStatus(b, backend.RunFailed)
	if msg, _ := errorOf(e, r)["message"].(string); msg == "" || !strings.Contains(msg, "cannot be encoded") {
		t.Fatalf("the run's error = %s, want it to say the successor's input cannot be encoded", r.Error)
	}
	for _, name := range []string{"can-step", "can-chan"} {
		if page, _ := e.client.ListRuns(e.ctx, backend.ListWorkflowRunsParams{WorkflowName: name}); len(page.Data) != 1 {
			t.Fatalf("%d runs of %s, want 1 (no successor)", len(page.Data), name)
		}
	}
}
