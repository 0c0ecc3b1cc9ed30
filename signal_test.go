package openworkflow_test

import (
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

type approval struct {
	By string `json:"by"`
}

func approvalWorkflow(timeout time.Duration) *ow.Workflow[int, string] {
	return ow.Define(ow.Spec{Name: "approve"}, func(ctx ow.Context, _ int) (string, error) {
		a, ok, err := ow.WaitForSignal[approval](ctx, "approved", ow.WithTimeout(timeout))
		if err != nil {
			return "", err
		}
		if !ok {
			return "timed out", nil
		}
		return "approved by " + a.By, nil
	})
}

func TestSignalSentToAWaitingRunWakesItWithTheData(t *testing.T) {
	e := newEnv(t)
	wf := approvalWorkflow(time.Hour)
	e.register(wf)
	id := start(e, wf, 0)
	e.tick()
	e.requireStatus(id, backend.RunRunning)
	ids, err := e.client.SendSignal(e.ctx, "approved", approval{By: "ada"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != id {
		t.Fatalf("signal reached %v, want [%s]", ids, id)
	}
	e.drain()
	if got := output[string](e, id); got != "approved by ada" {
		t.Fatalf("output %q", got)
	}
}

func TestSignalWaitReturnsNotReceivedAfterItsTimeout(t *testing.T) {
	e := newEnv(t)
	wf := approvalWorkflow(time.Minute)
	e.register(wf)
	id := start(e, wf, 0)
	e.tick()
	e.clock.Advance(time.Minute)
	e.drain()
	if got := output[string](e, id); got != "timed out" {
		t.Fatalf("output %q", got)
	}
	// A signal after the timeout reaches nobody: signals are not buffered.
	ids, err := e.client.SendSignal(e.ctx, "approved", approval{By: "late"}, "")
	if err != nil || len(ids) != 0 {
		t.Fatalf("late signal reached %v (%v)", ids, err)
	}
}

func TestSignalSentFromAWorkflowStepReachesAnotherRunOnce(t *testing.T) {
	e := newEnv(t)
	waiter := approvalWorkflow(time.Hour)
	sender := ow.Define(ow.Spec{Name: "sender"}, func(ctx ow.Context, _ int) (int, error) {
		ids, err := ow.SendSignal(ctx, "", "approved", approval{By: "bot"})
		if err != nil {
			return 0, err
		}
		if err := ow.Sleep(ctx, "then", time.Second); err != nil { // replay after this must not re-send
			return 0, err
		}
		return len(ids), nil
	})
	e.register(waiter, sender)
	w := start(e, waiter, 0)
	e.tick()
	s := start(e, sender, 0)
	e.drain()
	e.clock.Advance(time.Second)
	e.drain()
	if got := output[int](e, s); got != 1 {
		t.Fatalf("sender reached %d runs, want 1", got)
	}
	if got := output[string](e, w); got != "approved by bot" {
		t.Fatalf("waiter output %q", got)
	}
}
