package backendtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/clock"
)

// The claim order (issue 19, item 9): priority (higher first), then the
// time the run became claimable (available_at: a pending run's start, a
// handed-back run's release, an expired lease's end, a parked run's
// wake-up), then created_at and id — for pending, handed-back and woken
// runs alike. A run handed back after an outage, or woken from a sleep,
// keeps its place ahead of the runs that became due after it.
//
// Each case runs on the paths a claim can take: an ordinary claim, a
// claim with caps and a claim that admits a limited workflow (the last two
// choose among the candidates), each claiming one run at a time and then
// all at once.
func testClaimOrder(t *testing.T, s *suite) {
	type claimer func(t *testing.T, b backend.Backend, n int) []*backend.WorkflowRun
	claimWith := func(admit []string, caps []backend.WorkflowCap) claimer {
		return func(t *testing.T, b backend.Backend, n int) []*backend.WorkflowRun {
			t.Helper()
			ids := make([]string, n)
			for i := range ids {
				ids[i] = newWorkerID()
			}
			runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{
				WorkerIDs: ids, LeaseDuration: longLease, Admit: admit, Caps: caps})
			if err != nil {
				t.Fatalf("ClaimWorkflowRuns(%d worker ids, admit %v, caps %v): %v", n, admit, caps, err)
			}
			for i, r := range runs {
				if r.WorkerID == nil || *r.WorkerID != ids[i] {
					t.Fatalf("claimed run %d (%s) went to worker %v, want %s", i, r.ID, r.WorkerID, ids[i])
				}
			}
			return runs
		}
	}
	paths := []struct {
		name   string
		claim  claimer
		limits bool // the path needs a LimitStore
	}{
		{"ordinary claim", claimWith(nil, nil), false},
		{"capped claim", claimWith(nil, []backend.WorkflowCap{{Name: "capped-elsewhere", Max: 5}}), false},
		{"admitting claim", claimWith([]string{"limited-elsewhere"}, nil), true},
	}
	newBackend := func(t *testing.T, limits bool) (backend.Backend, *clock.Fake) {
		t.Helper()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		if limits {
			ls, ok := b.(backend.LimitStore)
			if !ok {
				t.Skip("the backend does not implement backend.LimitStore")
			}
			if _, err := ls.PutWorkflowLimits(t.Context(), "limited-elsewhere", backend.Limits{Concurrency: 1}); err != nil {
				t.Fatal(err)
			}
		}
		return b, clk
	}
	// requireOrder claims the runs of want one per claim, or all in one
	// claim, and checks their order, and that nothing else is claimable.
	requireOrder := func(t *testing.T, b backend.Backend, c claimer, oneByOne bool, want []string) {
		t.Helper()
		var got []string
		if oneByOne {
			for range want {
				runs := c(t, b, 1)
				if len(runs) != 1 {
					t.Fatalf("claim %d took %v, want one run (so far %v, want %v)", len(got)+1, runIDs(runs), got, want)
				}
				got = append(got, runs[0].ID)
			}
		} else {
			got = runIDs(c(t, b, len(want)))
		}
		requireIDs(t, fmt.Sprintf("claim order (one per claim: %v)", oneByOne), got, want)
		if runs := c(t, b, 1); len(runs) != 0 {
			t.Fatalf("claimed %v after every run, want nothing", runIDs(runs))
		}
	}

	for _, p := range paths {
		for _, oneByOne := range []bool{true, false} {
			how := fmt.Sprintf("%s, one per claim %v", p.name, oneByOne)
			t.Run(how+": runs handed back, expired or woken keep their place before pending runs due after them", func(t *testing.T) {
				t.Parallel()
				b, clk := newBackend(t, p.limits)
				t0 := clk.Now()
				lost, expiring, sleeper := newWorkerID(), newWorkerID(), newWorkerID()
				handedBack := startRun(t, b, lost, backend.CreateWorkflowRunParams{WorkflowName: "handed-back"})
				expired := startRun(t, b, expiring, backend.CreateWorkflowRunParams{WorkflowName: "expired"})
				woken := startRun(t, b, sleeper, backend.CreateWorkflowRunParams{WorkflowName: "woken"})
				// The lease of "expired" ends at t0+1.5s; "woken" sleeps until
				// t0+2s.
				if err := b.ExtendWorkflowRunLease(t.Context(), backend.ExtendWorkflowRunLeaseParams{
					WorkflowRunID: expired.ID, WorkerID: expiring, LeaseDuration: 1500 * time.Millisecond}); err != nil {
					t.Fatal(err)
				}
				park(t, b, woken.ID, sleeper, t0.Add(2*time.Second))
				before := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "pending-before"}) // due at t0

				clk.Advance(time.Second) // the database comes back: the lost worker's run is handed back at t0+1s
				if n, err := b.ReleaseWorkflowRuns(t.Context(), []string{lost}); err != nil || n != 1 {
					t.Fatalf("ReleaseWorkflowRuns(%s) = %d, %v; want 1", lost, n, err)
				}
				clk.Advance(time.Second + time.Millisecond) // t0+2.001s: the lease ran out, the sleeper is due
				after1 := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "pending-after-1"})
				clk.Advance(time.Millisecond)
				after2 := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "pending-after-2"})

				requireOrder(t, b, p.claim, oneByOne, []string{before.ID, handedBack.ID, expired.ID, woken.ID, after1.ID, after2.ID})
			})

			t.Run(how+": a priority-10 run that slept wakes ahead of priority-0 runs started after it parked", func(t *testing.T) {
				t.Parallel()
				b, clk := newBackend(t, p.limits)
				t0 := clk.Now()
				w := newWorkerID()
				sleeper := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "sleeper", Priority: 10})
				park(t, b, sleeper.ID, w, t0.Add(time.Second))
				var zeros []string
				for i := range 5 {
					clk.Advance(time.Millisecond)
					zeros = append(zeros, createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: fmt.Sprint("zero-", i)}).ID)
				}
				clk.Advance(1500 * time.Millisecond)
				// Due after the sleeper woke: behind it, though of its priority.
				ten := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "ten", Priority: 10})
				clk.Advance(time.Second)
				minus := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "minus", Priority: -1, AvailableAt: ptr(t0)})

				want := append([]string{sleeper.ID, ten.ID}, zeros...)
				requireOrder(t, b, p.claim, oneByOne, append(want, minus.ID))
			})
		}
	}
}
