package openworkflow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// A burst of debounced starts through the Client, on the fake clock: every
// start returns the handle of one run, which a worker executes once, with
// the last start's input, a period after that start.
func TestDebouncedStartsRunOncePerBurstWithTheLastInput(t *testing.T) {
	e := newEnv(t)
	var got []int
	wf := ow.Define(ow.Spec{Name: "debounced"}, func(ctx ow.Context, n int) (int, error) {
		got = append(got, n)
		return n, nil
	})
	e.register(wf)
	d := ow.Debounce{Key: "customer-1", Period: 2 * time.Second, MaxDelay: time.Minute}
	var first string
	for i := 1; i <= 5; i++ {
		h, err := wf.Start(e.ctx, e.client, i, ow.WithDebounce(d))
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if i == 1 {
			first = h.ID
		} else if h.ID != first || !h.Debounced {
			t.Fatalf("start %d: run %s (debounced %v), want the burst's run %s", i, h.ID, h.Debounced, first)
		}
		if n := e.tick(); n != 0 {
			t.Fatalf("a worker claimed %d runs during the burst", n)
		}
		e.clock.Advance(time.Second)
	}
	e.clock.Advance(time.Second) // two seconds after the last start
	e.drain()
	if r := e.requireStatus(first, backend.RunCompleted); string(r.Output) != "5" || len(got) != 1 {
		t.Fatalf("output %s, executions %v; want one execution with input 5", r.Output, got)
	}
	// A new burst after the run started makes a new run.
	h, err := wf.Start(e.ctx, e.client, 6, ow.WithDebounce(d))
	if err != nil || h.ID == first || h.Debounced {
		t.Fatalf("start after the run: %v, %v", h, err)
	}
}

func TestDebounceRefusesBadStarts(t *testing.T) {
	e := newEnv(t)
	wf := ow.Declare[int, int](ow.Spec{Name: "debounced"})
	d := ow.Debounce{Key: "k", Period: time.Second}
	for name, opts := range map[string][]ow.StartOption{
		"idempotency key": {ow.WithDebounce(d), ow.WithIdempotencyKey("i")},
		"start time":      {ow.WithDebounce(d), ow.WithStartAt(e.clock.Now().Add(time.Hour))},
		"max delay short": {ow.WithDebounce(ow.Debounce{Key: "k", Period: time.Minute, MaxDelay: time.Second})},
		"empty key":       {ow.WithDebounce(ow.Debounce{Period: time.Second})},
		"singleton":       {ow.WithDebounce(d), ow.WithSingleton("s", backend.SingletonSkip)},
	} {
		if _, err := wf.Start(e.ctx, e.client, 1, opts...); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := wf.StartMany(e.ctx, e.client, []int{1, 2}, ow.WithDebounce(d)); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Errorf("StartMany with debounce: %v, want ErrInvalidArgument", err)
	}
	page, err := e.client.ListRuns(e.ctx, backend.ListWorkflowRunsParams{})
	if err != nil || len(page.Data) != 0 {
		t.Fatalf("runs after refused starts: %d, %v", len(page.Data), err)
	}
}

// Batching end to end: a workflow declaring Spec.Batch gets the items of a
// full batch as its input, and a started worker flushes a batch whose
// timeout passed on the fake clock.
func TestBatchedWorkflowGetsItsItems(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "batched", Batch: &ow.BatchOptions{MaxSize: 3, Timeout: time.Minute}},
		func(ctx ow.Context, items []string) (int, error) { return len(items), nil })
	for _, it := range []string{"a", "b", "c", "d"} {
		if _, err := ow.EnqueueBatchItem(e.ctx, e.client, wf, "k", it); err != nil {
			t.Fatal(err)
		}
	}
	page, err := e.client.ListRuns(e.ctx, backend.ListWorkflowRunsParams{WorkflowName: "batched"})
	if err != nil || len(page.Data) != 1 || string(page.Data[0].Input) != `["a", "b", "c"]` && string(page.Data[0].Input) != `["a","b","c"]` {
		t.Fatalf("runs after 4 items: %+v, %v; want one run of a, b, c", page, err)
	}
	// The worker's batch loop flushes "d" once its timeout passed.
	ctx := startWorker(t, e.b, ow.WorkerOptions{Now: e.clock.Now, MaxPollInterval: 50 * time.Millisecond}, wf)
	e.clock.Advance(time.Minute)
	for {
		page, err = e.client.ListRuns(ctx, backend.ListWorkflowRunsParams{WorkflowName: "batched", Status: backend.RunCompleted})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the timed-out batch was not flushed and run: %d runs completed", len(page.Data))
		case <-time.After(20 * time.Millisecond):
		}
	}
	outs := map[string]bool{string(page.Data[0].Output): true, string(page.Data[1].Output): true}
	if !outs["1"] || !outs["3"] {
		t.Fatalf("outputs %v, want 3 and 1", outs)
	}
	if _, err := e.client.EnqueueBatchItem(context.Background(), "batched", "", "", "x", ow.BatchOptions{MaxSize: 1, Timeout: time.Minute}); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("max size 1: %v, want ErrInvalidArgument", err)
	}
}
