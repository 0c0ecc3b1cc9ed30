package backendtest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

func testClaimWorkflowRuns(t *testing.T, s *suite) {
	t.Run("claims a pending run: running, one more attempt, the worker's id, a lease and started_at", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		created := createRun(t, b, backend.CreateWorkflowRunParams{Input: []byte(`{"n":1}`)})
		worker := newWorkerID()
		start := time.Now()
		claimed := claimRun(t, b, worker, longLease, created.ID)
		w := since(start)

		want := *created
		want.Status = backend.RunRunning
		want.Attempts = 1
		want.WorkerID = &worker
		want.AvailableAt = requireTimeIn(t, "available_at", claimed.AvailableAt, w.add(longLease))
		want.StartedAt = requireTimeIn(t, "started_at", claimed.StartedAt, w)
		requireRun(t, "claimed run", claimed, &want)
		requireRun(t, "claimed run read back", getRun(t, b, created.ID), &want)
	})

	t.Run("returns no runs and no error when nothing is claimable", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{WorkerIDs: []string{newWorkerID()}, LeaseDuration: longLease})
		if err != nil || len(runs) != 0 {
			t.Fatalf("ClaimWorkflowRuns on an empty namespace = %v, %v; want no runs, no error", runIDs(runs), err)
		}
	})

	t.Run("does not claim a run whose delayed start is in the future", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: ptr(time.Now().Add(farFuture))})
		requireNothingClaimable(t, b)
	})

	t.Run("claims a run whose delayed start has passed", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		r := createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: ptr(time.Now().Add(-time.Minute))})
		claimRun(t, b, newWorkerID(), longLease, r.ID)
	})

	t.Run("respects a lease to its last millisecond, then lets another worker reclaim the run", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		ns := newNamespace()
		a, b := s.backendInOn(t, ns, clk), s.backendInOn(t, ns, clk)
		workerA, workerB := newWorkerID(), newWorkerID()
		created := createRun(t, a, backend.CreateWorkflowRunParams{})
		first := claimRun(t, a, workerA, longLease, created.ID)
		requireTimeAt(t, "available_at", first.AvailableAt, clk.Now().Add(longLease))
		requireNothingClaimable(t, b)

		clk.Advance(longLease - time.Millisecond)
		requireNothingClaimable(t, b)
		clk.Advance(time.Millisecond) // available_at <= now: the lease has run out
		second := claimRun(t, b, workerB, longLease, created.ID)

		want := *first
		want.Attempts = 2
		want.WorkerID = &workerB
		want.AvailableAt = requireTimeAt(t, "available_at", second.AvailableAt, clk.Now().Add(longLease))
		requireRun(t, "reclaimed run (started_at kept from the first claim)", second, &want)
		requireNothingClaimable(t, a)
	})

	t.Run("claims due runs by available_at then created_at, pending, expired leases and due parked runs alike", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		expired := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "expired"})
		expireLease(t, clk, b, expired.ID, w)
		parked := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "parked", AvailableAt: ptr(clk.Now().Add(-10 * time.Hour))})
		claimRun(t, b, w, longLease, parked.ID)
		park(t, b, parked.ID, w, clk.Now().Add(-time.Second)) // due, and earlier than the expired lease

		now := clk.Now()
		same := now.Add(-3 * time.Hour)
		// One millisecond between creates, so created_at orders them.
		create := func(at *time.Time) *backend.WorkflowRun {
			clk.Advance(time.Millisecond)
			return createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "pending", AvailableAt: at})
		}
		pendingNow := create(nil)
		pending1h := create(ptr(now.Add(-time.Hour)))
		pending2h := create(ptr(now.Add(-2 * time.Hour)))
		pending3hFirst := create(&same)
		pending3hSecond := create(&same)

		// parked is due at now-1s and expired at now-1ms, both before
		// pendingNow (created after now) and after the others.
		want := []string{pending3hFirst.ID, pending3hSecond.ID, pending2h.ID, pending1h.ID, parked.ID, expired.ID, pendingNow.ID}
		var got []string
		for range want {
			runs := claim(t, b, longLease, newWorkerID())
			if len(runs) != 1 {
				t.Fatalf("claim %d returned %d runs, want 1 (claimed so far %v)", len(got)+1, len(runs), got)
			}
			got = append(got, runs[0].ID)
		}
		requireIDs(t, "claim order", got, want)
		requireNothingClaimable(t, b)
	})

	t.Run("with a lookahead, claims parked runs due within it after the due ones, never an unexpired lease or a delayed start", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		const ahead = time.Minute
		parkedAt := func(name string, at time.Time) *backend.WorkflowRun {
			r := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: name})
			park(t, b, r.ID, w, at)
			return r
		}
		soon := parkedAt("soon", time.Now().Add(20*time.Second))     // within the lookahead
		sooner := parkedAt("sooner", time.Now().Add(10*time.Second)) // within, earlier
		later := parkedAt("later", time.Now().Add(10*time.Minute))   // beyond it
		delayed := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "delayed", AvailableAt: ptr(time.Now().Add(20 * time.Second))})
		leased := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "leased"})
		// The lease ends within the lookahead, but it has not ended.
		if err := b.ExtendWorkflowRunLease(t.Context(), backend.ExtendWorkflowRunLeaseParams{
			WorkflowRunID: leased.ID, WorkerID: w, LeaseDuration: ahead / 2}); err != nil {
			t.Fatal(err)
		}
		due := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "due"})

		// Without a lookahead, only the due run.
		if runs := claim(t, b, longLease, newWorkerID(), newWorkerID()); len(runs) != 1 || runs[0].ID != due.ID {
			t.Fatalf("claimed %v without a lookahead, want only %s", runIDs(runs), due.ID)
		}
		again := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "due again"})
		park(t, b, again.ID, w, time.Now().Add(-time.Second))
		runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{
			WorkerIDs:     []string{newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID()},
			LeaseDuration: longLease, Lookahead: ahead,
		})
		if err != nil {
			t.Fatal(err)
		}
		requireIDs(t, "claimed with a lookahead of a minute", runIDs(runs), []string{again.ID, sooner.ID, soon.ID})
		for _, r := range runs {
			if r.Status != backend.RunRunning || r.WorkerID == nil {
				t.Errorf("run %s claimed is %s under %v, want running under a worker", r.ID, r.Status, r.WorkerID)
			}
		}
		if runs := claim(t, b, longLease, newWorkerID()); len(runs) != 0 {
			t.Fatalf("claimed %v; want nothing: %s is parked beyond the lookahead and %s is leased", runIDs(runs), later.ID, leased.ID)
		}
		runs, err = b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{
			WorkerIDs: []string{newWorkerID()}, LeaseDuration: longLease, Lookahead: ahead})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 0 {
			t.Fatalf("claimed %v with the lookahead; want nothing: %s is parked beyond it, %s is leased and %s is a delayed start", runIDs(runs), later.ID, leased.ID, delayed.ID)
		}
	})

	t.Run("in one claim of many worker ids, hands the i-th run in claim order to the i-th id", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		t0 := clk.Now()
		// A parked run due long ago, then pending runs due at other times,
		// one millisecond apart so that created_at orders the ties.
		parked := startRun(t, b, newWorkerID(), backend.CreateWorkflowRunParams{WorkflowName: "parked", AvailableAt: ptr(t0.Add(-time.Hour))})
		park(t, b, parked.ID, *parked.WorkerID, t0.Add(-time.Hour))
		create := func(at time.Time) *backend.WorkflowRun {
			clk.Advance(time.Millisecond)
			return createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: &at})
		}
		late := create(t0.Add(-time.Minute))
		early := create(t0.Add(-2 * time.Minute))
		now1 := create(t0)
		now2 := create(t0)
		future := create(t0.Add(time.Hour))

		workers := []string{newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID()}
		got := claim(t, b, time.Minute, workers...)
		requireIDs(t, fmt.Sprintf("claim order (%s, due in an hour, waits)", future.ID), runIDs(got), []string{parked.ID, early.ID, late.ID, now1.ID, now2.ID})
		for i, r := range got {
			if r.WorkerID == nil || *r.WorkerID != workers[i] || r.Status != backend.RunRunning {
				t.Fatalf("claimed run %d = {worker %v, status %s}, want {%s, running}", i, r.WorkerID, r.Status, workers[i])
			}
			requireTimeAt(t, fmt.Sprintf("available_at of claimed run %d", i), r.AvailableAt, clk.Now().Add(time.Minute))
		}
	})

	t.Run("claims one run per worker id, the i-th run for the i-th id", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		created := createRuns(t, b, 5, "wf")
		seen := map[string]bool{}
		for _, want := range []int{3, 2, 0} {
			ids := []string{newWorkerID(), newWorkerID(), newWorkerID()}
			runs := claim(t, b, longLease, ids...)
			if len(runs) != want {
				t.Fatalf("claim with 3 worker ids returned %d runs, want %d", len(runs), want)
			}
			for i, r := range runs {
				if r.WorkerID == nil || *r.WorkerID != ids[i] || r.Status != backend.RunRunning || r.Attempts != 1 {
					t.Fatalf("claimed run %d = {worker %v, status %s, attempts %d}, want {%s, running, 1}", i, r.WorkerID, r.Status, r.Attempts, ids[i])
				}
				if seen[r.ID] {
					t.Fatalf("run %s claimed twice", r.ID)
				}
				seen[r.ID] = true
				requireRun(t, "claimed run read back", getRun(t, b, r.ID), r)
			}
		}
		if len(seen) != len(created) {
			t.Fatalf("claimed %d distinct runs, want %d", len(seen), len(created))
		}
	})

	t.Run("never gives the same run to two concurrent batch claims", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace()
		backends := []backend.Backend{s.backendIn(t, ns), s.backendIn(t, ns)}
		const runs, claimers = 30, 4
		created := createRuns(t, backends[0], runs, "wf")

		var mu sync.Mutex
		claimedBy := map[string][]string{}
		var wg sync.WaitGroup
		errs := make(chan error, claimers) // one error at most per claimer
		for c := range claimers {
			wg.Go(func() {
				b := backends[c%len(backends)]
				for range runs { // every call claims at least one run, or ends the loop
					ids := []string{newWorkerID(), newWorkerID(), newWorkerID()}
					got, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{WorkerIDs: ids, LeaseDuration: longLease})
					if err != nil {
						errs <- err
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for i, r := range got {
						if i >= len(ids) || r.WorkerID == nil || *r.WorkerID != ids[i] {
							errs <- errors.New("a claimed run's worker_id is not the worker id at its index")
							mu.Unlock()
							return
						}
						claimedBy[r.ID] = append(claimedBy[r.ID], *r.WorkerID)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for id, workers := range claimedBy {
			if len(workers) != 1 {
				t.Errorf("run %s claimed %d times, by %v", id, len(workers), workers)
			}
		}
		if got := slices.Sorted(func(yield func(string) bool) {
			for id := range claimedBy {
				if !yield(id) {
					return
				}
			}
		}); !slices.Equal(got, slices.Sorted(slices.Values(created))) {
			t.Fatalf("claimed %d distinct runs, want all %d", len(got), runs)
		}
	})

	t.Run("never claims completed, failed or canceled runs", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		completeRun(t, b, startRun(t, b, w, backend.CreateWorkflowRunParams{}).ID, w, `1`)
		failRun(t, b, startRun(t, b, w, backend.CreateWorkflowRunParams{}).ID, w, `{"message":"x"}`)
		cancelRun(t, b, createRun(t, b, backend.CreateWorkflowRunParams{}).ID)
		requireNothingClaimable(t, b)
	})

	t.Run("claims only runs of the workflows named, matching a nil version only to unversioned runs", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		want := map[string]bool{
			createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "mine"}).ID:                          true,
			createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "versioned", Version: ptr("v2")}).ID: true,
		}
		createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "theirs"})
		createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "mine", Version: ptr("v1")})
		createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "versioned"})
		createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "versioned", Version: ptr("v3")})
		runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{
			WorkerIDs:     []string{newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID()},
			LeaseDuration: longLease,
			Workflows:     []backend.WorkflowKey{{Name: "mine"}, {Name: "versioned", Version: ptr("v2")}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != len(want) {
			t.Fatalf("claimed %d runs, want exactly the %d of the named workflows", len(runs), len(want))
		}
		for _, r := range runs {
			if !want[r.ID] {
				t.Fatalf("claimed run %s of %s (version %v), which was not named", r.ID, r.WorkflowName, r.Version)
			}
		}
		if got := claim(t, b, longLease, newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID()); len(got) != 4 {
			t.Fatalf("without a filter the 4 other runs are claimable, got %d", len(got))
		}
	})
}

func testExtendWorkflowRunLease(t *testing.T, s *suite) {
	t.Run("moves available_at to now plus the lease and changes nothing else", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		claimed := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		start := time.Now()
		err := b.ExtendWorkflowRunLease(t.Context(), backend.ExtendWorkflowRunLeaseParams{WorkflowRunID: claimed.ID, WorkerID: w, LeaseDuration: 3 * longLease})
		if err != nil {
			t.Fatal(err)
		}
		got := getRun(t, b, claimed.ID)
		want := *claimed
		want.AvailableAt = requireTimeIn(t, "available_at", got.AvailableAt, since(start).add(3*longLease))
		requireRun(t, "run after heartbeat", got, &want)
	})

	t.Run("keeps a run whose lease ran out if no other worker took it", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		expireLease(t, clk, b, r.ID, w)
		if err := b.ExtendWorkflowRunLease(t.Context(), backend.ExtendWorkflowRunLeaseParams{WorkflowRunID: r.ID, WorkerID: w, LeaseDuration: longLease}); err != nil {
			t.Fatalf("heartbeat after the lease ran out: %v", err)
		}
		requireNothingClaimable(t, b)
	})

	t.Run("refuses another worker's heartbeat with ErrNotOwner", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		r := startRun(t, b, newWorkerID(), backend.CreateWorkflowRunParams{})
		err := b.ExtendWorkflowRunLease(t.Context(), backend.ExtendWorkflowRunLeaseParams{WorkflowRunID: r.ID, WorkerID: newWorkerID(), LeaseDuration: 3 * longLease})
		requireErrorIs(t, "heartbeat by a stranger", err, backend.ErrNotOwner)
		requireRun(t, "run after the refused heartbeat", getRun(t, b, r.ID), r)
	})

	t.Run("refuses a heartbeat for an unknown run", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		err := b.ExtendWorkflowRunLease(t.Context(), backend.ExtendWorkflowRunLeaseParams{WorkflowRunID: "wrun_missing", WorkerID: newWorkerID(), LeaseDuration: longLease})
		requireErrorIsAny(t, "heartbeat for an unknown run", err, backend.ErrRunNotFound, backend.ErrNotOwner)
	})
}

func requireErrorIsAny(t testing.TB, what string, err error, wants ...error) {
	t.Helper()
	for _, want := range wants {
		if errors.Is(err, want) {
			return
		}
	}
	t.Fatalf("%s: got error %v, want one wrapping any of %q", what, err, wants)
}

func testDeadlines(t *testing.T, s *suite) {
	t.Run("claims a run whose deadline is in the future", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		deadline := ms(time.Now().Add(farFuture))
		r := createRun(t, b, backend.CreateWorkflowRunParams{DeadlineAt: &deadline})
		claimed := claimRun(t, b, newWorkerID(), longLease, r.ID)
		if claimed.DeadlineAt == nil || !claimed.DeadlineAt.Equal(deadline) {
			t.Fatalf("deadline_at = %v, want %v", claimed.DeadlineAt, deadline)
		}
	})

	t.Run("does not claim a pending run past its deadline and fails it with the deadline error", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		deadline := ms(time.Now().Add(-time.Second))
		created := createRun(t, b, backend.CreateWorkflowRunParams{DeadlineAt: &deadline})
		start := time.Now()
		requireNothingClaimable(t, b)
		got := getRun(t, b, created.ID)

		want := *created
		want.Status = backend.RunFailed
		want.Error = backend.DeadlineExceededError()
		want.AvailableAt = nil
		want.FinishedAt = requireTimeIn(t, "finished_at", got.FinishedAt, since(start))
		requireRun(t, "run swept by the claim", got, &want)
	})

	t.Run("fails a leased run whose deadline passed when any worker next claims", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		ns := newNamespace()
		a, b := s.backendInOn(t, ns, clk), s.backendInOn(t, ns, clk)
		workerA := newWorkerID()
		deadline := clk.Now().Add(time.Minute)
		created := createRun(t, a, backend.CreateWorkflowRunParams{DeadlineAt: &deadline})
		claimed := claimRun(t, a, workerA, longLease, created.ID)

		clk.Set(deadline.Add(-time.Millisecond))
		requireNothingClaimable(t, b)
		requireRun(t, "leased run before its deadline", getRun(t, b, created.ID), claimed)
		clk.Set(deadline.Add(time.Millisecond))
		requireNothingClaimable(t, b)
		got := getRun(t, b, created.ID)
		want := *claimed
		want.Status = backend.RunFailed
		want.Error = backend.DeadlineExceededError()
		want.WorkerID = nil
		want.AvailableAt = nil
		want.FinishedAt = requireTimeAt(t, "finished_at", got.FinishedAt, clk.Now())
		requireRun(t, "run swept past its deadline", got, &want)

		_, err := Single(b).CompleteWorkflowRun(t.Context(), CompleteWorkflowRunParams{WorkflowRunID: created.ID, WorkerID: workerA, Output: []byte(`1`)})
		requireErrorIs(t, "completing a run swept past its deadline", err, backend.ErrNotOwner)
	})

}

func testNextDueAt(t *testing.T, s *suite) {
	t.Run("says when the next parked or delayed run comes due, and nothing when none will", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		dt, ok := b.(backend.DueTimer)
		if !ok {
			t.Skip("the backend does not implement backend.DueTimer")
		}
		if _, due, err := dt.NextDueAt(t.Context()); err != nil || due {
			t.Fatalf("empty namespace: due=%v err=%v, want nothing due", due, err)
		}
		soon := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		later := soon.Add(time.Hour)
		createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: &later})
		createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: &soon})
		createRun(t, b, backend.CreateWorkflowRunParams{}) // claimable now: not "next due"
		at, due, err := dt.NextDueAt(t.Context())
		// The same clock here, up to the query's own duration when the
		// backend converts from the database's clock.
		if err != nil || !due || at.Before(soon.Add(-time.Second)) || at.After(soon.Add(time.Second)) {
			t.Fatalf("NextDueAt = %v, %v, %v; want %v (within 1 s)", at, due, err, soon)
		}
	})
}
