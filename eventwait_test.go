package openworkflow_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

type orderIn struct {
	OrderID string `json:"orderId"`
}

type payment struct {
	OrderID string  `json:"orderId"`
	Amount  float64 `json:"amount"`
}

// paidWorkflow waits for the "order.paid" event of its order (with match)
// and returns "<event id> <amount>", or "timed out".
func paidWorkflow(name, match string, timeout time.Duration, opts ...ow.WaitOption) *ow.Workflow[orderIn, string] {
	return ow.Define(ow.Spec{Name: name}, func(ctx ow.Context, in orderIn) (string, error) {
		ev, ok, err := ow.WaitForEvent[payment](ctx, "order.paid", match, timeout, opts...)
		if err != nil {
			return "", err
		}
		if !ok {
			return "timed out", nil
		}
		return fmt.Sprintf("%s %s %g", ev.ID, ev.Data.OrderID, ev.Data.Amount), nil
	})
}

const byOrder = `event.data.orderId == input.orderId`

func publish(t *testing.T, e *env, name string, data any) string {
	t.Helper()
	p, err := e.client.PublishEvent(e.ctx, name, data, ow.PublishOptions{})
	if err != nil {
		t.Fatalf("publish %s: %v", name, err)
	}
	return p.ID
}

func effects(t *testing.T, e *env, eventID string, kind backend.EventEffectKind) []string {
	t.Helper()
	ev, err := e.client.GetEvent(e.ctx, eventID)
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, f := range ev.Effects {
		if f.Kind == kind && f.WorkflowRunID != nil {
			runs = append(runs, *f.WorkflowRunID)
		}
	}
	return runs
}

func TestWaitForEventIsWokenByAMatchingEventAndNotByOthers(t *testing.T) {
	for _, c := range []struct{ name, match string }{
		{"an indexed match", byOrder},
		{"an unindexed match", `event.data.orderId.startsWith(input.orderId) && event.data.orderId.size() == input.orderId.size()`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			wf := paidWorkflow("pay", c.match, time.Hour)
			e.register(wf)
			one, two := start(e, wf, orderIn{"o-1"}), start(e, wf, orderIn{"o-2"})
			e.drain()
			e.requireStatus(one, backend.RunRunning)
			publish(t, e, "order.shipped", payment{OrderID: "o-1"}) // another name
			other := publish(t, e, "order.paid", payment{OrderID: "o-3", Amount: 1})
			e.drain()
			e.requireStatus(one, backend.RunRunning)
			e.requireStatus(two, backend.RunRunning)
			if woke := effects(t, e, other, backend.EffectWoke); len(woke) != 0 {
				t.Fatalf("a non-matching event woke %v", woke)
			}
			evID := publish(t, e, "order.paid", payment{OrderID: "o-1", Amount: 42})
			e.drain()
			if got, want := output[string](e, one), evID+" o-1 42"; got != want {
				t.Fatalf("output %q, want %q", got, want)
			}
			e.requireStatus(two, backend.RunRunning)
			if woke := effects(t, e, evID, backend.EffectWoke); len(woke) != 1 || woke[0] != one {
				t.Fatalf("the event's woke effects = %v, want [%s]", woke, one)
			}
		})
	}
}

func TestOneEventWakesEveryWaitItMatchesAndAWaitTakesOneEvent(t *testing.T) {
	e := newEnv(t)
	wf := paidWorkflow("pay", byOrder, time.Hour)
	e.register(wf)
	a, b := start(e, wf, orderIn{"o-1"}), start(e, wf, orderIn{"o-1"})
	e.drain()
	first := publish(t, e, "order.paid", payment{OrderID: "o-1", Amount: 1})
	second := publish(t, e, "order.paid", payment{OrderID: "o-1", Amount: 2})
	e.drain()
	for _, id := range []string{a, b} {
		if got := output[string](e, id); got != first+" o-1 1" {
			t.Fatalf("run %s output %q, want the first event %s", id, got, first)
		}
	}
	if woke := effects(t, e, second, backend.EffectWoke); len(woke) != 0 {
		t.Fatalf("the second event woke %v; every wait had taken the first", woke)
	}
}

func TestWaitForEventTimesOut(t *testing.T) {
	e := newEnv(t)
	wf := paidWorkflow("pay", byOrder, time.Minute)
	e.register(wf)
	id := start(e, wf, orderIn{"o-1"})
	e.drain()
	e.clock.Advance(time.Minute)
	e.drain()
	if got := output[string](e, id); got != "timed out" {
		t.Fatalf("output %q", got)
	}
	late := publish(t, e, "order.paid", payment{OrderID: "o-1"})
	if woke := effects(t, e, late, backend.EffectWoke); len(woke) != 0 {
		t.Fatalf("an event after the timeout woke %v", woke)
	}
}

func TestAnEventPublishedBeforeTheWaitIsDeliveredOnlyWithALookback(t *testing.T) {
	e := newEnv(t)
	plain := paidWorkflow("plain", byOrder, time.Hour)
	back := paidWorkflow("lookback", byOrder, time.Hour, ow.WithLookback(10*time.Minute))
	e.register(plain, back)
	old := publish(t, e, "order.paid", payment{OrderID: "o-1", Amount: 1})
	e.clock.Advance(5 * time.Minute)
	early := publish(t, e, "order.paid", payment{OrderID: "o-1", Amount: 2})
	e.clock.Advance(6 * time.Minute) // old is now 11 minutes back, early 6
	p, l := start(e, plain, orderIn{"o-1"}), start(e, back, orderIn{"o-1"})
	e.drain()
	e.requireStatus(p, backend.RunRunning)
	if got := output[string](e, l); got != early+" o-1 2" {
		t.Fatalf("the look-back wait got %q, want the event within its window %s (not %s)", got, early, old)
	}
	later := publish(t, e, "order.paid", payment{OrderID: "o-1", Amount: 3})
	e.drain()
	if got := output[string](e, p); got != later+" o-1 3" {
		t.Fatalf("the plain wait got %q, want the event after it %s", got, later)
	}
}

func TestWaitForEventReplayReturnsTheSameEvent(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var seen []string
	failed := false
	wf := ow.Define(ow.Spec{Name: "replay"}, func(ctx ow.Context, in orderIn) (string, error) {
		ev, _, err := ow.WaitForEvent[payment](ctx, "order.paid", byOrder, time.Hour)
		if err != nil {
			return "", err
		}
		mu.Lock()
		seen = append(seen, ev.ID)
		mu.Unlock()
		_, err = ow.Run(ctx, "after", func(context.Context) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			if !failed {
				failed = true
				return 0, fmt.Errorf("fail once")
			}
			return 1, nil
		})
		return ev.ID, err
	})
	e.register(wf)
	id := start(e, wf, orderIn{"o-1"})
	e.drain()
	evID := publish(t, e, "order.paid", payment{OrderID: "o-1"})
	e.drain()
	e.clock.Advance(time.Hour / 2) // past the step's retry backoff
	e.drain()
	publish(t, e, "order.paid", payment{OrderID: "o-1"}) // must not change the memoised result
	e.drain()
	if got := output[string](e, id); got != evID {
		t.Fatalf("output %q, want %s", got, evID)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 {
		t.Fatalf("the wait was passed %d times, want a replay", len(seen))
	}
	for _, s := range seen {
		if s != evID {
			t.Fatalf("passes saw events %v, want %s every time", seen, evID)
		}
	}
}

func TestWaitForEventMatchErrors(t *testing.T) {
	t.Run("a match that does not compile fails the run with line and column", func(t *testing.T) {
		e := newEnv(t)
		wf := paidWorkflow("bad", `event.data.orderId == `, time.Hour)
		e.register(wf)
		id := start(e, wf, orderIn{"o-1"})
		e.drain()
		r := e.requireStatus(id, backend.RunFailed)
		if msg := fmt.Sprint(errorOf(e, r)["message"]); !strings.Contains(msg, "1:23") || !strings.Contains(msg, "order.paid") {
			t.Fatalf("error %q does not say where the match is wrong", msg)
		}
	})
	t.Run("a match that is not a bool fails the run", func(t *testing.T) {
		e := newEnv(t)
		wf := paidWorkflow("bad", `event.data.orderId`, time.Hour)
		e.register(wf)
		id := start(e, wf, orderIn{"o-1"})
		e.drain()
		// dyn results are checked at evaluation: the wait stays open and
		// each event's evaluation error is recorded.
		e.requireStatus(id, backend.RunRunning)
		ev := publish(t, e, "order.paid", payment{OrderID: "o-1"})
		assertEvalError(t, e, ev, id, "not bool")
	})
	t.Run("a runtime error is recorded and is no match", func(t *testing.T) {
		e := newEnv(t)
		wf := paidWorkflow("missing", `event.data.orderId == input.orderId && event.data.coupon.startsWith("c")`, time.Hour)
		e.register(wf)
		id := start(e, wf, orderIn{"o-1"})
		e.drain()
		ev := publish(t, e, "order.paid", payment{OrderID: "o-1"})
		e.drain()
		e.requireStatus(id, backend.RunRunning)
		assertEvalError(t, e, ev, id, "no such key")
		ws, err := e.b.(backend.EventWaiter).ListEventWaits(e.ctx, id)
		if err != nil || len(ws) != 1 || ws[0].LastError == nil || !strings.Contains(*ws[0].LastError, "no such key") || !ws[0].Open() {
			t.Fatalf("waits = %+v, %v; want one open wait with the error", ws, err)
		}
	})
}

func assertEvalError(t *testing.T, e *env, eventID, runID, want string) {
	t.Helper()
	ev, err := e.client.GetEvent(e.ctx, eventID)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ev.Effects {
		if f.Kind == backend.EffectError && f.WorkflowRunID != nil && *f.WorkflowRunID == runID && f.Message != nil && strings.Contains(*f.Message, want) {
			return
		}
	}
	t.Fatalf("event effects %+v have no error %q for run %s", ev.Effects, want, runID)
}

func TestConcurrentPublishersDeliverEachWaitExactlyOneEvent(t *testing.T) {
	e := newEnv(t)
	const waits, publishers, each = 12, 4, 3
	wf := paidWorkflow("pay", byOrder, time.Hour)
	unindexed := paidWorkflow("pay-any", `input.orderId == "o-1" && event.name == "order.paid"`, time.Hour)
	e.register(wf, unindexed)
	var ids []string
	for i := range waits {
		if i%2 == 0 {
			ids = append(ids, start(e, wf, orderIn{"o-1"}))
		} else {
			ids = append(ids, start(e, unindexed, orderIn{"o-1"}))
		}
	}
	for range 10 {
		e.drain()
	}
	var wg sync.WaitGroup
	errs := make(chan error, publishers*each)
	evIDs := make(chan string, publishers*each)
	for range publishers {
		wg.Go(func() {
			for range each {
				p, err := e.client.PublishEvent(e.ctx, "order.paid", payment{OrderID: "o-1"}, ow.PublishOptions{})
				if err != nil {
					errs <- err
					return
				}
				evIDs <- p.ID
			}
		})
	}
	wg.Wait()
	close(errs)
	close(evIDs)
	for err := range errs {
		t.Fatal(err)
	}
	woken := map[string]int{}
	for id := range evIDs {
		for _, r := range effects(t, e, id, backend.EffectWoke) {
			woken[r]++
		}
	}
	e.drain()
	for _, id := range ids {
		if woken[id] != 1 {
			t.Errorf("run %s was woken %d times, want once", id, woken[id])
		}
		ws, err := e.b.(backend.EventWaiter).ListEventWaits(e.ctx, id)
		if err != nil || len(ws) != 1 || ws[0].EventID == nil {
			t.Fatalf("waits of %s = %+v, %v", id, ws, err)
		}
		if got := output[string](e, id); !strings.HasPrefix(got, *ws[0].EventID+" ") {
			t.Errorf("run %s returned %q, not its delivered event %s", id, got, *ws[0].EventID)
		}
	}
}
