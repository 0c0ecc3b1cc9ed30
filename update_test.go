package openworkflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// cart is a workflow with an update handler "add" (its validator refuses
// items that are not positive) and a durable sleep of an hour: the side
// effects of the handler and the validator are counted in calls.
func cart(calls *counter) *ow.Workflow[int, string] {
	return ow.Define(ow.Spec{Name: "cart"}, func(ctx ow.Context, _ int) (string, error) {
		err := ow.HandleUpdate(ctx, "add", func(ctx context.Context, n int) (string, error) {
			calls.inc("handler")
			return fmt.Sprintf("added %d", n), nil
		}, func(n int) error {
			calls.inc("validator")
			if n <= 0 {
				return fmt.Errorf("quantity %d is not positive", n)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		calls.inc("pass")
		if err := ow.Sleep(ctx, "nap", time.Hour); err != nil {
			return "", err
		}
		return "woke", nil
	})
}

func (e *env) admitUpdate(runID, name string, arg any, opts ...ow.UpdateOption) *backend.RunUpdate {
	e.t.Helper()
	u, err := e.client.AdmitUpdate(e.ctx, runID, name, arg, opts...)
	if err != nil {
		e.t.Fatalf("admit update %q of %s: %v", name, runID, err)
	}
	return u
}

func (e *env) update(runID, id string) *backend.RunUpdate {
	e.t.Helper()
	u, err := e.client.GetUpdate(e.ctx, runID, id)
	if err != nil {
		e.t.Fatalf("get update %s of %s: %v", id, runID, err)
	}
	return u
}

// An update sent to a parked (sleeping) run wakes it: the handler runs at
// once, and the run parks again until its sleep's own time.
func TestUpdateToASleepingRunRunsAtOnceAndTheRunSleepsOnToItsTime(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := cart(&calls)
	e.register(wf)
	id := start(e, wf, 0)
	e.drain()
	parked := e.requireStatus(id, backend.RunRunning)
	if parked.WorkerID != nil || parked.AvailableAt == nil {
		t.Fatalf("run not parked on its sleep: %+v", parked)
	}
	wakeAt := *parked.AvailableAt

	u := e.admitUpdate(id, "add", 3)
	e.drain() // the clock has not moved: only the update can make it claimable
	got := e.update(id, u.ID)
	if got.State != backend.UpdateCompleted || string(got.Result) != `"added 3"` {
		t.Fatalf("update after the drain = %s %s %s; want completed \"added 3\"", got.State, got.Result, got.Error)
	}
	res, err := e.client.UpdateRun(e.ctx, id, "add", 3, ow.WithUpdateID(u.ID))
	if err != nil || string(res) != `"added 3"` {
		t.Fatalf("UpdateRun of the settled id = %s, %v; want \"added 3\"", res, err)
	}
	again := e.requireStatus(id, backend.RunRunning)
	if again.WorkerID != nil || again.AvailableAt == nil || !again.AvailableAt.Equal(wakeAt) {
		t.Fatalf("run after the update: available at %v (worker %v); want parked until its sleep's %v", again.AvailableAt, again.WorkerID, wakeAt)
	}
	if calls.get("handler") != 1 || calls.get("validator") != 1 {
		t.Fatalf("handler ran %d times, validator %d; want once each", calls.get("handler"), calls.get("validator"))
	}
	e.clock.Advance(time.Hour)
	e.drain()
	e.requireStatus(id, backend.RunCompleted)
	if calls.get("handler") != 1 || calls.get("validator") != 1 {
		t.Fatalf("after the replays the handler ran %d times, validator %d; want once each", calls.get("handler"), calls.get("validator"))
	}
	if names := e.stepNames(id); !slices.Equal(names, []string{"nap", "__update:add:" + u.ID}) {
		t.Fatalf("history %q; want the sleep, then the update's handler step", names)
	}
}

// An update admitted while the run executes a step is handled at the
// run's next wait point, in the same pass, after the step.
func TestUpdateToARunBetweenStepsRunsAtItsNextWaitPoint(t *testing.T) {
	e := newEnv(t)
	var order []string
	var mu sync.Mutex
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	var updateID string
	wf := ow.Define(ow.Spec{Name: "busy"}, func(ctx ow.Context, _ int) (int, error) {
		if err := ow.HandleUpdate(ctx, "ping", func(ctx context.Context, s string) (string, error) {
			note("handler")
			return "pong " + s, nil
		}, nil); err != nil {
			return 0, err
		}
		runID := ctx.RunInfo().ID
		if _, err := ow.Run(ctx, "work", func(context.Context) (int, error) {
			// A caller sends the update while the step runs.
			u, err := e.client.AdmitUpdate(context.Background(), runID, "ping", "x")
			if err != nil {
				return 0, err
			}
			updateID = u.ID
			note("step")
			return 1, nil
		}); err != nil {
			return 0, err
		}
		note("after step")
		if err := ow.Sleep(ctx, "wait", time.Minute); err != nil {
			return 0, err
		}
		return 2, nil
	})
	e.register(wf)
	id := start(e, wf, 0)
	if n := e.tick(); n != 1 {
		t.Fatalf("first tick claimed %d runs", n)
	}
	if got := e.update(id, updateID); got.State != backend.UpdateCompleted || string(got.Result) != `"pong x"` {
		t.Fatalf("update after the pass that reached the wait = %s %s %s; want completed \"pong x\"", got.State, got.Result, got.Error)
	}
	if !slices.Equal(order, []string{"step", "after step", "handler"}) {
		t.Fatalf("order %q; want the step, the code after it, then the handler at the wait point", order)
	}
}

// One update id is one update: admitted twice, waited for by two callers,
// its handler runs once and both callers get its result.
func TestUpdateDeliveredTwiceWithOneIDRunsOnce(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := cart(&calls)
	e.register(wf)
	id := start(e, wf, 0)
	e.drain()
	first := e.admitUpdate(id, "add", 2, ow.WithUpdateID("order-17"))
	second := e.admitUpdate(id, "add", 5, ow.WithUpdateID("order-17"))
	if first.Duplicate || !second.Duplicate || second.Seq != first.Seq || string(second.Input) != "2" {
		t.Fatalf("admissions = %+v, %+v; want the second a duplicate of the first (input 2)", first, second)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	results := make([]string, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			var r string
			r, errs[i] = ow.Update[string](ctx, e.client, id, "add", 2, ow.WithUpdateID("order-17"))
			results[i] = r
		})
	}
	// Tick until both callers have their answer: a caller's admission
	// holds the run's row for an instant, and a claim skips a locked row.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for waiting := true; waiting; {
		e.drain()
		select {
		case <-done:
			waiting = false
		case <-time.After(10 * time.Millisecond):
		}
	}
	for i := range 2 {
		if errs[i] != nil || results[i] != "added 2" {
			t.Fatalf("caller %d got %q, %v; want \"added 2\"", i, results[i], errs[i])
		}
	}
	e.drain()
	if calls.get("handler") != 1 || calls.get("validator") != 1 {
		t.Fatalf("handler ran %d times, validator %d; want once each", calls.get("handler"), calls.get("validator"))
	}
	var updateSteps int
	for _, s := range e.steps(id) {
		if strings.HasPrefix(s.StepName, "__update:") {
			updateSteps++
		}
	}
	if updateSteps != 1 {
		t.Fatalf("%d update step attempts; want 1", updateSteps)
	}
}

// A validator's rejection writes nothing in the run's history: no step
// attempt, the run parked as before; the caller gets the validator's
// message. So do an unknown name and a validator that calls a step.
func TestUpdateRejectedByItsValidatorWritesNothing(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "strict"}, func(ctx ow.Context, _ int) (string, error) {
		if err := ow.HandleUpdate(ctx, "set", func(ctx context.Context, n int) (int, error) {
			calls.inc("handler")
			return n, nil
		}, func(n int) error {
			if n < 0 {
				return fmt.Errorf("value %d must not be negative", n)
			}
			if n == 99 {
				_, err := ow.Run(ctx, "sneaky", func(context.Context) (int, error) { calls.inc("sneaky"); return 0, nil })
				_ = err // swallowed: the update is rejected anyway
			}
			return nil
		}); err != nil {
			return "", err
		}
		if _, err := ow.Run(ctx, "prepare", func(context.Context) (int, error) { return 1, nil }); err != nil {
			return "", err
		}
		if err := ow.Sleep(ctx, "nap", time.Hour); err != nil {
			return "", err
		}
		return "done", nil
	})
	e.register(wf)
	id := start(e, wf, 0)
	e.drain()
	before := e.steps(id)
	parked := e.run(id)

	cases := []struct {
		name, update string
		arg          int
		want         string
	}{
		{"the validator refuses", "set", -4, "value -4 must not be negative"},
		{"the validator calls a step", "set", 99, "may not call steps"},
		{"nobody handles the name", "unset", 1, `unknown update "unset"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := e.admitUpdate(id, c.update, c.arg)
			e.drain()
			ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			defer cancel()
			_, err := e.client.UpdateRun(ctx, id, c.update, c.arg, ow.WithUpdateID(u.ID))
			var rej *ow.UpdateRejectedError
			if !errors.As(err, &rej) || !errors.Is(err, ow.ErrUpdateRejected) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("UpdateRun = %v; want an *UpdateRejectedError saying %q", err, c.want)
			}
			if errors.Is(err, ow.ErrRunTerminal) {
				t.Fatalf("a validator's rejection matches ErrRunTerminal: %v", err)
			}
		})
	}
	after := e.steps(id)
	if len(after) != len(before) {
		t.Fatalf("history grew from %d to %d attempts: %q", len(before), len(after), e.stepNames(id))
	}
	for i := range before {
		if after[i].ID != before[i].ID || after[i].Status != before[i].Status || string(after[i].Output) != string(before[i].Output) {
			t.Fatalf("attempt %d changed: %+v -> %+v", i, before[i], after[i])
		}
	}
	now := e.run(id)
	if now.WorkerID != nil || !now.AvailableAt.Equal(*parked.AvailableAt) || now.Status != parked.Status {
		t.Fatalf("run after the rejections = %s available %v; want parked as before until %v", now.Status, now.AvailableAt, parked.AvailableAt)
	}
	if calls.get("handler") != 0 || calls.get("sneaky") != 0 {
		t.Fatalf("handler ran %d times, the validator's step %d; want never", calls.get("handler"), calls.get("sneaky"))
	}
}

// failingSettle is a backend whose first SettleRunUpdate fails as a lost
// connection would, after the handler's step was recorded: the crash
// window between the two writes.
type failingSettle struct {
	backend.Backend
	backend.UpdateStore
	mu     sync.Mutex
	failed bool
}

func (f *failingSettle) SettleRunUpdate(ctx context.Context, p backend.SettleRunUpdateParams) error {
	f.mu.Lock()
	fail := !f.failed && p.State == backend.UpdateCompleted
	f.failed = f.failed || fail
	f.mu.Unlock()
	if fail {
		return errors.New("connection reset by peer (injected)")
	}
	return f.UpdateStore.SettleRunUpdate(ctx, p)
}

// After a restart the replay re-applies an accepted update from its
// recorded step: neither the validator nor the handler runs again, and a
// settlement lost in between is written from the record.
func TestUpdateReplayAfterARestartReappliesItWithoutRerunning(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := cart(&calls)
	fb := &failingSettle{Backend: e.b, UpdateStore: e.b.(backend.UpdateStore)}
	first := ow.NewWorker(fb, ow.WorkerOptions{Concurrency: 1, ID: "first", Now: e.clock.Now, ClaimAhead: -1})
	if err := first.Register(wf); err != nil {
		t.Fatal(err)
	}
	e.worker = first
	e.register() // nothing more
	id := start(e, wf, 0)
	e.drain()
	u := e.admitUpdate(id, "add", 7)
	e.tick() // the handler's step is recorded; its settlement fails and the run is handed back
	if calls.get("handler") != 1 {
		t.Fatalf("handler ran %d times on the first worker; want 1", calls.get("handler"))
	}
	if got := e.update(id, u.ID); got.State != backend.UpdateAdmitted {
		t.Fatalf("update after the failed settlement = %s; want still admitted", got.State)
	}
	// A new worker (a restart) replays the run.
	second := ow.NewWorker(e.b, ow.WorkerOptions{Concurrency: 1, ID: "second", Now: e.clock.Now, ClaimAhead: -1})
	if err := second.Register(wf); err != nil {
		t.Fatal(err)
	}
	e.worker = second
	e.clock.Advance(time.Minute) // past any hand-back delay
	e.drain()
	got := e.update(id, u.ID)
	if got.State != backend.UpdateCompleted || string(got.Result) != `"added 7"` {
		t.Fatalf("update after the restart = %s %s %s; want completed \"added 7\"", got.State, got.Result, got.Error)
	}
	e.clock.Advance(time.Hour)
	e.drain()
	e.requireStatus(id, backend.RunCompleted)
	if calls.get("handler") != 1 || calls.get("validator") != 1 {
		t.Fatalf("handler ran %d times, validator %d; want once each across the restart", calls.get("handler"), calls.get("validator"))
	}
}

// A handler's error fails the update, not the run; the run finishing
// with an update it never handled makes that update rejected ("run
// finished"); a new update to a finished run and one to a missing run are
// refused; a caller whose context ends first learns the stage reached.
func TestUpdateOutcomesAtTheEdges(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "edges"}, func(ctx ow.Context, _ int) (string, error) {
		if err := ow.HandleUpdate(ctx, "boom", func(ctx context.Context, _ json.RawMessage) (int, error) {
			return 0, errors.New("the handler broke")
		}, nil); err != nil {
			return "", err
		}
		if _, _, err := ow.WaitForSignal[string](ctx, "finish", ow.WithTimeout(time.Hour)); err != nil {
			return "", err
		}
		return "finished", nil
	})
	e.register(wf)
	id := start(e, wf, 0)
	e.drain()

	short, cancel := context.WithTimeout(e.ctx, 50*time.Millisecond)
	_, err := e.client.UpdateRun(short, id, "boom", nil, ow.WithUpdateID("late"))
	cancel()
	var te *ow.UpdateTimeoutError
	if !errors.As(err, &te) || te.Stage != backend.UpdateAdmitted || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("UpdateRun with no worker ticking = %v; want an *UpdateTimeoutError at stage admitted", err)
	}
	e.drain()
	_, err = e.client.UpdateRun(e.ctx, id, "boom", nil, ow.WithUpdateID("late"))
	var fe *ow.UpdateFailedError
	if !errors.As(err, &fe) || !errors.Is(err, ow.ErrUpdateFailed) || !strings.Contains(err.Error(), "the handler broke") {
		t.Fatalf("UpdateRun of a failing handler = %v; want an *UpdateFailedError with the handler's message", err)
	}
	e.requireStatus(id, backend.RunRunning)

	// Admitted while the run is owned, right before it completes.
	if _, err := e.client.SignalRun(e.ctx, id, "finish", "now", ""); err != nil {
		t.Fatal(err)
	}
	last := e.admitUpdate(id, "never-declared-before-the-end", 1)
	e.drain()
	e.requireStatus(id, backend.RunCompleted)
	got := e.update(id, last.ID)
	if got.State != backend.UpdateRejected {
		t.Fatalf("update of a run that finished = %s %s; want rejected", got.State, got.Error)
	}
	_, err = e.client.UpdateRun(e.ctx, id, "boom", nil, ow.WithUpdateID("after-the-end"))
	if !errors.Is(err, ow.ErrRunTerminal) {
		t.Fatalf("a new update to a completed run = %v; want ErrRunTerminal", err)
	}
	_, err = e.client.UpdateRun(e.ctx, id, "boom", nil, ow.WithUpdateID("late"))
	if !errors.As(err, &fe) {
		t.Fatalf("the settled update's id after the run finished = %v; want its stored failure", err)
	}
	if _, err := e.client.UpdateRun(e.ctx, "wrun_missing", "boom", nil); !errors.Is(err, ow.ErrRunNotFound) {
		t.Fatalf("an update to a missing run = %v; want ErrRunNotFound", err)
	}
}

// A run whose workflow declares no handler at all, parked on a sleep, is
// woken by an update, rejects it as unknown, and parks again until its
// sleep's time, its history unchanged; a handler's panic, and a result no
// backend can store, fail its update, not its run.
func TestUpdateToAWorkflowWithoutHandlersAndAPanickingHandler(t *testing.T) {
	e := newEnv(t)
	plain := ow.Define(ow.Spec{Name: "plain"}, func(ctx ow.Context, _ int) (string, error) {
		if err := ow.Sleep(ctx, "nap", time.Hour); err != nil {
			return "", err
		}
		return "woke", nil
	})
	panicky := ow.Define(ow.Spec{Name: "panicky"}, func(ctx ow.Context, _ int) (string, error) {
		if err := ow.HandleUpdate(ctx, "explode", func(context.Context, int) (int, error) { panic("boom") }, nil); err != nil {
			return "", err
		}
		// A result no backend can store (a lone surrogate escape).
		if err := ow.HandleUpdate(ctx, "unstorable", func(context.Context, int) (json.RawMessage, error) {
			return json.RawMessage(`"\ud800"`), nil
		}, nil); err != nil {
			return "", err
		}
		if err := ow.Sleep(ctx, "nap", time.Hour); err != nil {
			return "", err
		}
		return "woke", nil
	})
	e.register(plain, panicky)
	id := start(e, plain, 0)
	other := start(e, panicky, 0)
	e.drain()
	parked := e.run(id)
	before := e.stepNames(id)

	u := e.admitUpdate(id, "anything", 1)
	p := e.admitUpdate(other, "explode", 1)
	e.drain()
	got := e.update(id, u.ID)
	if got.State != backend.UpdateRejected || !strings.Contains(string(got.Error), `unknown update \"anything\"`) {
		t.Fatalf("update of a workflow without handlers = %s %s; want rejected as unknown", got.State, got.Error)
	}
	now := e.run(id)
	if now.WorkerID != nil || !now.AvailableAt.Equal(*parked.AvailableAt) {
		t.Fatalf("run after the rejection available at %v (worker %v); want parked until %v", now.AvailableAt, now.WorkerID, parked.AvailableAt)
	}
	if after := e.stepNames(id); !slices.Equal(after, before) {
		t.Fatalf("history %q after the rejection; want %q", after, before)
	}
	_, err := e.client.UpdateRun(e.ctx, other, "explode", 1, ow.WithUpdateID(p.ID))
	if !errors.Is(err, ow.ErrUpdateFailed) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("UpdateRun of a panicking handler = %v; want ErrUpdateFailed with the panic", err)
	}
	bad := e.admitUpdate(other, "unstorable", 1)
	e.drain()
	_, err = e.client.UpdateRun(e.ctx, other, "unstorable", 1, ow.WithUpdateID(bad.ID))
	if !errors.Is(err, ow.ErrUpdateFailed) || !strings.Contains(err.Error(), "cannot be stored") {
		t.Fatalf("UpdateRun of a handler whose result cannot be stored = %v; want ErrUpdateFailed saying why", err)
	}
	e.clock.Advance(time.Hour)
	e.drain()
	e.requireStatus(id, backend.RunCompleted)
	e.requireStatus(other, backend.RunCompleted)
}
