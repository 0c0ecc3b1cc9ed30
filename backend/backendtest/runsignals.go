package backendtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// signalRun sends data on signal to run (key nil: none).
func signalRun(t testing.TB, b backend.Backend, runID, signal, data string, key *string) *backend.RunSignal {
	t.Helper()
	s, err := b.SignalRun(t.Context(), backend.SignalRunParams{WorkflowRunID: runID, Signal: signal, Data: rawOrNil(data), IdempotencyKey: key})
	if err != nil {
		t.Fatalf("SignalRun(%s, %s): %v", runID, signal, err)
	}
	return s
}

// receive calls ReceiveRunSignal for the wait and checks what it got;
// want nil means nothing.
func receive(t testing.TB, b backend.Backend, runID, worker string, wait *backend.StepAttempt, signal string, want json.RawMessage) {
	t.Helper()
	data, ok, err := b.ReceiveRunSignal(t.Context(), backend.ReceiveRunSignalParams{WorkflowRunID: runID, WorkerID: worker, StepAttemptID: wait.ID, Signal: signal})
	if err != nil {
		t.Fatalf("ReceiveRunSignal(%s): %v", wait.ID, err)
	}
	if want == nil {
		if ok {
			t.Fatalf("ReceiveRunSignal(%s) = %s; want nothing received", wait.ID, showJSON(data))
		}
		return
	}
	if !ok {
		t.Fatalf("ReceiveRunSignal(%s): nothing received, want %s", wait.ID, want)
	}
	requireJSON(t, "received data", data, want)
}

// finishWait completes a signal-wait attempt, as the SDK does once it has
// read the delivery.
func finishWait(t testing.TB, b backend.Backend, runID, worker string, wait *backend.StepAttempt) {
	t.Helper()
	if _, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: runID, StepAttemptID: wait.ID, WorkerID: worker, Output: json.RawMessage(`null`)}); err != nil {
		t.Fatalf("CompleteStepAttempt(%s): %v", wait.ID, err)
	}
}

// testSignalRun specifies SignalRun and ReceiveRunSignal: signals sent to
// one run, stored until the run waits for them (issue 20).
func testSignalRun(t *testing.T, s *suite) {
	t.Run("stores signals until the run waits, each received once and in send order; a replay reads the same one", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "order"})
		for _, d := range []string{`"a"`, `"b"`, `null`, `"c"`} {
			if sig := signalRun(t, b, run.ID, "delivered", d, nil); sig.Delivered || sig.Duplicate || sig.ID == "" {
				t.Fatalf("SignalRun with no wait = %+v; want stored (not delivered, not a duplicate), with an id", sig)
			}
		}
		// A name-addressed send neither sees nor takes them.
		requireIDs(t, "runs a name-addressed send reached", sendSignal(t, b, "delivered", `"by name"`), []string{})
		requireRun(t, "run after storing signals", getRun(t, b, run.ID), run)
		for i, want := range []string{`"a"`, `"b"`, `null`, `"c"`} {
			wait := createStep(t, b, run.ID, w, fmt.Sprintf("delivered#%d", i), backend.StepSignalWait, signalWaitContext("delivered"))
			receive(t, b, run.ID, w, wait, "delivered", json.RawMessage(want))
			receive(t, b, run.ID, w, wait, "delivered", json.RawMessage(want)) // a replay
			requireDelivery(t, b, wait.ID, json.RawMessage(want))
			finishWait(t, b, run.ID, w, wait)
		}
		last := createStep(t, b, run.ID, w, "delivered#4", backend.StepSignalWait, signalWaitContext("delivered"))
		receive(t, b, run.ID, w, last, "delivered", nil)
	})

	t.Run("delivers at once to a parked run waiting for it, and wakes it", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wt := startWaiter(t, b, "approve", false)
		start := time.Now()
		sig := signalRun(t, b, wt.run.ID, "approve", `{"ok":true}`, nil)
		if !sig.Delivered {
			t.Fatalf("SignalRun to a waiting run = %+v; want delivered", sig)
		}
		requireDelivery(t, b, wt.wait.ID, json.RawMessage(`{"ok":true}`))
		requireWoken(t, b, wt.run, since(start))
	})

	t.Run("delivers to an owned waiting run without touching the run; a second signal waits for the next wait", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wt := startWaiter(t, b, "approve", true)
		if sig := signalRun(t, b, wt.run.ID, "approve", `1`, nil); !sig.Delivered {
			t.Fatalf("SignalRun to a waiting run = %+v; want delivered", sig)
		}
		if sig := signalRun(t, b, wt.run.ID, "approve", `2`, nil); sig.Delivered {
			t.Fatalf("second SignalRun to a wait that already received = %+v; want stored", sig)
		}
		requireDelivery(t, b, wt.wait.ID, json.RawMessage(`1`))
		requireRun(t, "owned run after the delivery", getRun(t, b, wt.run.ID), wt.run)
		w := *wt.run.WorkerID
		finishWait(t, b, wt.run.ID, w, wt.wait)
		next := createStep(t, b, wt.run.ID, w, "approve#1", backend.StepSignalWait, signalWaitContext("approve"))
		receive(t, b, wt.run.ID, w, next, "approve", json.RawMessage(`2`))
	})

	t.Run("reaches only its run and its signal name", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		mine := startWaiter(t, b, "go", true)
		other := startWaiter(t, b, "go", false)
		if sig := signalRun(t, b, mine.run.ID, "stop", `"x"`, nil); sig.Delivered {
			t.Fatalf("a signal of another name was delivered: %+v", sig)
		}
		receive(t, b, mine.run.ID, *mine.run.WorkerID, mine.wait, "go", nil)
		signalRun(t, b, mine.run.ID, "go", `"mine"`, nil)
		requireDelivery(t, b, mine.wait.ID, json.RawMessage(`"mine"`))
		requireDelivery(t, b, other.wait.ID, nil)
		requireStillParked(t, b, other)
	})

	t.Run("an idempotency key dedupes repeated sends to one run and signal", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		first := signalRun(t, b, run.ID, "s", `1`, ptr("k"))
		again := signalRun(t, b, run.ID, "s", `2`, ptr("k"))
		if !again.Duplicate || again.ID != first.ID || again.Delivered {
			t.Fatalf("repeat = %+v; want a duplicate of %s, not delivered", again, first.ID)
		}
		if other := signalRun(t, b, run.ID, "t", `3`, ptr("k")); other.Duplicate {
			t.Fatalf("the same key on another signal name = %+v; want a new signal", other)
		}
		wait := createStep(t, b, run.ID, w, "s", backend.StepSignalWait, signalWaitContext("s"))
		receive(t, b, run.ID, w, wait, "s", json.RawMessage(`1`))
		if after := signalRun(t, b, run.ID, "s", `4`, ptr("k")); !after.Duplicate || !after.Delivered || after.ID != first.ID {
			t.Fatalf("repeat after the receipt = %+v; want a delivered duplicate of %s", after, first.ID)
		}
		finishWait(t, b, run.ID, w, wait)
		next := createStep(t, b, run.ID, w, "s#1", backend.StepSignalWait, signalWaitContext("s"))
		receive(t, b, run.ID, w, next, "s", nil)
		// Once the run ended, a repeat still answers the send it repeats (a
		// client retrying after a lost answer must not be told 409), while
		// a new send is refused.
		completeRun(t, b, run.ID, w, `1`)
		if late := signalRun(t, b, run.ID, "s", `4`, ptr("k")); !late.Duplicate || late.ID != first.ID {
			t.Fatalf("repeat after the run completed = %+v; want a duplicate of %s", late, first.ID)
		}
		if _, err := b.SignalRun(t.Context(), backend.SignalRunParams{WorkflowRunID: run.ID, Signal: "s", IdempotencyKey: ptr("new")}); !errors.Is(err, backend.ErrRunTerminal) {
			t.Fatalf("a new keyed send to the completed run: %v, want ErrRunTerminal", err)
		}
	})

	t.Run("refuses a missing run, a finished one and invalid params", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ctx := t.Context()
		if _, err := b.SignalRun(ctx, backend.SignalRunParams{WorkflowRunID: "no-such-run", Signal: "s"}); !errors.Is(err, backend.ErrRunNotFound) {
			t.Fatalf("SignalRun to a missing run: %v, want ErrRunNotFound", err)
		}
		w := newWorkerID()
		done := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		completeRun(t, b, done.ID, w, `1`)
		canceled := createRun(t, b, backend.CreateWorkflowRunParams{})
		if _, err := b.CancelWorkflowRun(ctx, canceled.ID); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{done.ID, canceled.ID} {
			if _, err := b.SignalRun(ctx, backend.SignalRunParams{WorkflowRunID: id, Signal: "s"}); !errors.Is(err, backend.ErrRunTerminal) {
				t.Fatalf("SignalRun to finished run %s: %v, want ErrRunTerminal", id, err)
			}
		}
		pending := createRun(t, b, backend.CreateWorkflowRunParams{})
		for _, p := range []backend.SignalRunParams{
			{WorkflowRunID: pending.ID},
			{Signal: "s"},
			{WorkflowRunID: pending.ID, Signal: "s", Data: json.RawMessage(`{`)},
		} {
			if _, err := b.SignalRun(ctx, p); !errors.Is(err, backend.ErrInvalidArgument) {
				t.Fatalf("SignalRun(%+v): %v, want ErrInvalidArgument", p, err)
			}
		}
		if sig := signalRun(t, b, pending.ID, "s", "", nil); sig.Delivered {
			t.Fatalf("SignalRun to a pending run = %+v; want stored", sig)
		}
	})

	t.Run("ReceiveRunSignal is fenced on the run's lease", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		wait := createStep(t, b, run.ID, w, "s", backend.StepSignalWait, signalWaitContext("s"))
		// Stored before the wait existed (as if the send raced its
		// creation): left for the owner's receive.
		if _, err := b.SignalRun(t.Context(), backend.SignalRunParams{WorkflowRunID: run.ID, Signal: "other"}); err != nil {
			t.Fatal(err)
		}
		_, _, err := b.ReceiveRunSignal(t.Context(), backend.ReceiveRunSignalParams{WorkflowRunID: run.ID, WorkerID: "someone-else", StepAttemptID: wait.ID, Signal: "other"})
		if !errors.Is(err, backend.ErrNotOwner) {
			t.Fatalf("ReceiveRunSignal by another worker: %v, want ErrNotOwner", err)
		}
	})

	t.Run("concurrent sends to one run are each received exactly once", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := b.SignalRun(t.Context(), backend.SignalRunParams{WorkflowRunID: run.ID, Signal: "s", Data: json.RawMessage(fmt.Sprint(i))})
				errs <- err
			}()
		}
		// A wait opened while the sends run receives one of them.
		first := createStep(t, b, run.ID, w, "s", backend.StepSignalWait, signalWaitContext("s"))
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent SignalRun: %v", err)
			}
		}
		var got []int
		wait := first
		for i := range n + 1 {
			data, ok, err := b.ReceiveRunSignal(t.Context(), backend.ReceiveRunSignalParams{WorkflowRunID: run.ID, WorkerID: w, StepAttemptID: wait.ID, Signal: "s"})
			if err != nil {
				t.Fatal(err)
			}
			if i == n {
				if ok {
					t.Fatalf("wait %d received %s; want nothing left", i, data)
				}
				break
			}
			if !ok {
				t.Fatalf("wait %d received nothing; %d signals were sent", i, n)
			}
			var v int
			if err := json.Unmarshal(data, &v); err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
			finishWait(t, b, run.ID, w, wait)
			wait = createStep(t, b, run.ID, w, fmt.Sprintf("s#%d", i+1), backend.StepSignalWait, signalWaitContext("s"))
		}
		slices.Sort(got)
		if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(got, want) {
			t.Fatalf("received %v, want each of %v once", got, want)
		}
	})
}
