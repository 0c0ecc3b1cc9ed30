package backendtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// subscribe subscribes until the test ends, skipping the test when the
// backend cannot notify.
func subscribe(t *testing.T, b backend.Backend) <-chan backend.Event {
	t.Helper()
	ch, err := b.Subscribe(t.Context())
	if errors.Is(err, backend.ErrNotSupported) {
		t.Skipf("Subscribe returned ErrNotSupported: this backend publishes no wake-up events (%v)", err)
	}
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if ch == nil {
		t.Fatal("Subscribe returned a nil channel and no error")
	}
	return ch
}

// awaitEvent waits for an event matching want, skipping others.
func awaitEvent(t testing.TB, ch <-chan backend.Event, what string, want func(backend.Event) bool) {
	t.Helper()
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("subscription closed while waiting for %s", what)
			}
			if want(e) {
				return
			}
		case <-timeout.C:
			t.Fatalf("no %s within %v", what, waitTimeout)
		}
	}
}

func isWork(e backend.Event) bool { return e.Kind == backend.EventWorkAvailable }

func isFinished(runID string) func(backend.Event) bool {
	return func(e backend.Event) bool { return e.Kind == backend.EventRunFinished && e.WorkflowRunID == runID }
}

func testSubscribe(t *testing.T, s *suite) {
	t.Run("announces work available when a run is created", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ch := subscribe(t, b)
		createRun(t, b, backend.CreateWorkflowRunParams{})
		awaitEvent(t, ch, "EventWorkAvailable after a create", isWork)
	})

	t.Run("announces work available when a parked run is woken by a signal", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wt := startWaiter(t, b, "approve", false)
		ch := subscribe(t, b)
		requireIDs(t, "runs delivered to", sendSignal(t, b, "approve", `1`), []string{wt.run.ID})
		awaitEvent(t, ch, "EventWorkAvailable after a wake-up", isWork)
	})

	t.Run("announces a run's end when it completes", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		ch := subscribe(t, b)
		completeRun(t, b, r.ID, w, `1`)
		awaitEvent(t, ch, "EventRunFinished for the completed run", isFinished(r.ID))
	})

	t.Run("announces a run's end when it is canceled", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		r := createRun(t, b, backend.CreateWorkflowRunParams{})
		ch := subscribe(t, b)
		cancelRun(t, b, r.ID)
		awaitEvent(t, ch, "EventRunFinished for the canceled run", isFinished(r.ID))
	})

	t.Run("announces a run's end when it fails for good", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		ch := subscribe(t, b)
		failRun(t, b, r.ID, w, `{"message":"x"}`, backend.NoRetryPolicy)
		awaitEvent(t, ch, "EventRunFinished for the failed run", isFinished(r.ID))
	})

	t.Run("closes the channel when the context is done", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		subscribe(t, b) // skips if unsupported
		ctx, cancel := context.WithCancel(t.Context())
		ch, err := b.Subscribe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		timeout := time.NewTimer(waitTimeout)
		defer timeout.Stop()
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					return
				}
			case <-timeout.C:
				t.Fatalf("channel still open %v after its context was canceled", waitTimeout)
			}
		}
	})
}
