package openworkflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

var errFlaky = errors.New("flaky")

func TestStepRetriesBackOffOneTwoFourSecondsThenSucceed(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "flaky"}, func(ctx ow.Context, _ int) (int, error) {
		return ow.Run(ctx, "call", func(context.Context) (int, error) {
			if calls.inc("call") <= 3 {
				return 0, errFlaky
			}
			return 7, nil
		})
	})
	e.register(wf)
	id := start(e, wf, 0)

	for i, delay := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if e.tick() != 1 {
			t.Fatalf("attempt %d: nothing claimed", i+1)
		}
		r := e.requireStatus(id, backend.RunPending)
		if want := e.clock.Now().Add(delay); r.AvailableAt == nil || !r.AvailableAt.Equal(want) {
			t.Fatalf("after failure %d: available at %v, want now+%v", i+1, r.AvailableAt, delay)
		}
		if msg := errorOf(e, r)["message"]; msg != "flaky" {
			t.Fatalf("stored error message %v, want flaky", msg)
		}
		e.clock.Advance(delay - time.Millisecond)
		if e.tick() != 0 {
			t.Fatalf("retry %d claimed before its backoff elapsed", i+1)
		}
		e.clock.Advance(time.Millisecond)
	}
	e.drain()
	if got := output[int](e, id); got != 7 {
		t.Fatalf("output %d, want 7", got)
	}
	if calls.get("call") != 4 {
		t.Fatalf("step ran %d times, want 4", calls.get("call"))
	}
}

func TestStepFailsTheRunAfterTheDefaultTenAttempts(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "always-fails"}, func(ctx ow.Context, _ int) (int, error) {
		return ow.Run(ctx, "call", func(context.Context) (int, error) {
			calls.inc("call")
			return 0, errFlaky
		})
	})
	e.register(wf)
	id := start(e, wf, 0)
	for range 20 {
		e.drain()
		e.clock.Advance(100 * time.Second)
	}
	r := e.requireStatus(id, backend.RunFailed)
	if calls.get("call") != 10 {
		t.Fatalf("step ran %d times, want 10", calls.get("call"))
	}
	if msg := errorOf(e, r)["message"]; msg != "flaky" {
		t.Fatalf("run error %v, want the step's error", msg)
	}
}

func TestRetryBudgetIsPerStepNameAndSleepsDoNotConsumeIt(t *testing.T) {
	e := newEnv(t)
	var calls counter
	policy := ow.WithRetryPolicy(ow.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3})
	wf := ow.Define(ow.Spec{Name: "budget"}, func(ctx ow.Context, _ int) (string, error) {
		for i := range 5 {
			if err := ow.Sleep(ctx, fmt.Sprintf("nap-%d", i), time.Second); err != nil {
				return "", err
			}
		}
		for _, name := range []string{"a", "b"} {
			if _, err := ow.Run(ctx, name, func(context.Context) (int, error) {
				if calls.inc(name) < 3 {
					return 0, errFlaky
				}
				return 0, nil
			}, policy); err != nil {
				return "", err
			}
		}
		return "done", nil
	})
	e.register(wf)
	id := start(e, wf, 0)
	for range 30 {
		e.drain()
		e.clock.Advance(time.Second)
	}
	if got := output[string](e, id); got != "done" {
		t.Fatalf("output %q", got)
	}
	if calls.get("a") != 3 || calls.get("b") != 3 {
		t.Fatalf("a ran %d, b ran %d times; want 3 each (budget 3 per step name)", calls.get("a"), calls.get("b"))
	}
}

func TestNonRetryableStepErrorFailsTheRunAtOnce(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "fatal"}, func(ctx ow.Context, _ int) (int, error) {
		return ow.Run(ctx, "call", func(context.Context) (int, error) {
			calls.inc("call")
			return 0, ow.NonRetryable(errors.New("bad request"))
		})
	})
	e.register(wf)
	id := start(e, wf, 0)
	e.drain()
	r := e.requireStatus(id, backend.RunFailed)
	if calls.get("call") != 1 || errorOf(e, r)["message"] != "bad request" {
		t.Fatalf("calls %d, error %s", calls.get("call"), r.Error)
	}
}

func TestWorkflowErrorsAreNotRetriedByDefault(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "wf-error"}, func(ctx ow.Context, _ int) (int, error) {
		return 0, errors.New("invalid order")
	})
	e.register(wf)
	id := start(e, wf, 0)
	e.drain()
	r := e.requireStatus(id, backend.RunFailed)
	if errorOf(e, r)["message"] != "invalid order" || r.FinishedAt == nil {
		t.Fatalf("run %+v", r)
	}
}

func TestWorkflowRetryPolicyRetriesWorkflowErrors(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "wf-retry", RetryPolicy: &ow.RetryPolicy{InitialInterval: 2 * time.Second, MaximumAttempts: 3}},
		func(ctx ow.Context, _ int) (int, error) {
			if calls.inc("body") < 3 {
				return 0, errors.New("not yet")
			}
			return 3, nil
		})
	e.register(wf)
	id := start(e, wf, 0)
	e.tick()
	r := e.requireStatus(id, backend.RunPending)
	if want := e.clock.Now().Add(2 * time.Second); !r.AvailableAt.Equal(want) {
		t.Fatalf("first workflow retry at %v, want %v", r.AvailableAt, want)
	}
	e.clock.Advance(2 * time.Second)
	e.tick()
	r = e.requireStatus(id, backend.RunPending)
	if want := e.clock.Now().Add(4 * time.Second); !r.AvailableAt.Equal(want) {
		t.Fatalf("second workflow retry at %v, want %v", r.AvailableAt, want)
	}
	e.clock.Advance(4 * time.Second)
	e.drain()
	if got := output[int](e, id); got != 3 || calls.get("body") != 3 {
		t.Fatalf("output %d after %d passes", got, calls.get("body"))
	}
}

func TestDeadlineStopsRetriesThatWouldPassIt(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "deadline"}, func(ctx ow.Context, _ int) (int, error) {
		return ow.Run(ctx, "call", func(context.Context) (int, error) {
			calls.inc("call")
			return 0, errFlaky
		})
	})
	e.register(wf)
	id := start(e, wf, 0, ow.WithDeadline(e.clock.Now().Add(2500*time.Millisecond)))
	e.tick() // fails; retry at +1s (before the deadline)
	e.requireStatus(id, backend.RunPending)
	e.clock.Advance(time.Second)
	e.tick() // fails; retry would be at +2s more = 3s > 2.5s deadline
	r := e.requireStatus(id, backend.RunFailed)
	if calls.get("call") != 2 || errorOf(e, r)["message"] != "flaky" {
		t.Fatalf("calls %d, error %s", calls.get("call"), r.Error)
	}
}

func TestDeadlinePassedWhileWaitingFailsTheRunAtTheNextClaim(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "slow"}, func(ctx ow.Context, _ int) (int, error) {
		return 0, ow.Sleep(ctx, "long", time.Hour)
	})
	e.register(wf)
	id := start(e, wf, 0, ow.WithDeadline(e.clock.Now().Add(time.Minute)))
	e.tick()
	e.clock.Advance(time.Hour)
	if e.tick() != 0 {
		t.Fatal("claimed a run past its deadline")
	}
	r := e.requireStatus(id, backend.RunFailed)
	if errorOf(e, r)["message"] != "Workflow run deadline exceeded" {
		t.Fatalf("error %s", r.Error)
	}
}

// With ClaimUnregistered (OpenWorkflow's rule, the default before issue
// 20), a worker claims any run and hands back those it cannot execute.
func TestRunOfAnUnregisteredWorkflowIsRescheduledWithBackoffForever(t *testing.T) {
	e := newEnv(t, func(o *ow.WorkerOptions) { o.ClaimUnregistered = true })
	h, err := e.client.StartByName(e.ctx, "elsewhere", "v2", 1)
	if err != nil {
		t.Fatal(err)
	}
	delays := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i, d := range delays {
		if e.tick() != 1 {
			t.Fatalf("claim %d: nothing claimed", i+1)
		}
		r := e.requireStatus(h.ID, backend.RunPending)
		if want := e.clock.Now().Add(d); !r.AvailableAt.Equal(want) {
			t.Fatalf("claim %d: rescheduled at %v, want now+%v", i+1, r.AvailableAt, d)
		}
		if msg := errorOf(e, r)["message"]; msg != `Workflow "elsewhere" (version: v2) is not registered` {
			t.Fatalf("error %v", msg)
		}
		e.clock.Advance(d)
	}
	// Registered later (a deploy): the run completes.
	e.register(ow.Define(ow.Spec{Name: "elsewhere", Version: "v2"}, func(ctx ow.Context, in int) (int, error) { return in + 1, nil }))
	e.drain()
	if got := output[int](e, h.ID); got != 2 {
		t.Fatalf("output %d", got)
	}
}

func TestVersionedRunsExecuteOnlyOnTheirVersionAndSeeIt(t *testing.T) {
	e := newEnv(t)
	v1 := ow.Define(ow.Spec{Name: "greet", Version: "v1"}, func(ctx ow.Context, _ int) (string, error) {
		return "v1 saw " + ctx.RunInfo().Version, nil
	})
	unversioned := ow.Define(ow.Spec{Name: "greet"}, func(ctx ow.Context, _ int) (string, error) {
		return "unversioned saw " + ctx.RunInfo().Version, nil
	})
	e.register(v1, unversioned)
	if err := e.worker.Register(ow.Define(ow.Spec{Name: "greet", Version: "v1"}, func(ow.Context, int) (string, error) { return "", nil })); !errors.Is(err, ow.ErrAlreadyRegistered) {
		t.Fatalf("duplicate registration: %v, want ErrAlreadyRegistered", err)
	}
	a := start(e, v1, 0)
	b := start(e, unversioned, 0)
	c, err := e.client.StartByName(e.ctx, "greet", "v9", 0)
	if err != nil {
		t.Fatal(err)
	}
	e.drain()
	if got := output[string](e, a); got != "v1 saw v1" {
		t.Fatalf("v1 run: %q", got)
	}
	if got := output[string](e, b); got != "unversioned saw " {
		t.Fatalf("unversioned run: %q", got)
	}
	e.requireStatus(c.ID, backend.RunPending)
}

// A worker with default options claims only runs of the workflows
// registered on it (issue 20, item 10): a run of another workflow, which
// a worker of another language or deployment may have, is never claimed,
// so it is not delayed by the "not registered" backoff.
func TestADefaultWorkerLeavesOtherWorkflowsRunsAlone(t *testing.T) {
	e := newEnv(t)
	mine := ow.Define(ow.Spec{Name: "mine"}, func(ctx ow.Context, in int) (int, error) { return in, nil })
	e.register(mine)
	theirs, err := e.client.StartByName(e.ctx, "theirs", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	id := start(e, mine, 7)
	e.drain()
	if output[int](e, id) != 7 {
		t.Fatal("own run not executed")
	}
	r := e.requireStatus(theirs.ID, backend.RunPending)
	if r.Attempts != 0 || r.Error != nil {
		t.Fatalf("run of an unregistered workflow was claimed by a default worker: attempts %d, error %s", r.Attempts, r.Error)
	}
}

func TestOnlyRegisteredAndClaimUnregisteredTogetherAreRefused(t *testing.T) {
	e := newEnv(t)
	w := ow.NewWorker(e.b, ow.WorkerOptions{OnlyRegistered: true, ClaimUnregistered: true})
	err := w.Start(e.ctx)
	if err == nil {
		_ = w.Stop(e.ctx)
		t.Fatal("a worker with both OnlyRegistered and ClaimUnregistered started")
	}
	if !strings.Contains(err.Error(), "ClaimUnregistered") {
		t.Fatalf("error %q does not name the contradicting option", err)
	}
}

func TestAWorkerWithOnlyRegisteredLeavesOtherWorkflowsRunsAlone(t *testing.T) {
	e := newEnv(t)
	e.worker = ow.NewWorker(e.b, ow.WorkerOptions{Now: e.clock.Now, OnlyRegistered: true})
	mine := ow.Define(ow.Spec{Name: "mine"}, func(ctx ow.Context, in int) (int, error) { return in, nil })
	e.register(mine)
	theirs, err := e.client.StartByName(e.ctx, "theirs", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	id := start(e, mine, 7)
	e.drain()
	if output[int](e, id) != 7 {
		t.Fatal("own run not executed")
	}
	r := e.requireStatus(theirs.ID, backend.RunPending)
	if r.Attempts != 0 || r.Error != nil {
		t.Fatalf("run of an unregistered workflow was claimed: attempts %d, error %s", r.Attempts, r.Error)
	}
}

// TestRetryRunRerunsOnlyTheFailedStepWithAFreshBudget: a failed run
// retried by hand (Client.RetryRun) runs again from its failed step — the
// completed step's function is not called again — and that step gets its
// whole retry budget again.
func TestRetryRunRerunsOnlyTheFailedStepWithAFreshBudget(t *testing.T) {
	e := newEnv(t)
	var calls counter
	policy := ow.WithRetryPolicy(ow.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 2})
	wf := ow.Define(ow.Spec{Name: "two-steps"}, func(ctx ow.Context, _ int) (string, error) {
		one, err := ow.Run(ctx, "first", func(context.Context) (string, error) {
			calls.inc("first")
			return "one", nil
		})
		if err != nil {
			return "", err
		}
		two, err := ow.Run(ctx, "second", func(context.Context) (string, error) {
			if calls.inc("second") <= 3 { // fails its budget of 2, then once after the retry
				return "", errFlaky
			}
			return "two", nil
		}, policy)
		return one + "+" + two, err
	})
	e.register(wf)
	id := start(e, wf, 0)
	for range 5 {
		e.drain()
		e.clock.Advance(time.Second)
	}
	failed := e.requireStatus(id, backend.RunFailed)
	if calls.get("first") != 1 || calls.get("second") != 2 {
		t.Fatalf("before the retry: first ran %d times, second %d; want 1 and 2", calls.get("first"), calls.get("second"))
	}

	if _, err := e.client.RetryRun(e.ctx, backend.RetryWorkflowRunParams{WorkflowRunID: id}); err != nil {
		t.Fatalf("RetryRun: %v", err)
	}
	r := e.requireStatus(id, backend.RunPending)
	if r.Attempts != failed.Attempts || r.Error != nil {
		t.Fatalf("retried run: attempts %d (want %d), error %s", r.Attempts, failed.Attempts, r.Error)
	}
	if e.tick() != 1 {
		t.Fatal("the retried run was not claimable at once")
	}
	// The step's third call failed: with a fresh budget of 2 it is retried
	// after its backoff rather than failing the run.
	e.requireStatus(id, backend.RunPending)
	e.clock.Advance(time.Second)
	e.drain()
	if got := output[string](e, id); got != "one+two" {
		t.Fatalf("output %q, want one+two", got)
	}
	if calls.get("first") != 1 || calls.get("second") != 4 {
		t.Fatalf("after the retry: first ran %d times, second %d; want 1 and 4", calls.get("first"), calls.get("second"))
	}
	var marks int
	for _, s := range e.steps(id) {
		if s.Kind == backend.StepRetry {
			marks++
		}
	}
	if marks != 1 {
		t.Fatalf("%d retry marks in the history, want 1", marks)
	}

	_, err := e.client.RetryRun(e.ctx, backend.RetryWorkflowRunParams{WorkflowRunID: id})
	if !errors.Is(err, backend.ErrRunNotFailed) {
		t.Fatalf("RetryRun of a completed run: %v, want ErrRunNotFailed", err)
	}
	_, err = e.client.RetryRun(e.ctx, backend.RetryWorkflowRunParams{WorkflowRunID: "wrun_missing"})
	if !errors.Is(err, backend.ErrRunNotFound) {
		t.Fatalf("RetryRun of a missing run: %v, want ErrRunNotFound", err)
	}
}

// TestRetryRunGivesAWorkflowFailureAFreshBudget: a run failed by its
// workflow function (outside steps) and retried by hand counts its
// workflow retry budget from the retry, not from its first claim.
func TestRetryRunGivesAWorkflowFailureAFreshBudget(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "wf-budget", RetryPolicy: &ow.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 2}},
		func(ctx ow.Context, _ int) (int, error) {
			if n := calls.inc("body"); n <= 3 {
				return 0, fmt.Errorf("pass %d refused", n)
			}
			return 4, nil
		})
	e.register(wf)
	id := start(e, wf, 0)
	for range 3 {
		e.drain()
		e.clock.Advance(time.Second)
	}
	e.requireStatus(id, backend.RunFailed)
	if calls.get("body") != 2 {
		t.Fatalf("the body ran %d times before the retry, want 2 (its budget)", calls.get("body"))
	}
	if _, err := e.client.RetryRun(e.ctx, backend.RetryWorkflowRunParams{WorkflowRunID: id}); err != nil {
		t.Fatalf("RetryRun: %v", err)
	}
	e.tick()
	e.requireStatus(id, backend.RunPending) // the third pass failed, within the fresh budget
	e.clock.Advance(time.Second)
	e.drain()
	if got := output[int](e, id); got != 4 || calls.get("body") != 4 {
		t.Fatalf("output %d after %d passes, want 4 after 4", got, calls.get("body"))
	}
}
