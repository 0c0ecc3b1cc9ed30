package backendtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// sendSignal sends data ("" for nil) on signal and returns the run ids
// delivered to, sorted.
func sendSignal(t testing.TB, b backend.Backend, signal, data string) []string {
	t.Helper()
	return sendSignalKeyed(t, b, signal, data, nil)
}

func sendSignalKeyed(t testing.TB, b backend.Backend, signal, data string, key *string) []string {
	t.Helper()
	ids, err := b.SendSignal(t.Context(), backend.SendSignalParams{Signal: signal, Data: rawOrNil(data), IdempotencyKey: key})
	if err != nil {
		t.Fatalf("SendSignal(%s): %v", signal, err)
	}
	return slices.Sorted(slices.Values(ids))
}

// requireDelivery checks what a signal-wait attempt received; want nil
// means nothing.
func requireDelivery(t testing.TB, b backend.Backend, stepID string, want json.RawMessage) {
	t.Helper()
	data, ok, err := b.GetSignalDelivery(t.Context(), stepID)
	if err != nil {
		t.Fatalf("GetSignalDelivery(%s): %v", stepID, err)
	}
	if want == nil {
		if ok || data != nil {
			t.Fatalf("GetSignalDelivery(%s) = %s, %v; want nothing delivered", stepID, showJSON(data), ok)
		}
		return
	}
	if !ok {
		t.Fatalf("GetSignalDelivery(%s): nothing delivered, want %s", stepID, want)
	}
	requireJSON(t, "delivered data", data, want)
}

// waiter is a run waiting in a signal-wait attempt.
type waiter struct {
	run      *backend.WorkflowRun // as claimed
	wait     *backend.StepAttempt
	parkedAt *time.Time // nil while owned
}

// requireStillParked checks that the waiter's run was not woken.
func requireStillParked(t testing.TB, b backend.Backend, wt waiter) {
	t.Helper()
	want := *wt.run
	want.WorkerID = nil
	want.AvailableAt = wt.parkedAt
	requireRun(t, "parked run that got no signal", getRun(t, b, wt.run.ID), &want)
}

// startWaiter starts a run (in a namespace with nothing else claimable)
// that waits on signal, parked unless owned is true.
func startWaiter(t testing.TB, b backend.Backend, signal string, owned bool) waiter {
	t.Helper()
	w := newWorkerID()
	run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "waits-for-" + signal})
	wait := createStep(t, b, run.ID, w, signal, backend.StepSignalWait, signalWaitContext(signal))
	var parkedAt *time.Time
	if !owned {
		parkedAt = ptr(ms(time.Now().Add(farFuture)))
		park(t, b, run.ID, w, *parkedAt)
	}
	return waiter{run, wait, parkedAt}
}

func testSendSignal(t *testing.T, s *suite) {
	t.Run("returns an empty list when nothing waits, and does not buffer the signal", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ids, err := b.SendSignal(t.Context(), backend.SendSignalParams{Signal: "approve", Data: json.RawMessage(`{"ok":true}`)})
		if err != nil || ids == nil || len(ids) != 0 {
			t.Fatalf("SendSignal with no waiter = %#v, %v; want an empty, non-nil list", ids, err)
		}
		late := startWaiter(t, b, "approve", true)
		requireDelivery(t, b, late.wait.ID, nil)
	})

	t.Run("delivers to a parked waiting run and wakes it", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wt := startWaiter(t, b, "approve", false)
		start := time.Now()
		ids := sendSignal(t, b, "approve", `{"ok":true}`)
		requireIDs(t, "runs delivered to", ids, []string{wt.run.ID})
		requireDelivery(t, b, wt.wait.ID, json.RawMessage(`{"ok":true}`))
		requireWoken(t, b, wt.run, since(start))
	})

	t.Run("delivers to a waiting run that is still owned, without touching the run", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wt := startWaiter(t, b, "approve", true)
		requireIDs(t, "runs delivered to", sendSignal(t, b, "approve", `1`), []string{wt.run.ID})
		requireDelivery(t, b, wt.wait.ID, json.RawMessage(`1`))
		requireRun(t, "owned run after the delivery", getRun(t, b, wt.run.ID), wt.run)
		requireStep(t, "wait attempt after the delivery", getStep(t, b, wt.wait.ID), wt.wait)
	})

	t.Run("fans out to every running wait on the signal, and to no other", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		var want []string
		var waits []waiter
		for range 3 {
			wt := startWaiter(t, b, "go", false)
			want = append(want, wt.run.ID)
			waits = append(waits, wt)
		}
		otherSignal := startWaiter(t, b, "stop", false)
		w := newWorkerID()
		finished := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		finishedWait := createStep(t, b, finished.ID, w, "go", backend.StepSignalWait, signalWaitContext("go"))
		if _, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: finished.ID, StepAttemptID: finishedWait.ID, WorkerID: w, Output: json.RawMessage(`null`)}); err != nil {
			t.Fatal(err)
		}

		requireIDs(t, "runs delivered to", sendSignal(t, b, "go", `"now"`), slices.Sorted(slices.Values(want)))
		for _, wt := range waits {
			requireDelivery(t, b, wt.wait.ID, json.RawMessage(`"now"`))
		}
		requireDelivery(t, b, otherSignal.wait.ID, nil)
		requireStillParked(t, b, otherSignal)
		requireDelivery(t, b, finishedWait.ID, nil)
	})

	t.Run("delivers once per wait when many sends race, from two backends", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace()
		backends := []backend.Backend{s.backendIn(t, ns), s.backendIn(t, ns)}
		var waits []waiter
		for range 5 {
			waits = append(waits, startWaiter(t, backends[0], "go", false))
		}
		const sends = 8
		delivered := make([][]string, sends)
		errs := make([]error, sends)
		var wg sync.WaitGroup
		for i := range sends {
			wg.Go(func() {
				delivered[i], errs[i] = backends[i%2].SendSignal(t.Context(), backend.SendSignalParams{Signal: "go", Data: json.RawMessage(fmt.Sprint(i))})
			})
		}
		wg.Wait()
		byRun := map[string]int{}
		for i := range sends {
			if errs[i] != nil {
				t.Fatalf("send %d: %v", i, errs[i])
			}
			for _, id := range delivered[i] {
				byRun[id]++
			}
		}
		for _, wt := range waits {
			if byRun[wt.run.ID] != 1 {
				t.Fatalf("run %s was reported delivered to %d times, want once", wt.run.ID, byRun[wt.run.ID])
			}
			data, ok, err := backends[1].GetSignalDelivery(t.Context(), wt.wait.ID)
			if err != nil || !ok {
				t.Fatalf("GetSignalDelivery(%s) = %s, %v, %v; want a delivery", wt.wait.ID, data, ok, err)
			}
		}
		if len(byRun) != len(waits) {
			t.Fatalf("deliveries reported to %d runs, want the %d waiting", len(byRun), len(waits))
		}
		if got := claim(t, backends[1], longLease, newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID()); len(got) != len(waits) {
			t.Fatalf("claimed %d runs after the sends, want the %d woken", len(got), len(waits))
		}
	})

	t.Run("delivers at most once per wait: a second send keeps the first data", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wt := startWaiter(t, b, "approve", true)
		sendSignal(t, b, "approve", `"first"`)
		sendSignal(t, b, "approve", `"second"`)
		requireDelivery(t, b, wt.wait.ID, json.RawMessage(`"first"`))
	})

	t.Run("returns the first send's runs for a repeated idempotency key and delivers nothing new", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		first := startWaiter(t, b, "approve", false)
		key := ptr("send-1")
		requireIDs(t, "first keyed send", sendSignalKeyed(t, b, "approve", `"first"`, key), []string{first.run.ID})
		// The send woke the first run; claim it, so that the namespace is
		// idle again for startWaiter (a woken run is due before a run
		// created after it).
		claimRun(t, b, newWorkerID(), longLease, first.run.ID)
		second := startWaiter(t, b, "approve", false)
		requireIDs(t, "repeated keyed send", sendSignalKeyed(t, b, "approve", `"second"`, key), []string{first.run.ID})
		requireDelivery(t, b, first.wait.ID, json.RawMessage(`"first"`))
		requireDelivery(t, b, second.wait.ID, nil)
		requireStillParked(t, b, second)
	})

	// OpenWorkflow 0.10.1's sendSignal selects every running signal-wait
	// attempt on the signal, whatever the status of its run, and the two
	// SDKs share one database: they must agree on who received a signal
	// and on when a sender's idempotency key is used up.
	t.Run("delivers to every running wait whatever its run's status, waking only live runs", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		dead := finishedWaiters(t, b, "approve")
		live := startWaiter(t, b, "approve", false)
		start := time.Now()
		want := []string{live.run.ID}
		for _, d := range dead {
			want = append(want, d.run.ID)
		}
		requireIDs(t, "runs delivered to", sendSignal(t, b, "approve", `"yes"`), slices.Sorted(slices.Values(want)))
		requireDelivery(t, b, live.wait.ID, json.RawMessage(`"yes"`))
		requireWoken(t, b, live.run, since(start))
		for _, d := range dead {
			requireDelivery(t, b, d.wait.ID, json.RawMessage(`"yes"`))
			requireRun(t, "finished run after the delivery", getRun(t, b, d.run.ID), d.run)
		}
	})

	t.Run("uses up an idempotency key on a send that reached only finished runs' waits", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		dead := finishedWaiters(t, b, "approve")
		var want []string
		for _, d := range dead {
			want = append(want, d.run.ID)
		}
		slices.Sort(want)
		key := ptr("to-the-dead")
		requireIDs(t, "keyed send to finished runs' waits", sendSignalKeyed(t, b, "approve", `"first"`, key), want)
		live := startWaiter(t, b, "approve", false)
		requireIDs(t, "repeated keyed send", sendSignalKeyed(t, b, "approve", `"second"`, key), want)
		requireDelivery(t, b, live.wait.ID, nil)
		requireStillParked(t, b, live)
	})

	t.Run("scopes the idempotency key to the signal name", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		a := startWaiter(t, b, "a", false)
		c := startWaiter(t, b, "c", false)
		key := ptr("same-key")
		requireIDs(t, "keyed send on a", sendSignalKeyed(t, b, "a", `"to a"`, key), []string{a.run.ID})
		requireIDs(t, "keyed send on c", sendSignalKeyed(t, b, "c", `"to c"`, key), []string{c.run.ID})
		requireDelivery(t, b, c.wait.ID, json.RawMessage(`"to c"`))
	})
}

func testGetSignalDelivery(t *testing.T, s *suite) {
	t.Run("reports nothing delivered for a wait that got no signal", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wt := startWaiter(t, b, "approve", true)
		requireDelivery(t, b, wt.wait.ID, nil)
	})

	for _, c := range []struct{ name, data string }{
		{"returns JSON null, delivered, when the signal was sent with nil data", ""},
		{"returns JSON null, delivered, when the signal was sent with null", "null"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			wt := startWaiter(t, b, "approve", true)
			sendSignal(t, b, "approve", c.data)
			data, ok, err := b.GetSignalDelivery(t.Context(), wt.wait.ID)
			if err != nil || !ok || string(data) != "null" {
				t.Fatalf("GetSignalDelivery = %s, %v, %v; want null, true, nil", showJSON(data), ok, err)
			}
		})
	}
}

// deadWaiter is a finished run whose signal-wait attempt is still running,
// as read back.
type deadWaiter struct {
	run  *backend.WorkflowRun
	wait *backend.StepAttempt
}

// finishedWaiters makes three runs waiting on signal that then finished
// without ending their wait: one canceled while parked, one failed and one
// completed by their worker (a workflow may return while a wait of an
// abandoned branch is open).
func finishedWaiters(t testing.TB, b backend.Backend, signal string) []deadWaiter {
	t.Helper()
	canceled := startWaiter(t, b, signal, false)
	cancelRun(t, b, canceled.run.ID)
	out := []deadWaiter{{getRun(t, b, canceled.run.ID), canceled.wait}}

	w := newWorkerID()
	failed := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "fails-waiting"})
	failedWait := createStep(t, b, failed.ID, w, signal, backend.StepSignalWait, signalWaitContext(signal))
	failRun(t, b, failed.ID, w, `{"message":"gave up"}`)
	out = append(out, deadWaiter{getRun(t, b, failed.ID), failedWait})

	w = newWorkerID()
	done := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "returns-waiting"})
	doneWait := createStep(t, b, done.ID, w, signal, backend.StepSignalWait, signalWaitContext(signal))
	completeRun(t, b, done.ID, w, `"done"`)
	out = append(out, deadWaiter{getRun(t, b, done.ID), doneWait})

	for _, d := range out {
		if !d.run.Status.Terminal() {
			t.Fatalf("run %s is %s, want a finished run", d.run.ID, d.run.Status)
		}
		if got := getStep(t, b, d.wait.ID); got.Status != backend.StepRunning {
			t.Fatalf("wait %s of finished run %s is %s, want running", d.wait.ID, d.run.ID, got.Status)
		}
	}
	return out
}
