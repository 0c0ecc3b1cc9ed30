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
		failRun(t, b, r.ID, w, `{"message":"x"}`)
		awaitEvent(t, ch, "EventRunFinished for the failed run", isFinished(r.ID))
	})

	t.Run("announces the pause of a run a worker holds, naming the run and the worker, and of no other run", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		held := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		waiting := createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: ptr(time.Now().Add(farFuture))})
		ch := subscribe(t, b)
		pauseRun(t, b, waiting.ID, "")
		pauseRun(t, b, held.ID, "")
		// The waiting run's pause, first, announces nothing paused: no
		// worker executes it.
		awaitOnly(t, ch, "EventRunPaused for the held run", func(e backend.Event) bool {
			return e.Kind == backend.EventRunPaused && e.WorkflowRunID == held.ID && e.WorkerID == w
		}, func(e backend.Event) bool { return e.Kind == backend.EventRunPaused })
		// A pause of a paused run changes nothing and announces nothing:
		// the cancel's event comes first.
		pauseRun(t, b, held.ID, "again")
		cancelRun(t, b, waiting.ID)
		awaitOnly(t, ch, "EventRunFinished for the canceled run", isFinished(waiting.ID),
			func(e backend.Event) bool { return e.Kind == backend.EventRunPaused })
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
	t.Run("announces a run's end when the claim's deadline sweep fails it", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		deadline := clk.Now().Add(time.Minute)
		r := startRun(t, b, newWorkerID(), backend.CreateWorkflowRunParams{DeadlineAt: &deadline})
		ch := subscribe(t, b)
		clk.Set(deadline.Add(time.Millisecond))
		requireNothingClaimable(t, b)
		awaitEvent(t, ch, "EventRunFinished for the run swept past its deadline", isFinished(r.ID))
	})

	t.Run("announces work available when a parked parent is woken by its child", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wp := newWorkerID()
		f := startFamily(t, b, wp)
		park(t, b, f.parent.ID, wp, time.Now().Add(farFuture))
		ch := subscribe(t, b)
		cancelRun(t, b, f.child.ID)
		awaitEvent(t, ch, "EventWorkAvailable after the parent's wake-up", isWork)
	})

	t.Run("announces work available when a park finds its wake-up already arrived", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wp, wc := newWorkerID(), newWorkerID()
		f := startFamily(t, b, wp)
		claimRun(t, b, wc, longLease, f.child.ID)
		completeRun(t, b, f.child.ID, wc, `"done"`)
		ch := subscribe(t, b)
		park(t, b, f.parent.ID, wp, time.Now().Add(farFuture))
		awaitEvent(t, ch, "EventWorkAvailable after a park that woke the run at once", isWork)
	})

	t.Run("announces no work for runs created for later, alone or in a batch, and work for a batch with one run due now", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ch := subscribe(t, b)
		later := time.Now().Add(farFuture)
		if _, err := b.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{
			{WorkflowName: "a", AvailableAt: ptr(later.Add(time.Hour))}, {WorkflowName: "a", AvailableAt: &later}}); err != nil {
			t.Fatal(err)
		}
		delayed := createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: &later})
		// The cancel's event comes after any the creates announced.
		cancelRun(t, b, delayed.ID)
		awaitOnly(t, ch, "EventRunFinished for the canceled run", isFinished(delayed.ID), isWork)
		if _, err := b.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{
			{WorkflowName: "a", AvailableAt: &later}, {WorkflowName: "a"}}); err != nil {
			t.Fatal(err)
		}
		awaitEvent(t, ch, "EventWorkAvailable after a batch with a run due now", isWork)
	})

	t.Run("announces a namespace's events to every backend of that namespace, and to no other", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace()
		client, worker, stranger := s.backendIn(t, ns), s.backendIn(t, ns), s.newBackend(t)
		workerCh, strangerCh := subscribe(t, worker), subscribe(t, stranger)

		// The client starts a run and cancels another; the worker runs the
		// first to its end.
		r := createRun(t, client, backend.CreateWorkflowRunParams{})
		awaitEvent(t, workerCh, "EventWorkAvailable for the client's run", isWork)
		w := newWorkerID()
		claimRun(t, worker, w, longLease, r.ID)
		completeRun(t, worker, r.ID, w, `1`)
		awaitEvent(t, workerCh, "EventRunFinished for the worker's run", isFinished(r.ID))
		canceled := cancelRun(t, client, createRun(t, client, backend.CreateWorkflowRunParams{AvailableAt: ptr(time.Now().Add(farFuture))}).ID)
		awaitEvent(t, workerCh, "EventRunFinished for the client's cancel", isFinished(canceled.ID))

		// The stranger's own events come after any of the namespace's that
		// reached it.
		mine := createRun(t, stranger, backend.CreateWorkflowRunParams{AvailableAt: ptr(time.Now().Add(farFuture))})
		cancelRun(t, stranger, mine.ID)
		awaitOnly(t, strangerCh, "EventRunFinished for the stranger's own run", isFinished(mine.ID), func(e backend.Event) bool { return true })
	})
}

// awaitOnly waits for an event matching want, failing on any event before
// it that matches forbidden.
func awaitOnly(t testing.TB, ch <-chan backend.Event, what string, want, forbidden func(backend.Event) bool) {
	t.Helper()
	awaitEvent(t, ch, what, func(e backend.Event) bool {
		if want(e) {
			return true
		}
		if forbidden(e) {
			t.Fatalf("event %+v before %s", e, what)
		}
		return false
	})
}
