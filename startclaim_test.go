package openworkflow_test

import (
	"context"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/testhooks"
)

// finishReadCounter is a readCounter that keeps the backend's memory of
// finished runs (backend.FinishRecorder), which Result uses for a run its
// start claimed here.
type finishReadCounter struct{ *readCounter }

func (r finishReadCounter) RecentFinish(id string) (backend.Event, bool) {
	return r.Backend.(backend.FinishRecorder).RecentFinish(id)
}

// startIdleWorker starts a worker on b with wf registered and waits until
// it takes its process's starts (its first claim found nothing waiting).
func startIdleWorker(t *testing.T, b backend.Backend, wf ow.Definition) context.Context {
	t.Helper()
	w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: 2})
	if err := w.Register(wf); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Errorf("stop worker: %v", err)
		}
	})
	for !testhooks.Idle(w) {
		select {
		case <-ctx.Done():
			t.Fatal("the worker did not become idle")
		case <-time.After(5 * time.Millisecond):
		}
	}
	return ctx
}

func TestAStartOnAnIdleWorkersBackendClaimsItsRunAndResultReadsNothing(t *testing.T) {
	b := openTestBackend(t, nil)
	reads := finishReadCounter{&readCounter{Backend: b}}
	wf := ow.Define(ow.Spec{Name: "claimed-at-start"}, func(ctx ow.Context, in int) (int, error) {
		return ow.Run(ctx, "inc", func(context.Context) (int, error) { return in + 1, nil })
	})
	ctx := startIdleWorker(t, reads, wf)
	c := ow.NewClient(reads)

	t.Run("the run is claimed by its insert and its result comes from the completion's event", func(t *testing.T) {
		h, err := wf.Start(ctx, c, 41)
		if err != nil {
			t.Fatal(err)
		}
		if h.Run.Status != backend.RunRunning || h.Run.Attempts != 1 || h.Run.StartedAt == nil || !h.Run.StartedAt.Equal(h.Run.CreatedAt) {
			t.Fatalf("started run: status %s, attempts %d, created %v, started %v: want running, attempt 1, started at its creation",
				h.Run.Status, h.Run.Attempts, h.Run.CreatedAt, h.Run.StartedAt)
		}
		reads.mu.Lock()
		reads.reads = 0
		reads.mu.Unlock()
		got, err := h.Result(ctx)
		if err != nil || got != 42 {
			t.Fatalf("Result = %d, %v; want 42", got, err)
		}
		reads.mu.Lock()
		defer reads.mu.Unlock()
		if reads.reads != 0 {
			t.Errorf("Result read the run %d times; want none", reads.reads)
		}
	})

	t.Run("a Result called after the run ended learns it from the backend's memory", func(t *testing.T) {
		h, err := wf.Start(ctx, c, 1)
		if err != nil {
			t.Fatal(err)
		}
		for {
			run, err := b.GetWorkflowRun(ctx, h.ID) // not counted
			if err != nil {
				t.Fatal(err)
			}
			if run.Status == backend.RunCompleted {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatal("the run did not complete")
			case <-time.After(5 * time.Millisecond):
			}
		}
		reads.mu.Lock()
		reads.reads = 0
		reads.mu.Unlock()
		began := time.Now()
		got, err := h.Result(ctx)
		if err != nil || got != 2 {
			t.Fatalf("Result = %d, %v; want 2", got, err)
		}
		if took := time.Since(began); took > time.Second {
			t.Errorf("Result took %v: it waited for its fallback poll instead of finding the end remembered", took)
		}
		reads.mu.Lock()
		defer reads.mu.Unlock()
		if reads.reads != 0 {
			t.Errorf("Result read the run %d times; want none", reads.reads)
		}
	})
}
