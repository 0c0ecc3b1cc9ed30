package openworkflow_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// A limited workflow's runs wait for admission and hold their slot from
// admission to their end, sleeps included; another key is not held up.
func TestLimitedRunsHoldTheirSlotFromAdmissionToTheirEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var executed counter
	wf := ow.Define(ow.Spec{Name: "sync-account", Limits: ow.Limits{ConcurrencyPerKey: 2}}, func(ctx ow.Context, customer string) (string, error) {
		executed.inc(ctx.RunInfo().ID)
		if err := ow.Sleep(ctx, "pause", time.Minute); err != nil {
			return "", err
		}
		return ow.Run(ctx, "sync", func(context.Context) (string, error) { return "synced " + customer, nil })
	})
	e.register(wf)
	if n := e.tick(); n != 0 { // the first tick stores the limits
		t.Fatalf("claimed %d runs with none started", n)
	}
	var a []string
	for range 4 {
		a = append(a, start(e, wf, "a", ow.WithConcurrencyKey("a")))
		e.clock.Advance(time.Millisecond)
	}
	b := start(e, wf, "b", ow.WithConcurrencyKey("b"))
	if r := e.run(a[0]); r.QueuedAt == nil || r.AvailableAt != nil {
		t.Fatalf("a run of the limited workflow is not waiting for admission: queued_at %v available_at %v", r.QueuedAt, r.AvailableAt)
	}

	if n := e.tick(); n != 3 {
		t.Fatalf("first tick claimed %d runs, want 3 (two of key a, one of key b)", n)
	}
	for _, id := range []string{a[0], a[1], b} {
		if r := e.run(id); r.AdmittedAt == nil || r.WorkerID != nil {
			t.Fatalf("run %s: admitted_at %v worker %v, want admitted and parked in its sleep", id, r.AdmittedAt, r.WorkerID)
		}
	}
	if n := e.tick(); n != 0 {
		t.Fatalf("claimed %d runs while key a's two slots are held by sleeping runs", n)
	}
	e.clock.Advance(time.Minute)
	e.drain()
	for _, id := range []string{a[0], a[1], b} {
		if got := output[string](e, id); got == "" {
			t.Errorf("run %s output empty", id)
		}
	}
	if executed.get(a[2]) != 1 || executed.get(a[3]) != 1 {
		t.Fatalf("a's third and fourth runs executed %d and %d times once slots freed, want 1 each", executed.get(a[2]), executed.get(a[3]))
	}
	e.clock.Advance(time.Minute)
	e.drain()
	e.requireStatus(a[3], backend.RunCompleted)
}

// PerWorker bounds the runs of a workflow one started worker executes at
// once, with free slots to spare.
func TestPerWorkerLimitBoundsOneWorkersExecutions(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend.Backend) {
		var running, peak atomic.Int32
		release := make(chan struct{})
		wf := ow.Define(ow.Spec{Name: "heavy", Limits: ow.Limits{PerWorker: 2}}, func(ctx ow.Context, _ int) (int, error) {
			return ow.Run(ctx, "work", func(ctx context.Context) (int, error) {
				n := running.Add(1)
				defer running.Add(-1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				select {
				case <-release:
				case <-ctx.Done():
				}
				return 1, nil
			})
		})
		free := ow.Define(ow.Spec{Name: "light"}, func(ctx ow.Context, i int) (int, error) { return i, nil })
		ctx := startWorker(t, b, ow.WorkerOptions{Concurrency: 8, MaxPollInterval: 50 * time.Millisecond}, wf, free)
		c := ow.NewClient(b)
		var ids []string
		for i := range 6 {
			h, err := wf.Start(ctx, c, i)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, h.ID)
		}
		h, err := free.Start(ctx, c, 7)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := h.Result(ctx); err != nil || got != 7 {
			t.Fatalf("the unlimited workflow's run: %v, %v (held up by the limited one?)", got, err)
		}
		for running.Load() < 2 {
			select {
			case <-ctx.Done():
				t.Fatalf("two runs never executed at once: %d", running.Load())
			case <-time.After(5 * time.Millisecond):
			}
		}
		time.Sleep(100 * time.Millisecond) // two poll intervals: a third would have been claimed by now
		if n := running.Load(); n != 2 {
			t.Fatalf("%d runs of a workflow limited to 2 per worker executing at once", n)
		}
		close(release)
		for _, id := range ids {
			if r := waitTerminal(t, b, id); r.Status != backend.RunCompleted {
				t.Fatalf("run %s: %s", id, r.Status)
			}
		}
		if p := peak.Load(); p != 2 {
			t.Errorf("peak of %d runs executing at once, want 2", p)
		}
	})
}

// WithPriority orders claims: higher first, FIFO within a priority.
func TestPrioritiesOrderClaims(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *ow.WorkerOptions) { o.Concurrency = 1 })
	var mu sync.Mutex
	var order []string
	wf := ow.Define(ow.Spec{Name: "job"}, func(ctx ow.Context, name string) (string, error) {
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
		return name, nil
	})
	e.register(wf)
	for _, p := range []struct {
		name     string
		priority int
	}{{"normal-1", 0}, {"urgent-1", 5}, {"later", -3}, {"urgent-2", 5}, {"normal-2", 0}, {"critical", 50}} {
		start(e, wf, p.name, ow.WithPriority(p.priority))
		e.clock.Advance(time.Millisecond)
	}
	e.drain()
	want := []string{"critical", "urgent-1", "urgent-2", "normal-1", "normal-2", "later"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("executed %v, want %v", order, want)
	}
}

// Limits are checked when the worker starts, and stored limits outlive a
// registration that declares none until removed.
func TestWorkerLimitsAreCheckedStoredAndRemovedOnlyOnPurpose(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend.Backend) {
		body := func(ctx ow.Context, _ int) (int, error) { return 1, nil }
		for _, bad := range []ow.Limits{{Concurrency: -1}, {RateLimit: 3}, {PerWorker: -2}} {
			w := ow.NewWorker(b, ow.WorkerOptions{})
			if err := w.Register(ow.Define(ow.Spec{Name: "bad", Limits: bad}, body)); err != nil {
				t.Fatal(err)
			}
			if err := w.Start(t.Context()); !errors.Is(err, backend.ErrInvalidArgument) {
				t.Errorf("Start with limits %+v: %v, want an error wrapping ErrInvalidArgument", bad, err)
				if err == nil {
					_ = w.Stop(t.Context())
				}
			}
		}
		w := ow.NewWorker(b, ow.WorkerOptions{})
		if err := w.Register(ow.Define(ow.Spec{Name: "two", Version: "1", Limits: ow.Limits{Concurrency: 1}}, body),
			ow.Define(ow.Spec{Name: "two", Version: "2", Limits: ow.Limits{Concurrency: 2}}, body)); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(t.Context()); err == nil {
			_ = w.Stop(t.Context())
			t.Error("Start with two versions of one workflow declaring different limits succeeded")
		}

		c := ow.NewClient(b)
		limited := ow.Define(ow.Spec{Name: "limited", Limits: ow.Limits{Concurrency: 3}}, body)
		ctx := startWorker(t, b, ow.WorkerOptions{ID: "first"}, limited)
		got, err := c.ListWorkflowLimits(ctx)
		if err != nil || len(got) != 1 || got[0].WorkflowName != "limited" || got[0].Concurrency != 3 {
			t.Fatalf("stored limits %+v, %v", got, err)
		}
		// A worker of the same workflow declaring no limits keeps and
		// enforces them: a run started now waits for admission, and the
		// worker admits it.
		startWorker(t, b, ow.WorkerOptions{ID: "second"}, ow.Define(ow.Spec{Name: "limited"}, body))
		if got, _ := c.ListWorkflowLimits(ctx); len(got) != 1 {
			t.Fatalf("a worker declaring no limits removed the stored ones: %+v", got)
		}
		h, err := limited.Start(ctx, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		if h.Run.QueuedAt == nil {
			t.Error("a run started while limits are stored does not wait for admission")
		}
		if r := waitTerminal(t, b, h.ID); r.Status != backend.RunCompleted || r.AdmittedAt == nil {
			t.Fatalf("run: %s, admitted at %v", r.Status, r.AdmittedAt)
		}
		if _, err := c.DeleteWorkflowLimits(ctx, "limited"); err != nil {
			t.Fatal(err)
		}
		h, err = limited.Start(ctx, c, 0)
		if err != nil || h.Run.QueuedAt != nil {
			t.Fatalf("after the limits were removed a run was started %+v, %v; want an ordinary run", h, err)
		}
	})
}
