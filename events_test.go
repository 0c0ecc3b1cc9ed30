package openworkflow_test

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
	"github.com/openworkflow-go/openworkflow/eventexpr"
)

func TestPublishedEventsAreStoredListedNewestFirstAndDeduplicatedByIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	first, err := e.client.PublishEvent(e.ctx, "order.created", map[string]any{"amount": 150}, ow.PublishOptions{IdempotencyKey: "k1", Key: "tenant-a"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.ID, "evt_") || first.Duplicate {
		t.Fatalf("first publish: %+v", first)
	}
	again, err := e.client.PublishEvent(e.ctx, "order.created", map[string]any{"amount": 1}, ow.PublishOptions{IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID || !again.Duplicate {
		t.Fatalf("a publish with the same idempotency key = %+v, want the first event's id %s, duplicate", again, first.ID)
	}
	out, err := e.client.PublishEvents(e.ctx, []ow.Event{{Name: "order.paid"}, {Name: "order.created", Data: json.RawMessage(`{"amount":2}`)}})
	if err != nil {
		t.Fatal(err)
	}
	page, err := e.client.ListEvents(e.ctx, backend.ListEventsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range page.Data {
		ids = append(ids, ev.ID)
	}
	if want := []string{out[1].ID, out[0].ID, first.ID}; strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("list = %v, want newest first %v (the duplicate stored nothing)", ids, want)
	}
	byName, err := e.client.ListEvents(e.ctx, backend.ListEventsParams{Name: "order.created", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(byName.Data) != 1 || byName.Data[0].ID != out[1].ID || byName.Next == nil {
		t.Fatalf("first page by name: %+v", byName)
	}
	next, err := e.client.ListEvents(e.ctx, backend.ListEventsParams{Name: "order.created", Limit: 1, After: *byName.Next})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Data) != 1 || next.Data[0].ID != first.ID || next.Next != nil {
		t.Fatalf("second page by name: %+v", next)
	}
	got, err := e.client.GetEvent(e.ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Data) != `{"amount":150}` || got.Key == nil || *got.Key != "tenant-a" || got.Name != "order.created" {
		t.Fatalf("get = %+v data %s", got, got.Data)
	}
	if _, err := e.client.GetEvent(e.ctx, "evt_missing"); !errors.Is(err, backend.ErrEventNotFound) {
		t.Fatalf("get of a missing event: %v", err)
	}
}

func TestAnInvalidEventInAPublishStoresNothing(t *testing.T) {
	e := newEnv(t)
	for _, bad := range [][]ow.Event{
		{{Name: "ok"}, {Name: ""}},
		{{Name: "ok"}, {Name: "big", Data: json.RawMessage(`"` + strings.Repeat("x", backend.MaxEventDataBytes) + `"`)}},
		{{Name: "ok"}, {Name: "nul\x00name"}},
		{{Name: "ok"}, {Name: "bad json", Data: json.RawMessage(`{`)}},
	} {
		if _, err := e.client.PublishEvents(e.ctx, bad); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("publish %q: err = %v, want ErrInvalidArgument", bad[1].Name, err)
		}
	}
	page, err := e.client.ListEvents(e.ctx, backend.ListEventsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 0 {
		t.Fatalf("stored %d events of refused publishes", len(page.Data))
	}
}

type order struct {
	OrderID string  `json:"orderId"`
	Amount  float64 `json:"amount"`
}

// triggeredInput is the input of a run an event started.
type triggeredInput struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Data order  `json:"data"`
}

func TestATriggerStartsOneRunPerMatchingEventWithTheEventAsInput(t *testing.T) {
	e := newEnv(t)
	big := ow.Define(ow.Spec{Name: "big-order", Triggers: []ow.EventTrigger{{Event: "order.created", If: "event.data.amount > 100.0"}}},
		func(ctx ow.Context, in triggeredInput) (string, error) { return in.Data.OrderID, nil })
	every := ow.Define(ow.Spec{Name: "every-order", Triggers: []ow.EventTrigger{{Event: "order.created"}, {Event: "order.created", If: "true"}}},
		func(ctx ow.Context, in triggeredInput) (string, error) { return in.ID, nil })
	e.register(big, every)
	e.tick() // stores the triggers, as Worker.Start does

	small, err := e.client.PublishEvent(e.ctx, "order.created", order{OrderID: "o-1", Amount: 5}, ow.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	large, err := e.client.PublishEvent(e.ctx, "order.created", order{OrderID: "o-2", Amount: 500}, ow.PublishOptions{Key: "tenant-a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(small.Started) != 1 {
		t.Fatalf("the small order started %v, want only every-order's run", small.Started)
	}
	if len(large.Started) != 2 {
		t.Fatalf("the large order started %v, want one run of each workflow (two triggers of every-order match: still one run)", large.Started)
	}
	e.drain()
	for _, id := range large.Started {
		r := e.run(id)
		if r.Status != backend.RunCompleted {
			t.Fatalf("run %s: %s", id, r.Status)
		}
		if r.IdempotencyKey == nil || *r.IdempotencyKey != backend.EventRunIdempotencyKey(large.ID, r.WorkflowName) {
			t.Errorf("run %s idempotency key %v", id, r.IdempotencyKey)
		}
		if r.ConcurrencyKey == nil || *r.ConcurrencyKey != "tenant-a" {
			t.Errorf("run %s concurrency key %v, want the event's key", id, r.ConcurrencyKey)
		}
		want := `"o-2"`
		if r.WorkflowName == "every-order" {
			want = `"` + large.ID + `"`
		}
		if string(r.Output) != want {
			t.Errorf("run %s of %s output %s, want %s", id, r.WorkflowName, r.Output, want)
		}
	}
	ev, err := e.client.GetEvent(e.ctx, large.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Effects) != 2 || ev.Effects[0].Kind != backend.EffectStarted {
		t.Fatalf("effects %+v", ev.Effects)
	}
	ts, err := e.client.ListEventTriggers(e.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 {
		t.Fatalf("stored triggers %+v", ts)
	}
}

func TestAConditionThatFailsAtRunTimeIsNoMatchRecordedOnTheEvent(t *testing.T) {
	e := newEnv(t)
	e.register(ow.Define(ow.Spec{Name: "coupon", Triggers: []ow.EventTrigger{{Event: "order.created", If: "event.data.coupon == 'FREE'"}}},
		func(ctx ow.Context, in triggeredInput) (string, error) { return "", nil }))
	e.tick()
	pub, err := e.client.PublishEvent(e.ctx, "order.created", order{OrderID: "o-1"}, ow.PublishOptions{})
	if err != nil {
		t.Fatalf("a runtime CEL error failed the publish: %v", err)
	}
	if len(pub.Started) != 0 {
		t.Fatalf("started %v", pub.Started)
	}
	ev, err := e.client.GetEvent(e.ctx, pub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Effects) != 1 || ev.Effects[0].Kind != backend.EffectError || ev.Effects[0].Message == nil ||
		!strings.Contains(*ev.Effects[0].Message, "coupon") || ev.Effects[0].WorkflowName != "coupon" {
		t.Fatalf("effects %+v, want one error naming the condition", ev.Effects)
	}
	t.Log(*ev.Effects[0].Message)
}

func TestConditionsThatDoNotCompileFailRegistrationNamingWorkflowAndTrigger(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ cond, want string }{
		{"event.data.amount >", "Syntax error"},
		{"'text'", "must be a bool"},
		{"unknown_var == 1", "undeclared reference"},
	} {
		err := e.worker.Register(ow.Define(ow.Spec{Name: "wf-" + c.cond, CancelOn: []ow.EventTrigger{{Event: "x"}, {Event: "order.created", If: c.cond}}},
			func(ctx ow.Context, in int) (int, error) { return 0, nil }))
		if err == nil || !strings.Contains(err.Error(), "wf-"+c.cond) || !strings.Contains(err.Error(), "CancelOn[1]") ||
			!strings.Contains(err.Error(), "order.created") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("register with condition %q: %v, want an error naming the workflow, CancelOn[1], the event and %q", c.cond, err, c.want)
		}
	}
}

func TestCancelOnCancelsAParkedRunAndARunningRunBetweenStepsButNotANonMatchingRun(t *testing.T) {
	e := newEnv(t)
	inStep := make(chan struct{}, 1)
	release := make(chan struct{})
	var calls counter
	wf := ow.Define(ow.Spec{Name: "fulfil", CancelOn: []ow.EventTrigger{{Event: "order.cancelled", If: "event.data.orderId == input.orderId"}}},
		func(ctx ow.Context, in order) (int, error) {
			if in.OrderID == "o-running" {
				if _, err := ow.Run(ctx, "first", func(context.Context) (int, error) {
					inStep <- struct{}{}
					<-release // the step finishes whatever happens meanwhile
					return 1, nil
				}); err != nil {
					return 0, err
				}
				return ow.Run(ctx, "second", func(context.Context) (int, error) {
					calls.inc("second") // a step that must never start
					return 2, nil
				})
			}
			if err := ow.Sleep(ctx, "nap", time.Minute); err != nil {
				return 0, err
			}
			calls.inc("after-sleep:" + in.OrderID)
			return 1, nil
		})
	e.register(wf)
	parked := start(e, wf, order{OrderID: "o-parked"})
	other := start(e, wf, order{OrderID: "o-other"})
	e.tick() // both park
	running := start(e, wf, order{OrderID: "o-running"})
	done := make(chan struct{})
	go func() { defer close(done); e.tick() }()
	<-inStep

	pub, err := e.client.PublishEvents(e.ctx, []ow.Event{
		{Name: "order.cancelled", Data: order{OrderID: "o-parked"}},
		{Name: "order.cancelled", Data: order{OrderID: "o-running"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	<-done
	e.clock.Advance(time.Hour)
	e.drain()
	e.requireStatus(parked, backend.RunCanceled)
	e.requireStatus(running, backend.RunCanceled)
	e.requireStatus(other, backend.RunCompleted)
	if calls.get("second") != 0 || calls.get("after-sleep:o-parked") != 0 {
		t.Fatal("a canceled run went on")
	}
	for _, s := range e.steps(running) {
		if s.StepName == "second" {
			t.Fatalf("step second was recorded (%s) for a canceled run", s.Status)
		}
	}
	if len(pub[0].Canceled) != 1 || pub[0].Canceled[0] != parked || len(pub[1].Canceled) != 1 || pub[1].Canceled[0] != running {
		t.Fatalf("canceled = %v, %v", pub[0].Canceled, pub[1].Canceled)
	}
	ev, err := e.client.GetEvent(e.ctx, pub[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Effects) != 1 || ev.Effects[0].Kind != backend.EffectCanceled || *ev.Effects[0].WorkflowRunID != parked {
		t.Fatalf("effects %+v", ev.Effects)
	}
}

func TestRetentionPrunesEventsOlderThanTheDefaultPeriodWithWhatTheyDid(t *testing.T) {
	e := newEnv(t)
	e.register(ow.Define(ow.Spec{Name: "on-ping", Triggers: []ow.EventTrigger{{Event: "ping"}}}, func(ctx ow.Context, in triggeredInput) (int, error) { return 1, nil }))
	e.tick()
	var old []string
	for i := 0; i < 3; i++ {
		p, err := e.client.PublishEvent(e.ctx, "ping", i, ow.PublishOptions{})
		if err != nil {
			t.Fatal(err)
		}
		old = append(old, p.ID)
	}
	e.clock.Advance(48 * time.Hour)
	kept, err := e.client.PublishEvent(e.ctx, "ping", 9, ow.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.client.PruneRuns(e.ctx, ow.Retention{Default: 24 * time.Hour}, ow.PruneOptions{BatchSize: 2, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if rep.EventsDeleted != 3 {
		t.Fatalf("deleted %d events, want the 3 older than a day", rep.EventsDeleted)
	}
	for _, id := range old {
		if _, err := e.client.GetEvent(e.ctx, id); !errors.Is(err, backend.ErrEventNotFound) {
			t.Errorf("event %s: %v, want pruned", id, err)
		}
	}
	ev, err := e.client.GetEvent(e.ctx, kept.ID)
	if err != nil || len(ev.Effects) != 1 {
		t.Fatalf("the recent event: %+v, %v", ev, err)
	}
}

func TestABatchIsStoredInItsOrderWithKeyedAndUnkeyedEventsMixed(t *testing.T) {
	e := newEnv(t)
	out, err := e.client.PublishEvents(e.ctx, []ow.Event{{Name: "a"}, {Name: "b", IdempotencyKey: "kb"}, {Name: "c"}, {Name: "d", IdempotencyKey: "kb"}})
	if err != nil {
		t.Fatal(err)
	}
	if !out[3].Duplicate || out[3].ID != out[1].ID {
		t.Fatalf("the second use of a key in one batch: %+v", out[3])
	}
	page, err := e.client.ListEvents(e.ctx, backend.ListEventsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ev := range page.Data {
		names = append(names, ev.Name)
	}
	if strings.Join(names, "") != "cba" {
		t.Fatalf("newest first: %v, want c b a", names)
	}
}

func TestConcurrentBatchesOfTheSameKeysInOppositeOrdersStoreEachEventOnce(t *testing.T) {
	e := newEnv(t)
	const n = 40
	up, down := make([]ow.Event, n), make([]ow.Event, n)
	for i := 0; i < n; i++ {
		up[i] = ow.Event{Name: "k", IdempotencyKey: fmt.Sprint(i)}
		down[n-1-i] = up[i]
	}
	errs := make(chan error, 2)
	for _, batch := range [][]ow.Event{up, down} {
		go func() { _, err := e.client.PublishEvents(e.ctx, batch); errs <- err }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a batch failed (a deadlock between the keys' locks?): %v", err)
		}
	}
	page, err := e.client.ListEvents(e.ctx, backend.ListEventsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != n {
		t.Fatalf("%d events stored, want %d", len(page.Data), n)
	}
}

func TestATriggeredRunOfASingletonWorkflowIsASingletonStartDecidedInThePublish(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "one-report", Singleton: &ow.Singleton{Key: "report", Mode: ow.SingletonSkip},
		Triggers: []ow.EventTrigger{{Event: "report.asked"}}},
		func(ctx ow.Context, in triggeredInput) (string, error) { return in.ID, nil })
	e.register(wf)
	e.tick() // stores the triggers with the workflow's singleton

	ts, err := e.client.ListEventTriggers(e.ctx, "one-report")
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].Singleton == nil || *ts[0].Singleton != (ow.Singleton{Key: "report", Mode: ow.SingletonSkip}) || ts[0].Batch != nil {
		t.Fatalf("stored triggers %+v, want one carrying the workflow's singleton", ts)
	}
	first, err := e.client.PublishEvent(e.ctx, "report.asked", nil, ow.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.client.PublishEvent(e.ctx, "report.asked", nil, ow.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Started) != 1 || len(second.Started) != 0 {
		t.Fatalf("started %v then %v, want one run, then none (the key has an active run)", first.Started, second.Started)
	}
	ev, err := e.client.GetEvent(e.ctx, second.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Effects) != 1 || ev.Effects[0].Kind != backend.EffectSkipped || ev.Effects[0].WorkflowRunID == nil || *ev.Effects[0].WorkflowRunID != first.Started[0] {
		t.Fatalf("the second event's effects %+v, want skipped naming the active run %s", ev.Effects, first.Started[0])
	}
	e.drain()
	if got := output[string](e, first.Started[0]); got != first.ID {
		t.Fatalf("the run's output %q, want its event %s", got, first.ID)
	}
	third, err := e.client.PublishEvent(e.ctx, "report.asked", nil, ow.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(third.Started) != 1 {
		t.Fatalf("after the run ended, an event started %v, want a new run", third.Started)
	}
}

func TestATriggerOfABatchedWorkflowAppendsTheEventToTheBatchOfItsKey(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "order-digest", Batch: &ow.BatchOptions{MaxSize: 3, Timeout: time.Hour},
		Triggers: []ow.EventTrigger{{Event: "order.created", If: "event.data.amount > 0.0"}}},
		func(ctx ow.Context, in []triggeredInput) ([]string, error) {
			var ids []string
			for _, x := range in {
				ids = append(ids, x.Data.OrderID)
			}
			return ids, nil
		})
	e.register(wf)
	e.tick()

	var last *backend.PublishedEvent
	for i, key := range []string{"a", "b", "a", "a", "a"} {
		var err error
		if last, err = e.client.PublishEvent(e.ctx, "order.created", order{OrderID: fmt.Sprintf("o-%d", i), Amount: 1}, ow.PublishOptions{Key: key}); err != nil {
			t.Fatal(err)
		}
		if len(last.Started) != 0 {
			t.Fatalf("event %d started %v: a batched trigger starts no run of its own", i, last.Started)
		}
	}
	// Key "a" got items 0, 2, 3 (flushed by the third) and 4 (open); "b" got 1 (open).
	batches, err := e.b.(backend.BatchStore).ListOpenBatches(e.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]int{}
	for _, b := range batches {
		open[b.Key] = b.Count
	}
	if len(open) != 2 || open["a"] != 1 || open["b"] != 1 {
		t.Fatalf("open batches %+v, want one item each of keys a and b", batches)
	}
	page, err := e.client.ListEvents(e.ctx, backend.ListEventsParams{Name: "order.created", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	var flushed []string
	for _, ev := range page.Data {
		full, err := e.client.GetEvent(e.ctx, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(full.Effects) != 1 || full.Effects[0].Kind != backend.EffectBatched {
			t.Fatalf("event %s effects %+v, want one batched", ev.ID, full.Effects)
		}
		if id := full.Effects[0].WorkflowRunID; id != nil {
			flushed = append(flushed, *id)
		}
	}
	if len(flushed) != 1 {
		t.Fatalf("runs flushed %v, want one (key a's third event)", flushed)
	}
	e.drain()
	if got := output[[]string](e, flushed[0]); strings.Join(got, ",") != "o-0,o-2,o-3" {
		t.Fatalf("the batch's run got %v, want key a's first three events in order", got)
	}
}

func TestATriggerDeclarationCannotBeBatchedAndSingletonAtOnce(t *testing.T) {
	wf := ow.Define(ow.Spec{Name: "both", Singleton: &ow.Singleton{Mode: ow.SingletonSkip}, Batch: &ow.BatchOptions{MaxSize: 2, Timeout: time.Minute},
		Triggers: []ow.EventTrigger{{Event: "x"}}},
		func(ctx ow.Context, in []triggeredInput) (int, error) { return len(in), nil })
	e := newEnv(t)
	err := e.worker.Register(wf)
	if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "both") {
		t.Fatalf("register = %v, want an invalid-argument error naming the workflow", err)
	}
	err = backend.ValidateEventTriggers("w", []backend.EventTrigger{{Kind: backend.TriggerCancel, EventName: "x", Singleton: &backend.Singleton{Mode: backend.SingletonSkip}}})
	if !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("a cancelOn declaration with a singleton: %v, want refused", err)
	}
}

// countingMatcher evaluates conditions as the client's matcher does
// (package eventexpr), counting the evaluations.
type countingMatcher struct{ n atomic.Int64 }

func (m *countingMatcher) Match(ctx context.Context, condition string, ev *backend.EventRecord, input json.RawMessage) (bool, error) {
	m.n.Add(1)
	x, err := eventexpr.Compile(condition)
	if err != nil {
		return false, err
	}
	xe, err := backend.ExprEvent(ev)
	if err != nil {
		return false, err
	}
	var in any
	if len(input) > 0 {
		if err := json.Unmarshal(input, &in); err != nil {
			return false, err
		}
	}
	return x.Match(ctx, xe, in)
}

func TestCancelOnWithAnInputEqualityEvaluatesOnlyTheRunsWhoseInputHoldsTheEventsValue(t *testing.T) {
	e := newEnv(t)
	es := e.b.(backend.EventStore)
	const runs = 300
	ps := make([]backend.CreateWorkflowRunParams, runs)
	later := time.Now().Add(time.Hour) // not claimed meanwhile
	for i := range ps {
		in := fmt.Sprintf(`{"orderId":"o-%d","n":%d}`, i, i)
		ps[i] = backend.CreateWorkflowRunParams{WorkflowName: "orders", Input: json.RawMessage(in), AvailableAt: &later}
	}
	created, err := e.b.CreateWorkflowRuns(e.ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	declare := func(condition string) {
		t.Helper()
		if _, err := es.PutEventTriggers(e.ctx, "orders", []backend.EventTrigger{{Kind: backend.TriggerCancel, EventName: "order.canceled", Condition: condition}}, "test"); err != nil {
			t.Fatal(err)
		}
	}
	publish := func(data string) (*backend.PublishedEvent, int64) {
		t.Helper()
		m := &countingMatcher{}
		out, err := es.PublishEvents(e.ctx, backend.PublishEventsParams{Events: []backend.PublishEventParams{{Name: "order.canceled", Data: json.RawMessage(data)}}, Matcher: m})
		if err != nil {
			t.Fatal(err)
		}
		return &out[0], m.n.Load()
	}

	declare(`event.data.orderId == input.orderId && event.data.reason != ""`)
	out, evaluated := publish(`{"orderId":"o-7","reason":"fraud"}`)
	if len(out.Canceled) != 1 || out.Canceled[0] != created[7].ID || evaluated != 1 {
		t.Fatalf("canceled %v after %d evaluations, want run 7 (%s) after 1: the runs are looked up by their input", out.Canceled, evaluated, created[7].ID)
	}
	declare(`input.n == event.data.n`)
	out, evaluated = publish(`{"n":9.0}`)
	if len(out.Canceled) != 1 || out.Canceled[0] != created[9].ID || evaluated != 1 {
		t.Fatalf("by number: canceled %v after %d evaluations, want run 9 after 1 (9.0 == 9)", out.Canceled, evaluated)
	}
	out, evaluated = publish(`{"n":"9"}`)
	if len(out.Canceled) != 0 || evaluated != 0 {
		t.Fatalf("a string for a number: canceled %v after %d evaluations, want none after 0", out.Canceled, evaluated)
	}
	// Without an input equality every unfinished run is evaluated (up to
	// backend.MaxUnindexedCancelRunsPerPublish).
	declare(`input.orderId.endsWith(event.data.suffix)`)
	out, evaluated = publish(`{"suffix":"-11"}`)
	if len(out.Canceled) != 1 || out.Canceled[0] != created[11].ID || evaluated != runs-2 {
		t.Fatalf("no equality: canceled %v after %d evaluations, want run 11 after %d (the unfinished runs)", out.Canceled, evaluated, runs-2)
	}
}
