package backendtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// debouncer returns b's Debouncer, skipping the test when it has none.
func debouncer(t testing.TB, b backend.Backend) backend.Debouncer {
	t.Helper()
	d, ok := b.(backend.Debouncer)
	if !ok {
		t.Skip("the backend does not implement backend.Debouncer")
	}
	return d
}

func debounce(t testing.TB, b backend.Backend, workflow, input string, d backend.Debounce) *backend.DebouncedRun {
	t.Helper()
	got, err := debouncer(t, b).DebounceWorkflowRun(t.Context(), backend.CreateWorkflowRunParams{WorkflowName: workflow, Input: json.RawMessage(input)}, d)
	if err != nil {
		t.Fatalf("DebounceWorkflowRun(%s, %s, %+v): %v", workflow, input, d, err)
	}
	return got
}

func listRunsOf(t testing.TB, b backend.Backend, workflow string) []backend.WorkflowRun {
	t.Helper()
	page, err := b.ListWorkflowRuns(t.Context(), backend.ListWorkflowRunsParams{WorkflowName: workflow, Limit: 1000})
	if err != nil {
		t.Fatalf("ListWorkflowRuns(%s): %v", workflow, err)
	}
	return page.Data
}

func testDebounce(t *testing.T, s *suite) {
	t.Run("a burst starts one run, with the last input, a period after the last start", func(t *testing.T) {
		clk := newClock()
		b := s.newBackendOn(t, clk)
		d := backend.Debounce{Key: "k", Period: 10 * time.Second, MaxDelay: time.Minute}
		first := debounce(t, b, "wf", `1`, d)
		if first.Debounced {
			t.Fatalf("first start: Debounced = true, want a new run")
		}
		requireTimeAt(t, "first start's due time", &first.DueAt, fakeEpoch.Add(10*time.Second))
		requireTimeAt(t, "burst deadline", &first.Deadline, fakeEpoch.Add(time.Minute))
		for i := 2; i <= 5; i++ {
			clk.Advance(4 * time.Second)
			got := debounce(t, b, "wf", fmt.Sprint(i), d)
			if got.Run.ID != first.Run.ID || !got.Debounced {
				t.Fatalf("start %d: run %s (debounced %v), want the burst's run %s", i, got.Run.ID, got.Debounced, first.Run.ID)
			}
			requireTimeAt(t, fmt.Sprintf("due time after start %d", i), &got.DueAt, clk.Now().Add(10*time.Second))
			requireJSON(t, "input", got.Run.Input, json.RawMessage(fmt.Sprint(i)))
		}
		// The last start was at +16 s: nothing is claimable before +26 s.
		clk.Set(fakeEpoch.Add(26*time.Second - time.Millisecond))
		requireNothingClaimable(t, b)
		clk.Set(fakeEpoch.Add(26 * time.Second))
		runs := claim(t, b, time.Minute, newWorkerID())
		if len(runs) != 1 || runs[0].ID != first.Run.ID {
			t.Fatalf("claimed %v, want the burst's run %s", runIDs(runs), first.Run.ID)
		}
		requireJSON(t, "claimed input", runs[0].Input, json.RawMessage(`5`))
		if all := listRunsOf(t, b, "wf"); len(all) != 1 {
			t.Fatalf("%d runs for one burst, want 1", len(all))
		}
		// The claim released the key: the next start opens a new burst.
		next := debounce(t, b, "wf", `6`, d)
		if next.Debounced || next.Run.ID == first.Run.ID {
			t.Fatalf("start after the claim joined run %s (debounced %v), want a new run", next.Run.ID, next.Debounced)
		}
	})

	t.Run("the max delay fixed at the first start bounds the burst", func(t *testing.T) {
		clk := newClock()
		b := s.newBackendOn(t, clk)
		d := backend.Debounce{Key: "k", Period: 10 * time.Second, MaxDelay: 25 * time.Second}
		first := debounce(t, b, "wf", `0`, d)
		var last *backend.DebouncedRun
		for i := 1; i <= 3; i++ {
			clk.Advance(8 * time.Second)
			// A later start asking a longer max delay cannot move the deadline.
			last = debounce(t, b, "wf", fmt.Sprint(i), backend.Debounce{Key: "k", Period: 10 * time.Second, MaxDelay: time.Hour})
		}
		if last.Run.ID != first.Run.ID {
			t.Fatalf("run %s, want %s", last.Run.ID, first.Run.ID)
		}
		requireTimeAt(t, "due time at +24 s", &last.DueAt, fakeEpoch.Add(25*time.Second))
		requireTimeAt(t, "deadline", &last.Deadline, fakeEpoch.Add(25*time.Second))
		clk.Set(fakeEpoch.Add(25 * time.Second))
		if runs := claim(t, b, time.Minute, newWorkerID()); len(runs) != 1 {
			t.Fatalf("claimed %d runs at the deadline, want 1", len(runs))
		}
	})

	t.Run("leading keeps the first input; keys and workflows make separate bursts", func(t *testing.T) {
		clk := newClock()
		b := s.newBackendOn(t, clk)
		lead := backend.Debounce{Key: "k", Period: time.Second, Leading: true}
		a := debounce(t, b, "wf", `"first"`, lead)
		a2 := debounce(t, b, "wf", `"second"`, lead)
		if a2.Run.ID != a.Run.ID {
			t.Fatalf("leading start made run %s, want %s", a2.Run.ID, a.Run.ID)
		}
		requireJSON(t, "leading input", a2.Run.Input, json.RawMessage(`"first"`))
		other := debounce(t, b, "wf", `1`, backend.Debounce{Key: "other", Period: time.Second})
		otherWF := debounce(t, b, "wf2", `1`, backend.Debounce{Key: "k", Period: time.Second})
		if other.Run.ID == a.Run.ID || otherWF.Run.ID == a.Run.ID || other.Run.ID == otherWF.Run.ID {
			t.Fatalf("runs %s %s %s: want three bursts", a.Run.ID, other.Run.ID, otherWF.Run.ID)
		}
		list, err := debouncer(t, b).ListDebouncedRuns(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 3 {
			t.Fatalf("ListDebouncedRuns: %d runs, want 3", len(list))
		}
	})

	t.Run("concurrent starts of one key collapse to one run", func(t *testing.T) { testDebounceConcurrent(t, s) })

	t.Run("a canceled burst frees its key", func(t *testing.T) {
		clk := newClock()
		b := s.newBackendOn(t, clk)
		d := backend.Debounce{Key: "k", Period: time.Second}
		first := debounce(t, b, "wf", `1`, d)
		cancelRun(t, b, first.Run.ID)
		next := debounce(t, b, "wf", `2`, d)
		if next.Run.ID == first.Run.ID || next.Debounced {
			t.Fatalf("start after cancel joined %s, want a new run", next.Run.ID)
		}
	})

	t.Run("bad options are refused, nothing created", func(t *testing.T) {
		b := s.newBackendOn(t, newClock())
		db := debouncer(t, b)
		at := fakeEpoch
		for _, c := range []struct {
			name  string
			p     backend.CreateWorkflowRunParams
			d     backend.Debounce
			field string
		}{
			{"no key", backend.CreateWorkflowRunParams{WorkflowName: "wf"}, backend.Debounce{Period: time.Second}, "debounce.key"},
			{"no period", backend.CreateWorkflowRunParams{WorkflowName: "wf"}, backend.Debounce{Key: "k"}, "debounce.period"},
			{"max delay under period", backend.CreateWorkflowRunParams{WorkflowName: "wf"}, backend.Debounce{Key: "k", Period: time.Hour, MaxDelay: time.Minute}, "debounce.maxDelay"},
			{"max delay too long", backend.CreateWorkflowRunParams{WorkflowName: "wf"}, backend.Debounce{Key: "k", Period: time.Second, MaxDelay: 8 * 24 * time.Hour}, "debounce.maxDelay"},
			{"idempotency key", backend.CreateWorkflowRunParams{WorkflowName: "wf", IdempotencyKey: ptr("i")}, backend.Debounce{Key: "k", Period: time.Second}, "idempotencyKey"},
			{"start time", backend.CreateWorkflowRunParams{WorkflowName: "wf", AvailableAt: &at}, backend.Debounce{Key: "k", Period: time.Second}, "availableAt"},
			{"no workflow", backend.CreateWorkflowRunParams{}, backend.Debounce{Key: "k", Period: time.Second}, "workflowName"},
		} {
			_, err := db.DebounceWorkflowRun(t.Context(), c.p, c.d)
			requireErrorIs(t, c.name, err, backend.ErrInvalidArgument)
			var fe *backend.FieldError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Errorf("%s: error %v, want one naming %s", c.name, err, c.field)
			}
		}
		if runs := listRunsOf(t, b, "wf"); len(runs) != 0 {
			t.Fatalf("%d runs after refused starts, want none", len(runs))
		}
	})
}

// testDebounceConcurrent is part of testDebounce: starts racing on one key
// collapse to one run (PostgreSQL: the unique index and the loop).
func testDebounceConcurrent(t *testing.T, s *suite) {
	clk := newClock()
	ns := newNamespace()
	const starters, each = 6, 5
	backends := make([]backend.Backend, starters)
	for i := range backends {
		backends[i] = s.backendInOn(t, ns, clk)
	}
	d := backend.Debounce{Key: "k", Period: time.Minute}
	errs := make(chan error, starters*each)
	ids := make(chan string, starters*each)
	for i := range starters {
		go func() {
			for j := range each {
				got, err := debouncer(t, backends[i]).DebounceWorkflowRun(t.Context(),
					backend.CreateWorkflowRunParams{WorkflowName: "wf", Input: json.RawMessage(fmt.Sprint(i*each + j))}, d)
				if err != nil {
					errs <- err
					continue
				}
				ids <- got.Run.ID
			}
		}()
	}
	seen := map[string]bool{}
	for range starters * each {
		select {
		case err := <-errs:
			t.Fatalf("concurrent DebounceWorkflowRun: %v", err)
		case id := <-ids:
			seen[id] = true
		}
	}
	if len(seen) != 1 {
		t.Fatalf("%d concurrent starts of one key made runs %v, want one", starters*each, seen)
	}
	if runs := listRunsOf(t, backends[0], "wf"); len(runs) != 1 {
		t.Fatalf("%d runs stored, want 1", len(runs))
	}
}
