package backendtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

func testApplyWritesWakeUps(t *testing.T, s *suite) {
	wakes := []struct {
		name     string
		write    func(child, wc string) backend.Write
		wantWake bool
	}{
		{"wakes a parked parent at once when WriteCompleteRun completes its child", func(child, wc string) backend.Write {
			return completeWrite(child, wc, `"child done"`)
		}, true},
		{"wakes a parked parent at once when WriteFailRun fails its child", func(child, wc string) backend.Write {
			return failWrite(child, wc, `{"message":"child failed"}`)
		}, true},
		{"does not wake the parent when WriteRescheduleRun reschedules its child", func(child, wc string) backend.Write {
			return rescheduleWrite(child, wc, `{"message":"step failed"}`, time.Now().Add(farFuture))
		}, false},
	}
	for _, c := range wakes {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			wp, wc := newWorkerID(), newWorkerID()
			f := startFamily(t, b, wp)
			claimRun(t, b, wc, longLease, f.child.ID)
			at := ms(time.Now().Add(farFuture))
			requireApplied(t, "park of the parent", applyWrites(t, b, parkWrite(f.parent.ID, wp, at)))
			// an unrelated top-level run completed in the same batch
			other := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "other"})
			wo := newWorkerID()
			claimRun(t, b, wo, longLease, other.ID)
			start := time.Now()
			requireApplied(t, "child's write", applyWrites(t, b, c.write(f.child.ID, wc), completeWrite(other.ID, wo, `1`)))
			if c.wantWake {
				requireWoken(t, b, f.parent, since(start))
			} else {
				requireParkedUntil(t, b, f.parent, at)
			}
		})
	}

	parks := []struct {
		name string
		// arrive makes the wake-up happen while the parent is owned.
		arrive   func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun
		wantWake bool
	}{
		{"WriteParkRun wakes the run at once when its child already completed", func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun {
			f := startFamily(t, b, worker)
			wc := newWorkerID()
			claimRun(t, b, wc, longLease, f.child.ID)
			completeRun(t, b, f.child.ID, wc, `"child done"`)
			return f.parent
		}, true},
		{"WriteParkRun wakes the run at once when a signal was already delivered to its wait", func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun {
			parent := startRun(t, b, worker, backend.CreateWorkflowRunParams{})
			createStep(t, b, parent.ID, worker, "approval", backend.StepSignalWait, signalWaitContext("approve"))
			sendSignal(t, b, "approve", `{"ok":true}`)
			return parent
		}, true},
		{"WriteParkRun keeps the park time while the child is still running", func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun {
			f := startFamily(t, b, worker)
			claimRun(t, b, newWorkerID(), longLease, f.child.ID)
			return f.parent
		}, false},
	}
	for _, c := range parks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			w := newWorkerID()
			parent := c.arrive(t, b, w)
			at := ms(time.Now().Add(farFuture))
			start := time.Now()
			requireApplied(t, "park", applyWrites(t, b, parkWrite(parent.ID, w, at)))
			if c.wantWake {
				requireWoken(t, b, parent, since(start))
			} else {
				requireParkedUntil(t, b, parent, at)
			}
		})
	}
}

func testApplyWritesEvents(t *testing.T, s *suite) {
	t.Run("announces the runs a batch finished, and work for the runs it made due", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		var runs []*backend.WorkflowRun
		for range 4 {
			r := createRun(t, b, backend.CreateWorkflowRunParams{})
			runs = append(runs, claimRun(t, b, w+"-"+r.ID, longLease, r.ID))
		}
		owner := func(r *backend.WorkflowRun) string { return *r.WorkerID }
		ch := subscribe(t, b)
		now := time.Now().Add(-time.Second)
		requireApplied(t, "batch", applyWrites(t, b,
			completeWrite(runs[0].ID, owner(runs[0]), `1`),
			failWrite(runs[1].ID, owner(runs[1]), `{"message":"x"}`),
			rescheduleWrite(runs[2].ID, owner(runs[2]), `{"message":"y"}`, now),
			parkWrite(runs[3].ID, owner(runs[3]), now),
		))
		workFor := map[string]bool{runs[2].ID: true, runs[3].ID: true}
		awaitEvents(t, ch, map[string]func(backend.Event) bool{
			"EventRunFinished for the completed run": isFinished(runs[0].ID),
			"EventRunFinished for the failed run":    isFinished(runs[1].ID),
			"EventWorkAvailable for the due runs": func(e backend.Event) bool {
				return e.Kind == backend.EventWorkAvailable && (e.WorkflowRunID == "" || workFor[e.WorkflowRunID])
			},
		})
	})
}

func testCreateWorkflowRuns(t *testing.T, s *suite) {
	t.Run("creates pending runs in one call and returns them in the order given", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		later := ms(time.Now().Add(farFuture))
		deadline := ms(time.Now().Add(2 * farFuture))
		ps := []backend.CreateWorkflowRunParams{
			{WorkflowName: "a", Input: json.RawMessage(`{"i":0}`)},
			{WorkflowName: "b", Version: ptr("v2"), Input: json.RawMessage(`[1,"two",null]`), Config: json.RawMessage(`{"c":1}`)},
			{WorkflowName: "a", AvailableAt: &later, DeadlineAt: &deadline},
			{WorkflowName: "c", Context: json.RawMessage(`{"trace":"x"}`), Input: json.RawMessage(`12345678901234567890`)},
		}
		start := time.Now()
		got, err := b.CreateWorkflowRuns(t.Context(), ps)
		if err != nil {
			t.Fatalf("CreateWorkflowRuns: %v", err)
		}
		win := since(start)
		if len(got) != len(ps) {
			t.Fatalf("CreateWorkflowRuns returned %d runs for %d params", len(got), len(ps))
		}
		seen := map[string]bool{}
		for i, p := range ps {
			r := got[i]
			if r == nil || r.ID == "" || seen[r.ID] {
				t.Fatalf("run %d = %+v, want a new run with its own id", i, r)
			}
			seen[r.ID] = true
			want := &backend.WorkflowRun{
				NamespaceID: b.NamespaceID(), ID: r.ID, WorkflowName: p.WorkflowName, Version: p.Version,
				Status: backend.RunPending, Config: json.RawMessage(`{}`), Context: p.Context, Input: p.Input,
				DeadlineAt: p.DeadlineAt,
				CreatedAt:  *requireTimeIn(t, fmt.Sprintf("created_at of run %d", i), &r.CreatedAt, win),
			}
			if p.Config != nil {
				want.Config = p.Config
			}
			if p.AvailableAt != nil {
				want.AvailableAt = p.AvailableAt
			} else {
				want.AvailableAt = requireTimeIn(t, fmt.Sprintf("available_at of run %d", i), r.AvailableAt, win)
			}
			requireRun(t, fmt.Sprintf("run %d", i), r, want)
			requireRun(t, fmt.Sprintf("run %d read back", i), getRun(t, b, r.ID), want)
		}
		requireCounts(t, "after the batch create", b, backend.RunCounts{Pending: len(ps)})
		claimed := claim(t, b, longLease, newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID())
		if len(claimed) != 3 {
			t.Fatalf("claimed %v, want the 3 runs available now", runIDs(claimed))
		}
	})

	t.Run("stamps the runs from the backend's clock and dedupes keys up to exactly 24 hours", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		create := func() *backend.WorkflowRun {
			got, err := b.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{{WorkflowName: "wf", IdempotencyKey: ptr("k")}, {WorkflowName: "wf"}})
			if err != nil || len(got) != 2 {
				t.Fatalf("CreateWorkflowRuns = %v, %v; want 2 runs", got, err)
			}
			requireTimeAt(t, "created_at of the unkeyed run", &got[1].CreatedAt, clk.Now())
			requireTimeAt(t, "available_at of the unkeyed run", got[1].AvailableAt, clk.Now())
			return got[0]
		}
		first := create()
		requireTimeAt(t, "created_at", &first.CreatedAt, clk.Now())
		clk.Advance(backend.IdempotencyPeriod)
		reused := create()
		requireRun(t, "keyed entry at exactly 24 hours", reused, first)
		if first.Reused || !reused.Reused {
			t.Fatalf("Reused: %v on the first create, %v on the keyed entry that returned it; want false, true", first.Reused, reused.Reused)
		}
		clk.Advance(time.Millisecond)
		if again := create(); again.ID == first.ID || again.Reused {
			t.Fatalf("keyed entry 24 hours and 1 ms later returned the first run, or says Reused (%v)", again.Reused)
		}
	})

	t.Run("returns no runs for no params", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		got, err := b.CreateWorkflowRuns(t.Context(), nil)
		if err != nil || len(got) != 0 {
			t.Fatalf("CreateWorkflowRuns(nil) = %v, %v; want no runs and no error", got, err)
		}
	})

	t.Run("dedupes keyed entries against existing runs and within the batch", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		existing := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", IdempotencyKey: ptr("k1")})
		got, err := b.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{
			{WorkflowName: "wf", IdempotencyKey: ptr("k1")},
			{WorkflowName: "wf"},
			{WorkflowName: "wf", IdempotencyKey: ptr("k2"), Input: json.RawMessage(`1`)},
			{WorkflowName: "wf", IdempotencyKey: ptr("k2"), Input: json.RawMessage(`2`)},
			{WorkflowName: "other", IdempotencyKey: ptr("k1")},
			{WorkflowName: "wf"},
		})
		if err != nil {
			t.Fatalf("CreateWorkflowRuns: %v", err)
		}
		if len(got) != 6 {
			t.Fatalf("CreateWorkflowRuns returned %d runs, want 6", len(got))
		}
		requireRun(t, "run 0 (key of an existing run)", got[0], existing)
		if got[2].ID != got[3].ID || !jsonEqual(got[3].Input, json.RawMessage(`1`)) {
			t.Fatalf("runs 2 and 3 (same key) = %s with input %s and %s, want one run with the first input", got[2].ID, showJSON(got[3].Input), got[3].ID)
		}
		ids := map[string]bool{}
		for _, r := range got {
			ids[r.ID] = true
		}
		if len(ids) != 5 {
			t.Fatalf("%d distinct runs, want 5 (two dedupes)", len(ids))
		}
		requireCounts(t, "after the keyed batch", b, backend.RunCounts{Pending: 5})
	})

	bad := []struct {
		name  string
		entry backend.CreateWorkflowRunParams
	}{
		{"an empty workflow name", backend.CreateWorkflowRunParams{}},
		{"invalid JSON input", backend.CreateWorkflowRunParams{WorkflowName: "wf", Input: json.RawMessage(`{"a":`)}},
		{"invalid JSON config", backend.CreateWorkflowRunParams{WorkflowName: "wf", Config: json.RawMessage(`nope`)}},
		{"a parent step attempt that does not exist", backend.CreateWorkflowRunParams{WorkflowName: "wf", ParentStepAttemptID: ptr("step_missing")}},
	}
	for _, c := range bad {
		t.Run("rejects the whole batch, naming the index, when an entry has "+c.name, func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			ps := make([]backend.CreateWorkflowRunParams, 9)
			for i := range ps {
				ps[i] = backend.CreateWorkflowRunParams{WorkflowName: "wf", Input: json.RawMessage(fmt.Sprint(i))}
			}
			ps[1].IdempotencyKey = ptr("keyed")
			ps[7] = c.entry
			if ps[7].ParentStepAttemptID != nil {
				ps[7].ParentStepAttemptNamespaceID = ptr(b.NamespaceID())
			}
			got, err := b.CreateWorkflowRuns(t.Context(), ps)
			requireErrorIs(t, "CreateWorkflowRuns with a bad entry", err, backend.ErrInvalidArgument)
			if !strings.Contains(err.Error(), "7") {
				t.Fatalf("error %q does not name the bad entry's index 7", err)
			}
			if got != nil {
				t.Fatalf("CreateWorkflowRuns returned %d runs with its error, want none", len(got))
			}
			requireCounts(t, "after the rejected batch", b, backend.RunCounts{})
		})
	}

	t.Run("announces work available", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ch := subscribe(t, b)
		if _, err := b.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{{WorkflowName: "a"}, {WorkflowName: "b"}}); err != nil {
			t.Fatal(err)
		}
		awaitEvent(t, ch, "EventWorkAvailable after a batch create", isWork)
	})
}
