package openworkflow_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// countingBackend records every group commit the worker makes.
type countingBackend struct {
	backend.Backend
	mu      sync.Mutex
	commits [][]backend.Write
}

func (c *countingBackend) ApplyWrites(ctx context.Context, groups [][]backend.Write) []error {
	var ws []backend.Write
	for _, g := range groups {
		ws = append(ws, g...)
	}
	c.mu.Lock()
	c.commits = append(c.commits, ws)
	c.mu.Unlock()
	return c.Backend.ApplyWrites(ctx, groups)
}

func (c *countingBackend) kinds() [][]backend.WriteKind {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]backend.WriteKind
	for _, ws := range c.commits {
		var ks []backend.WriteKind
		for _, w := range ws {
			ks = append(ks, w.Kind)
		}
		out = append(out, ks)
	}
	return out
}

// requireKinds fails t unless the group commits made were, in order, of
// the write kinds of want; why is appended to the failure.
func (c *countingBackend) requireKinds(t *testing.T, why string, want [][]backend.WriteKind) {
	t.Helper()
	got := c.kinds()
	if len(got) != len(want) {
		t.Fatalf("commits %v, want %v%s", got, want, why)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("commits %v, want %v%s", got, want, why)
		}
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("commits %v, want %v%s", got, want, why)
			}
		}
	}
}

func TestAFastStepCostsOneWriteAndTheLastSharesTheRunsCompletionCommit(t *testing.T) {
	e := newEnv(t)
	cb := &countingBackend{Backend: e.b}
	e.worker = ow.NewWorker(cb, ow.WorkerOptions{Now: e.clock.Now, RunningStepAfter: time.Hour})
	wf := ow.Define(ow.Spec{Name: "three"}, func(ctx ow.Context, in int) (int, error) {
		for _, name := range []string{"a", "b", "c"} {
			v, err := ow.Run(ctx, name, func(context.Context) (int, error) { return in + 1, nil })
			if err != nil {
				return 0, err
			}
			in = v
		}
		return in, nil
	})
	e.register(wf)
	id := start(e, wf, 0)
	e.drain()
	if got := output[int](e, id); got != 3 {
		t.Fatalf("output %d", got)
	}
	ins, done := backend.WriteInsertStep, backend.WriteCompleteRun
	cb.requireKinds(t, " (one write per step; last step with the completion)", [][]backend.WriteKind{{ins}, {ins}, {ins, done}})
	for _, s := range e.steps(id) {
		if s.Status != backend.StepCompleted || s.FinishedAt == nil {
			t.Fatalf("step %+v not recorded completed", s)
		}
	}
}

func TestASlowStepShowsAsRunningWhileItExecutes(t *testing.T) {
	e := newEnv(t)
	cb := &countingBackend{Backend: e.b}
	e.worker = ow.NewWorker(cb, ow.WorkerOptions{Now: e.clock.Now, RunningStepAfter: time.Millisecond})
	seenRunning := make(chan bool, 1)
	var id string
	wf := ow.Define(ow.Spec{Name: "slow-step"}, func(ctx ow.Context, _ int) (int, error) {
		return ow.Run(ctx, "slow", func(context.Context) (int, error) {
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				if steps := e.steps(id); len(steps) == 1 && steps[0].Status == backend.StepRunning {
					seenRunning <- true
					return 1, nil
				}
				time.Sleep(5 * time.Millisecond)
			}
			seenRunning <- false
			return 1, nil
		})
	})
	e.register(wf)
	id = start(e, wf, 0)
	e.drain()
	if !<-seenRunning {
		t.Fatal("a step executing longer than RunningStepAfter never showed as running")
	}
	steps := e.steps(id)
	if len(steps) != 1 || steps[0].Status != backend.StepCompleted {
		t.Fatalf("steps %+v: want the one attempt, completed", steps)
	}
}

func TestAWokenRunCompletesItsSleepWithTheNextStepsWriteNotAlone(t *testing.T) {
	e := newEnv(t)
	cb := &countingBackend{Backend: e.b}
	e.worker = ow.NewWorker(cb, ow.WorkerOptions{Now: e.clock.Now, RunningStepAfter: time.Hour})
	wf := ow.Define(ow.Spec{Name: "nap-then-two"}, func(ctx ow.Context, in int) (int, error) {
		if err := ow.Sleep(ctx, "nap", time.Minute); err != nil {
			return 0, err
		}
		for _, name := range []string{"a", "b"} {
			v, err := ow.Run(ctx, name, func(context.Context) (int, error) { return in + 1, nil })
			if err != nil {
				return 0, err
			}
			in = v
		}
		return in, nil
	})
	e.register(wf)
	id := start(e, wf, 0)
	e.drain()
	e.clock.Advance(time.Minute)
	e.drain()
	if got := output[int](e, id); got != 2 {
		t.Fatalf("output %d, want 2", got)
	}
	ins, fin, park, done := backend.WriteInsertStep, backend.WriteFinishStep, backend.WriteParkRun, backend.WriteCompleteRun
	// The woken pass: the sleep's completion waits for step a's record
	// (committed before b runs), not a commit of its own before a runs.
	cb.requireKinds(t, "", [][]backend.WriteKind{{ins, park}, {fin, ins}, {ins, done}})
	for _, s := range e.steps(id) {
		if s.Status != backend.StepCompleted {
			t.Fatalf("step %s is %s, want completed", s.StepName, s.Status)
		}
	}
}

// failingOnce refuses the first group commit that contains a write of
// kind k (as a database error would), then behaves.
type failingOnce struct {
	backend.Backend
	k      backend.WriteKind
	mu     sync.Mutex
	failed bool
}

func (f *failingOnce) ApplyWrites(ctx context.Context, groups [][]backend.Write) []error {
	f.mu.Lock()
	fail := !f.failed
	if fail {
		fail = false
		for _, g := range groups {
			for _, w := range g {
				fail = fail || w.Kind == f.k
			}
		}
		f.failed = fail
	}
	f.mu.Unlock()
	if !fail {
		return f.Backend.ApplyWrites(ctx, groups)
	}
	errs := make([]error, len(groups))
	for i := range errs {
		errs[i] = errors.New("injected: connection lost before the commit")
	}
	return errs
}

func TestASleepCompletionLostWithItsCommitIsCompletedAgainByTheNextPass(t *testing.T) {
	e := newEnv(t, func(o *ow.WorkerOptions) { o.LeaseDuration = time.Minute })
	fb := &failingOnce{Backend: e.b, k: backend.WriteFinishStep}
	e.worker = ow.NewWorker(fb, ow.WorkerOptions{Now: e.clock.Now, RunningStepAfter: time.Hour, LeaseDuration: time.Minute})
	var c counter
	wf := ow.Define(ow.Spec{Name: "nap-then-one"}, func(ctx ow.Context, in int) (int, error) {
		if err := ow.Sleep(ctx, "nap", time.Minute); err != nil {
			return 0, err
		}
		return ow.Run(ctx, "a", func(context.Context) (int, error) { c.inc("a"); return in + 1, nil })
	})
	e.register(wf)
	id := start(e, wf, 41)
	e.drain()
	e.clock.Advance(time.Minute)
	// The woken pass's only commit (sleep completion, a, completion) is
	// lost; the worker hands the run back at once (not when its lease
	// expires), and the same drain claims it again and completes it.
	e.drain()
	if got := output[int](e, id); got != 42 {
		t.Fatalf("output %d, want 42", got)
	}
	if n := c.get("a"); n != 2 {
		t.Fatalf("step a executed %d times, want 2 (at least once: its first record was lost)", n)
	}
	steps := e.steps(id)
	if len(steps) != 2 || steps[0].StepName != "nap" || steps[0].Status != backend.StepCompleted || steps[1].StepName != "a" {
		t.Fatalf("steps %+v: want the sleep completed once and step a", steps)
	}
}

// parks returns the OnlySleeps of every park the worker committed, in
// order.
func (c *countingBackend) parks() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []bool
	for _, ws := range c.commits {
		for _, w := range ws {
			if w.Kind == backend.WriteParkRun {
				out = append(out, w.OnlySleeps)
			}
		}
	}
	return out
}

// TestAParkSaysWhetherTheRunWaitsOnlyOnSleeps checks Write.OnlySleeps,
// which lets the PostgreSQL backend skip a park's reconciliation: a run
// parked on a sleep says so; one parked on a signal wait does not (a
// signal delivered before the park must still wake it). The mix of both
// is history.RunningOnly's test.
func TestAParkSaysWhetherTheRunWaitsOnlyOnSleeps(t *testing.T) {
	e := newEnv(t)
	cb := &countingBackend{Backend: e.b}
	e.worker = ow.NewWorker(cb, ow.WorkerOptions{Now: e.clock.Now, RunningStepAfter: time.Hour})
	nap := ow.Define(ow.Spec{Name: "nap"}, func(ctx ow.Context, _ int) (int, error) {
		return 1, ow.Sleep(ctx, "nap", time.Minute)
	})
	wait := ow.Define(ow.Spec{Name: "wait"}, func(ctx ow.Context, _ int) (int, error) {
		_, _, err := ow.WaitForSignal[int](ctx, "go", ow.WithTimeout(time.Hour))
		return 1, err
	})
	e.register(nap, wait)
	for _, c := range []struct {
		start func() string
		want  bool
	}{
		{func() string { return start(e, nap, 0) }, true},
		{func() string { return start(e, wait, 0) }, false},
	} {
		before := len(cb.parks())
		c.start()
		e.drain()
		got := cb.parks()[before:]
		if len(got) != 1 || got[0] != c.want {
			t.Fatalf("parks' OnlySleeps %v, want [%v]", got, c.want)
		}
	}
}
