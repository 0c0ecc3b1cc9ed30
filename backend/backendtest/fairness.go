package backendtest

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Fair shares: runs under fairness keys are claimed by priority, then by
// a pass given at each enqueue (backend.Fairness, reference §11.3). Every
// specification runs on a fake clock, and counts claims, not time.
func testFairness(t *testing.T, s *suite) {
	fair := func(key string, weight float64) *backend.Fairness { return &backend.Fairness{Key: key, Weight: weight} }
	// enqueue starts n runs of key in batches, as a hot tenant's burst.
	enqueue := func(t *testing.T, b backend.Backend, key string, weight float64, priority, n int) []*backend.WorkflowRun {
		t.Helper()
		var out []*backend.WorkflowRun
		for lo := 0; lo < n; lo += 500 {
			ps := make([]backend.CreateWorkflowRunParams, 0, 500)
			for i := lo; i < min(lo+500, n); i++ {
				ps = append(ps, backend.CreateWorkflowRunParams{WorkflowName: "wf", Priority: priority, Fairness: fair(key, weight)})
			}
			runs, err := b.CreateWorkflowRuns(t.Context(), ps)
			if err != nil {
				t.Fatalf("CreateWorkflowRuns(%d runs of key %q): %v", len(ps), key, err)
			}
			out = append(out, runs...)
		}
		return out
	}
	// claimsUntil claims with one worker at a time (each claim, a round
	// of one slot) until run id is claimed, and returns how many claims
	// that took; it gives up after max.
	claimsUntil := func(t *testing.T, b backend.Backend, id string, max int, p backend.ClaimWorkflowRunsParams) int {
		t.Helper()
		for n := 1; n <= max; n++ {
			p.WorkerIDs, p.LeaseDuration = []string{newWorkerID()}, longLease
			runs, err := b.ClaimWorkflowRuns(t.Context(), p)
			if err != nil {
				t.Fatalf("ClaimWorkflowRuns: %v", err)
			}
			if len(runs) != 1 {
				t.Fatalf("claim %d took %d runs, want 1", n, len(runs))
			}
			if runs[0].ID == id {
				return n
			}
		}
		t.Fatalf("run %s was not claimed within %d claims", id, max)
		return 0
	}
	// countKeys claims n runs, one per claim, and counts them per
	// fairness key (read back through keyOf).
	countKeys := func(t *testing.T, b backend.Backend, n int, keyOf map[string]string) map[string]int {
		t.Helper()
		got := map[string]int{}
		for range n {
			runs := claim(t, b, longLease, newWorkerID())
			if len(runs) != 1 {
				t.Fatalf("a claim took %d runs, want 1 (so far %v)", len(runs), got)
			}
			got[keyOf[runs[0].ID]]++
		}
		return got
	}
	keysOf := func(m map[string]string, key string, runs []*backend.WorkflowRun) {
		for _, r := range runs {
			m[r.ID] = key
		}
	}

	for _, c := range []struct {
		name     string
		hot      int // the hot key's queued runs
		priority int
		admit    []string // a claim that admits limited workflows (the other claim path)
	}{
		{"at priority 0", 2000, 0, nil},
		{"at priority 5", 300, 5, nil},
		{"at priority -3", 300, -3, nil},
		{"on the claim that admits limited workflows", 300, 0, []string{"limited"}},
	} {
		t.Run(fmt.Sprintf("a cold key's run is claimed within one claim round behind a hot key's %d %s", c.hot, c.name), func(t *testing.T) {
			t.Parallel()
			b := s.newBackendOn(t, newClock())
			p := backend.ClaimWorkflowRunsParams{Admit: c.admit}
			if c.admit != nil {
				if _, err := b.(backend.LimitStore).PutWorkflowLimits(t.Context(), "limited", backend.Limits{Concurrency: 1}); err != nil {
					t.Fatal(err)
				}
			}
			hot := enqueue(t, b, "hot", 1, c.priority, c.hot)
			if r := getRun(t, b, hot[0].ID); r.AvailableAt != nil {
				t.Fatalf("a fair run waits with available_at %v, want NULL (out of the TypeScript claim's reach)", r.AvailableAt)
			}
			claimsUntil(t, b, hot[0].ID, 1, p) // the hot key is under way
			cold := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Priority: c.priority, Fairness: fair("cold", 1)})
			// One round: each key that waits gets one claim.
			if n := claimsUntil(t, b, cold.ID, 2, p); n > 2 {
				t.Fatalf("the cold run took %d claims", n)
			}
			// A claim of 10 slots takes the cold key's second run in its round.
			cold2 := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Priority: c.priority, Fairness: fair("cold", 1)})
			ws := make([]string, 10)
			for i := range ws {
				ws[i] = newWorkerID()
			}
			p.WorkerIDs, p.LeaseDuration = ws, longLease
			runs, err := b.ClaimWorkflowRuns(t.Context(), p)
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 10 || runs[0].ID != cold2.ID && runs[1].ID != cold2.ID {
				t.Fatalf("a claim of 10 took %v, want the cold run %s among its first two", runIDs(runs), cold2.ID)
			}
		})
	}

	// The cold run's place is counted in the order the claims returned to
	// Go, which is not the order they committed in: a claimer descheduled
	// between its commit and its count lets the other two count theirs
	// first (the version matrix saw the cold run counted 10th when the
	// bound was two rounds, 6). So the bound here is ten rounds, which
	// still tells fair shares from FIFO (the cold run, created after the
	// 300 hot ones, would be 301st); the one-round bound is held by the
	// single claimer's cases above, whose order is exact.
	t.Run("three claimers on their own pools take every fair run once, and the cold key's run within their first ten rounds", func(t *testing.T) {
		t.Parallel()
		clk, ns := newClock(), newNamespace()
		backends := []backend.Backend{s.backendInOn(t, ns, clk), s.backendInOn(t, ns, clk), s.backendInOn(t, ns, clk)}
		hot := enqueue(t, backends[0], "hot", 1, 0, 300)
		claimsUntil(t, backends[0], hot[0].ID, 1, backend.ClaimWorkflowRunsParams{})
		cold := createRun(t, backends[1], backend.CreateWorkflowRunParams{WorkflowName: "wf", Fairness: fair("cold", 1)})
		var (
			seq      atomic.Int64 // claims returned so far, by all claimers
			coldAt   atomic.Int64
			mu       sync.Mutex
			claimed  = map[string]int{hot[0].ID: 1}
			wg       sync.WaitGroup
			failures = make(chan error, len(backends))
		)
		for _, b := range backends {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{WorkerIDs: []string{newWorkerID()}, LeaseDuration: longLease})
					if err != nil {
						failures <- err
						return
					}
					if len(runs) == 0 {
						return
					}
					n := seq.Add(1)
					mu.Lock()
					claimed[runs[0].ID]++
					mu.Unlock()
					if runs[0].ID == cold.ID {
						coldAt.Store(n)
					}
				}
			}()
		}
		wg.Wait()
		close(failures)
		for err := range failures {
			t.Fatalf("a claimer failed: %v", err)
		}
		if len(claimed) != 301 {
			t.Fatalf("%d runs claimed, want all 301", len(claimed))
		}
		for id, n := range claimed {
			if n != 1 {
				t.Fatalf("run %s claimed %d times", id, n)
			}
		}
		if at := coldAt.Load(); at == 0 || at > 30 {
			t.Fatalf("the cold run was the %dth claim of three claimers, want within their first ten rounds (30)", at)
		}
	})

	t.Run("a key of weight 2 gets twice the claims of a key of weight 1 while both wait", func(t *testing.T) {
		t.Parallel()
		b := s.newBackendOn(t, newClock())
		keyOf := map[string]string{}
		keysOf(keyOf, "heavy", enqueue(t, b, "heavy", 2, 0, 300))
		keysOf(keyOf, "light", enqueue(t, b, "light", 1, 0, 300))
		got := countKeys(t, b, 90, keyOf)
		if got["heavy"] < 59 || got["heavy"] > 61 || got["light"] < 29 || got["light"] > 31 {
			t.Fatalf("90 claims took %v, want about 60 heavy and 30 light", got)
		}
	})

	t.Run("an idle key banks no credit: its new runs share with the busy key's from the current virtual time", func(t *testing.T) {
		t.Parallel()
		b := s.newBackendOn(t, newClock())
		idle := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Fairness: fair("idle", 1)})
		claimRun(t, b, newWorkerID(), longLease, idle.ID)
		keyOf := map[string]string{}
		keysOf(keyOf, "busy", enqueue(t, b, "busy", 1, 0, 200))
		countKeys(t, b, 100, keyOf) // vtime moves on while "idle" has nothing queued
		keysOf(keyOf, "idle", enqueue(t, b, "idle", 1, 0, 20))
		got := countKeys(t, b, 20, keyOf)
		if got["idle"] < 9 || got["idle"] > 11 {
			t.Fatalf("20 claims after the idle key came back took %v, want about 10 each (the idle key must not take them all)", got)
		}
	})

	t.Run("a retry's reschedule enqueues the run with a fresh pass", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		r := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Fairness: fair("retried", 1)})
		claimRun(t, b, w, longLease, r.ID)
		busy := enqueue(t, b, "busy", 1, 0, 100)
		claimsUntil(t, b, busy[0].ID, 1, backend.ClaimWorkflowRunsParams{})
		retryRun(t, b, r.ID, w, `{"message":"boom"}`, clk.Now())
		if got := getRun(t, b, r.ID); got.Status != backend.RunPending || got.AvailableAt != nil {
			t.Fatalf("rescheduled fair run: status %s, available at %v; want pending, waiting in the fair queue", got.Status, got.AvailableAt)
		}
		if n := claimsUntil(t, b, r.ID, 2, backend.ClaimWorkflowRunsParams{}); n > 2 {
			t.Fatalf("the retried run took %d claims", n)
		}
	})

	t.Run("a paused fair run is not claimed; resumed, it waits in the fair queue again and is claimed in its turn", func(t *testing.T) {
		t.Parallel()
		b := s.newBackendOn(t, newClock())
		r := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Fairness: fair("paused", 1)})
		pauseRun(t, b, r.ID, "hold")
		requireNothingClaimable(t, b)
		busy := enqueue(t, b, "busy", 1, 0, 20)
		claimsUntil(t, b, busy[0].ID, 1, backend.ClaimWorkflowRunsParams{})
		resumeRun(t, b, r.ID)
		if got := getRun(t, b, r.ID); got.Status != backend.RunPending || got.AvailableAt != nil || got.Paused() {
			t.Fatalf("resumed fair run: status %s, available at %v, paused %v; want pending in the fair queue", got.Status, got.AvailableAt, got.Paused())
		}
		if n := claimsUntil(t, b, r.ID, 2, backend.ClaimWorkflowRunsParams{}); n > 2 {
			t.Fatalf("the resumed run took %d claims", n)
		}
	})

	t.Run("runs without fairness are claimed at the virtual time, FIFO, ahead of fair runs enqueued after it", func(t *testing.T) {
		t.Parallel()
		b := s.newBackendOn(t, newClock())
		enqueue(t, b, "hot", 1, 0, 50)
		plain := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
		claimsUntil(t, b, plain.ID, 1, backend.ClaimWorkflowRunsParams{})
	})

	t.Run("the per-key queues list each key's weight, queued and running runs, passes and oldest due time", func(t *testing.T) {
		t.Parallel()
		b := s.newBackendOn(t, newClock())
		l, ok := b.(backend.FairQueueLister)
		if !ok {
			t.Skipf("%T lists no fair queues", b)
		}
		enqueue(t, b, "a", 2, 0, 5)
		enqueue(t, b, "b", 1, 0, 3)
		createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
		claim(t, b, longLease, newWorkerID(), newWorkerID(), newWorkerID())
		page, err := l.ListFairQueues(t.Context(), backend.ListFairQueuesParams{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Queues) != 1 || page.Next == nil || page.Queues[0].Key != "a" {
			t.Fatalf("first page of 1: %+v, want key a and a next page", page)
		}
		next, err := l.ListFairQueues(t.Context(), backend.ListFairQueuesParams{Limit: 10, After: *page.Next})
		if err != nil {
			t.Fatal(err)
		}
		if len(next.Queues) != 1 || next.Next != nil || next.Queues[0].Key != "b" {
			t.Fatalf("second page: %+v, want key b alone", next)
		}
		qa, qb := page.Queues[0], next.Queues[0]
		// Passes: a (stride 500) 500…2500, b (stride 1000) 1000…3000; the
		// plain run went first, then a's 500 and 1000 (before b's 1000 by
		// creation).
		if qa.Weight != 2 || qa.Queued+qa.Running != 5 || qb.Queued+qb.Running != 3 || qa.Running+qb.Running != 2 {
			t.Fatalf("queues %+v and %+v; want weights 2 and 1, 5 and 3 runs, 2 of them running", qa, qb)
		}
		if qa.NextPass == nil || qa.OldestQueuedAt == nil || qa.LastPass != 2500 || qb.LastPass != 3000 || page.VTime <= 0 {
			t.Fatalf("queues %+v and %+v, vtime %d; want next passes, due times, last passes 2500 and 3000", qa, qb, page.VTime)
		}
	})

	t.Run("a bad fairness key or weight is refused, nothing created", func(t *testing.T) {
		t.Parallel()
		b := s.newBackendOn(t, newClock())
		for _, f := range []*backend.Fairness{
			{Key: strings.Repeat("k", backend.MaxFairnessKeyLength+1)},
			{Key: "bad\x00"},
			{Key: "k", Weight: -1},
		} {
			_, err := b.CreateWorkflowRun(t.Context(), backend.CreateWorkflowRunParams{WorkflowName: "wf", Fairness: f})
			requireErrorIs(t, fmt.Sprintf("CreateWorkflowRun with fairness %+v", f), err, backend.ErrInvalidArgument)
		}
		requireNothingClaimable(t, b)
	})
}
