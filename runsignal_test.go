package openworkflow_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// Signals sent to one run (Client.SignalRun, issue 20 item 9) are stored
// until the run waits for them, received once each and in send order; a
// keyed repeat is a no-op; a send to a run that waits wakes it at once;
// a terminal or missing run refuses the send.
func TestSignalRunIsStoredUntilTheRunWaitsAndReceivedOnceInOrder(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "order"}, func(ctx ow.Context, _ int) ([]string, error) {
		var got []string
		for range 4 {
			v, ok, err := ow.WaitForSignal[string](ctx, "delivered", ow.WithTimeout(time.Hour))
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, errors.New("a wait timed out")
			}
			got = append(got, v)
		}
		return got, nil
	})
	e.register(wf)
	id := start(e, wf, 0)
	send := func(data, key string) *backend.RunSignal {
		t.Helper()
		s, err := e.client.SignalRun(e.ctx, id, "delivered", data, key)
		if err != nil {
			t.Fatalf("signal %q: %v", data, err)
		}
		return s
	}
	// Sent before the run ever waits: stored.
	a := send("a", "")
	b := send("b", "k")
	if dup := send("b again", "k"); !dup.Duplicate || dup.ID != b.ID {
		t.Fatalf("keyed repeat: %+v, want a duplicate of %s", dup, b.ID)
	}
	send("c", "")
	if a.Delivered || b.Delivered {
		t.Fatalf("signals sent before any wait reported delivered: %+v %+v", a, b)
	}
	e.drain()
	r := e.requireStatus(id, backend.RunRunning)
	if r.WorkerID != nil {
		t.Fatalf("run not parked at its fourth wait: worker %v", *r.WorkerID)
	}
	// The run parks on its fourth wait for an hour; the send wakes it now.
	d := send("d", "")
	if !d.Delivered {
		t.Fatalf("a signal sent to a waiting run was not delivered at once: %+v", d)
	}
	e.drain()
	e.requireStatus(id, backend.RunCompleted)
	if got := output[[]string](e, id); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("received %q, want [a b c d]", got)
	}
	var deliveries int
	for _, s := range e.steps(id) {
		if s.Kind == backend.StepSignalWait {
			deliveries++
		}
	}
	if deliveries != 4 {
		t.Fatalf("%d signal-wait attempts, want 4", deliveries)
	}
	if _, err := e.client.SignalRun(e.ctx, id, "delivered", "late", ""); !errors.Is(err, backend.ErrRunTerminal) {
		t.Fatalf("signal to a completed run: %v, want ErrRunTerminal", err)
	}
	if _, err := e.client.SignalRun(e.ctx, "no-such-run", "delivered", "x", ""); !errors.Is(err, backend.ErrRunNotFound) {
		t.Fatalf("signal to a missing run: %v, want ErrRunNotFound", err)
	}
}
