package backendtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Priorities: due runs are claimed higher priority first, then by the
// time they became due (FIFO), pending runs and runs already started (due
// parked runs, expired leases) alike (testClaimOrder has more).
func testPriorities(t *testing.T, s *suite) {
	t.Run("claims due runs by priority, then FIFO, a parked run of its priority as a pending one", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		parked := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "parked", Priority: 100})
		park(t, b, parked.ID, w, clk.Now().Add(-time.Hour)) // due long before every pending run
		create := func(name string, priority int) *backend.WorkflowRun {
			clk.Advance(time.Millisecond) // created_at orders runs of one priority
			return createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: name, Priority: priority})
		}
		zeroA := create("zero-a", 0)
		fiveA := create("five-a", 5)
		low := create("low", -1)
		fiveB := create("five-b", 5)
		zeroB := create("zero-b", 0)
		ten := create("ten", 10)
		want := []string{parked.ID, ten.ID, fiveA.ID, fiveB.ID, zeroA.ID, zeroB.ID, low.ID}

		var one []string
		for range want {
			runs := claim(t, b, longLease, newWorkerID())
			if len(runs) != 1 {
				t.Fatalf("claim %d returned %d runs, want 1 (so far %v)", len(one)+1, len(runs), one)
			}
			one = append(one, runs[0].ID)
		}
		requireIDs(t, "claims of one run each", one, want)
	})

	t.Run("one claim of many worker ids takes them in the same order", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		var want []string
		for _, p := range []int{3, 0, -2, 3, 7} {
			clk.Advance(time.Millisecond)
			createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: fmt.Sprint(p), Priority: p})
		}
		runs := claim(t, b, longLease, newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID())
		for _, r := range runs {
			want = append(want, fmt.Sprint(r.Priority))
		}
		var got []string
		for _, r := range runs {
			got = append(got, r.WorkflowName)
		}
		requireIDs(t, "workflows claimed, in claim order", got, []string{"7", "3", "3", "0", "-2"})
		if !slices.Equal(got, want) {
			t.Errorf("claimed runs' priorities %v, their names %v: a run's priority was not stored", want, got)
		}
	})

	t.Run("a priority and a concurrency key are stored, by one create and by a batch", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		r := createRun(t, b, backend.CreateWorkflowRunParams{Priority: -7, ConcurrencyKey: ptr("customer-1")})
		got := getRun(t, b, r.ID)
		if got.Priority != -7 || got.ConcurrencyKey == nil || *got.ConcurrencyKey != "customer-1" || r.Priority != -7 {
			t.Errorf("run created with priority -7 and key customer-1 reads back priority %d key %v (returned %d)", got.Priority, got.ConcurrencyKey, r.Priority)
		}
		runs, err := b.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{
			{WorkflowName: "wf", Priority: 4, ConcurrencyKey: ptr("k")}, {WorkflowName: "wf"}})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []int{4, 0} {
			got := getRun(t, b, runs[i].ID)
			if got.Priority != want || runs[i].Priority != want {
				t.Errorf("batch run %d: priority %d (returned %d), want %d", i, got.Priority, runs[i].Priority, want)
			}
		}
		if got := getRun(t, b, runs[1].ID); got.ConcurrencyKey != nil {
			t.Errorf("batch run without a key reads back key %q", *got.ConcurrencyKey)
		}
	})

	t.Run("refuses a priority beyond 32 bits and a concurrency key that is not valid text", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		for _, p := range []backend.CreateWorkflowRunParams{
			{WorkflowName: "wf", Priority: backend.MaxPriority + 1},
			{WorkflowName: "wf", ConcurrencyKey: ptr("a\x00b")},
		} {
			_, err := b.CreateWorkflowRun(t.Context(), p)
			requireErrorIs(t, fmt.Sprintf("create with priority %d key %q", p.Priority, *orEmpty(p.ConcurrencyKey)), err, backend.ErrInvalidArgument)
		}
	})

	testSchedulePriority(t, s)
}

func testSchedulePriority(t *testing.T, s *suite) {
	t.Run("a schedule's priority is stored, replaced by a Put, and given to the runs it starts", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ss := scheduleStore(t, b)
		if got := putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: everySecond, Paused: true, Priority: 5}); got.Priority != 5 {
			t.Errorf("PutSchedule with priority 5 returned priority %d", got.Priority)
		}
		sc, err := ss.GetSchedule(t.Context(), "s")
		if err != nil {
			t.Fatal(err)
		}
		if sc.Priority != 5 {
			t.Errorf("schedule put with priority 5 reads back priority %d", sc.Priority)
		}
		run, err := ss.TriggerSchedule(t.Context(), "s")
		if err != nil {
			t.Fatalf("TriggerSchedule: %v", err)
		}
		if got := getRun(t, b, run.ID); got.Priority != 5 || run.Priority != 5 {
			t.Errorf("the schedule's run has priority %d (returned %d), want the schedule's 5", got.Priority, run.Priority)
		}
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: everySecond, Priority: -2})
		run, err = ss.TriggerSchedule(t.Context(), "s")
		if err != nil {
			t.Fatalf("TriggerSchedule: %v", err)
		}
		if got := getRun(t, b, run.ID); got.Priority != -2 {
			t.Errorf("after a Put with priority -2, the schedule's run has priority %d", got.Priority)
		}
		_, err = ss.PutSchedule(t.Context(), backend.PutScheduleParams{Name: "s", WorkflowName: "wf", Cron: everySecond, Priority: backend.MaxPriority + 1})
		var fe *backend.ScheduleFieldError
		if !errors.As(err, &fe) || fe.Field != "priority" {
			t.Errorf("PutSchedule with priority beyond 32 bits: %v, want a ScheduleFieldError on priority", err)
		}
	})
}

func orEmpty(s *string) *string {
	if s == nil {
		return new(string)
	}
	return s
}

// Limits: runs of a workflow with stored limits wait for admission, hold
// no slot while they wait, and are admitted by claims that admit their
// workflow within its limits, counted across every claimer.
func testLimits(t *testing.T, s *suite) {
	limitStore := func(t *testing.T, b backend.Backend) backend.LimitStore {
		t.Helper()
		ls, ok := b.(backend.LimitStore)
		if !ok {
			t.Skip("the backend does not implement backend.LimitStore")
		}
		return ls
	}
	putLimits := func(t *testing.T, b backend.Backend, name string, l backend.Limits) {
		t.Helper()
		if _, err := limitStore(t, b).PutWorkflowLimits(t.Context(), name, l); err != nil {
			t.Fatalf("PutWorkflowLimits(%s, %+v): %v", name, l, err)
		}
	}
	admitClaim := func(t *testing.T, b backend.Backend, names []string, n int) []*backend.WorkflowRun {
		t.Helper()
		ids := make([]string, n)
		for i := range ids {
			ids[i] = newWorkerID()
		}
		runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{WorkerIDs: ids, LeaseDuration: longLease, Admit: names})
		if err != nil {
			t.Fatalf("ClaimWorkflowRuns admitting %v: %v", names, err)
		}
		for i, r := range runs {
			if r.WorkerID == nil || *r.WorkerID != ids[i] || r.Status != backend.RunRunning {
				t.Fatalf("claimed run %d = {worker %v, status %s}, want {%s, running}", i, r.WorkerID, r.Status, ids[i])
			}
		}
		return runs
	}
	keyed := func(key string) backend.CreateWorkflowRunParams {
		return backend.CreateWorkflowRunParams{WorkflowName: "limited", ConcurrencyKey: ptr(key)}
	}

	t.Run("a run of a limited workflow waits for admission, unclaimable by a claim that does not admit it", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		putLimits(t, b, "limited", backend.Limits{ConcurrencyPerKey: 1})
		r := createRun(t, b, keyed("a"))
		if r.AvailableAt != nil || r.QueuedAt == nil || !r.QueuedAt.Equal(ms(clk.Now())) || r.Status != backend.RunPending {
			t.Fatalf("created run: status %s available_at %v queued_at %v; want pending, NULL, now", r.Status, r.AvailableAt, r.QueuedAt)
		}
		stored := getRun(t, b, r.ID)
		if stored.AvailableAt != nil || stored.QueuedAt == nil || stored.AdmittedAt != nil {
			t.Fatalf("stored run: available_at %v queued_at %v admitted_at %v", stored.AvailableAt, stored.QueuedAt, stored.AdmittedAt)
		}
		requireNothingClaimable(t, b)
		if dt, ok := b.(backend.DueTimer); ok {
			if at, due, err := dt.NextDueAt(t.Context()); err != nil || due {
				t.Errorf("NextDueAt = %v, %v, %v; a run waiting for admission is nobody's next due run", at, due, err)
			}
		}
		clk.Advance(time.Second)
		runs := admitClaim(t, b, []string{"limited"}, 2)
		if len(runs) != 1 || runs[0].ID != r.ID {
			t.Fatalf("admitting claim took %v, want %s", runIDs(runs), r.ID)
		}
		got := runs[0]
		if got.QueuedAt != nil || got.AdmittedAt == nil || !got.AdmittedAt.Equal(ms(clk.Now())) || got.Attempts != 1 {
			t.Errorf("admitted run: queued_at %v admitted_at %v attempts %d; want NULL, now, 1", got.QueuedAt, got.AdmittedAt, got.Attempts)
		}
		requireTimeAt(t, "available_at (the lease)", got.AvailableAt, clk.Now().Add(longLease))
	})

	// Each way a run comes to exist: none may make a run of a limited
	// workflow claimable without an admission.
	requireWaiting := func(t *testing.T, b backend.Backend, how string, r *backend.WorkflowRun) {
		t.Helper()
		stored := getRun(t, b, r.ID)
		if stored.Status != backend.RunPending || stored.AvailableAt != nil || stored.QueuedAt == nil {
			t.Errorf("a run %s: %s, available_at %v, queued_at %v; want pending and waiting for admission",
				how, stored.Status, stored.AvailableAt, stored.QueuedAt)
		}
	}
	t.Run("a run started in the caller's transaction waits for admission", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ts := s.txStarter(t, b)
		putLimits(t, b, "limited", backend.Limits{Concurrency: 1})
		var r *backend.WorkflowRun
		s.inTx(t, b, func(ctx context.Context, tx any) (err error) {
			r, err = ts.CreateWorkflowRunTx(ctx, tx, backend.CreateWorkflowRunParams{WorkflowName: "limited", Priority: 3, ConcurrencyKey: ptr("k")})
			return err
		})
		requireWaiting(t, b, "started in a transaction", r)
		if got := getRun(t, b, r.ID); got.Priority != 3 || got.ConcurrencyKey == nil || *got.ConcurrencyKey != "k" {
			t.Errorf("run started in a transaction: priority %d key %v, want 3 and k", got.Priority, got.ConcurrencyKey)
		}
		requireNothingClaimable(t, b)
	})

	t.Run("a fork of a run of a limited workflow waits for admission, with the run's priority and key", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		f := runForker(t, b)
		w := newWorkerID()
		src := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "limited", Priority: 2, ConcurrencyKey: ptr("k")})
		finishedStep(t, b, src.ID, w, "a", backend.StepFunction, `1`)
		finishedStep(t, b, src.ID, w, "b", backend.StepFunction, `2`)
		failRun(t, b, src.ID, w, `{"message":"x"}`)
		putLimits(t, b, "limited", backend.Limits{ConcurrencyPerKey: 1})
		fork, err := f.ForkWorkflowRun(t.Context(), backend.ForkWorkflowRunParams{WorkflowRunID: src.ID, FromStep: "b"})
		if err != nil {
			t.Fatalf("ForkWorkflowRun: %v", err)
		}
		requireWaiting(t, b, "forked", fork)
		if got := getRun(t, b, fork.ID); got.Priority != 2 || got.ConcurrencyKey == nil || *got.ConcurrencyKey != "k" {
			t.Errorf("fork: priority %d key %v, want the run's 2 and k", got.Priority, got.ConcurrencyKey)
		}
		requireIDs(t, "admitted", runIDs(admitClaim(t, b, []string{"limited"}, 2)), []string{fork.ID})
	})

	t.Run("the successor of a continued run of a limited workflow waits for admission, and the run's end frees its slot", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		putLimits(t, b, "limited", backend.Limits{ConcurrencyPerKey: 1})
		createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "limited", Priority: 2, ConcurrencyKey: ptr("k")})
		held := admitClaim(t, b, []string{"limited"}, 1)
		if len(held) != 1 {
			t.Fatalf("admitted %d runs, want 1", len(held))
		}
		next := continueRun(t, b, held[0].ID, *held[0].WorkerID, `2`)
		requireWaiting(t, b, "continued as new", next)
		if next.Priority != 2 || next.ConcurrencyKey == nil || *next.ConcurrencyKey != "k" {
			t.Errorf("successor: priority %d key %v, want the run's 2 and k", next.Priority, next.ConcurrencyKey)
		}
		requireIDs(t, "admitted", runIDs(admitClaim(t, b, []string{"limited"}, 2)), []string{next.ID})
	})

	t.Run("a schedule's run of a limited workflow waits for admission", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ss := scheduleStore(t, b)
		putLimits(t, b, "limited", backend.Limits{Concurrency: 1})
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", WorkflowName: "limited", Cron: everySecond, Paused: true})
		run, err := ss.TriggerSchedule(t.Context(), "s")
		if err != nil {
			t.Fatalf("TriggerSchedule: %v", err)
		}
		requireWaiting(t, b, "a schedule started", run)
	})

	t.Run("a run of a workflow without limits, and a batch's runs of a limited one", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		putLimits(t, b, "limited", backend.Limits{Concurrency: 5})
		runs, err := b.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{
			{WorkflowName: "limited"}, {WorkflowName: "free"}, {WorkflowName: "limited", ConcurrencyKey: ptr("k")}})
		if err != nil {
			t.Fatal(err)
		}
		for i, wantQueued := range []bool{true, false, true} {
			for _, r := range []*backend.WorkflowRun{runs[i], getRun(t, b, runs[i].ID)} {
				if (r.QueuedAt != nil) != wantQueued || (r.AvailableAt == nil) != wantQueued {
					t.Errorf("batch run %d (%s): queued_at %v available_at %v; want queued %v", i, r.WorkflowName, r.QueuedAt, r.AvailableAt, wantQueued)
				}
			}
		}
		if runs := claim(t, b, longLease, newWorkerID(), newWorkerID()); len(runs) != 1 || runs[0].WorkflowName != "free" {
			t.Errorf("a claim admitting nothing took %v, want only the run of the workflow without limits", runIDs(runs))
		}
	})

	t.Run("per key: at most the limit admitted and unfinished per key, other keys not held up", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		putLimits(t, b, "limited", backend.Limits{ConcurrencyPerKey: 2})
		var a, bk []*backend.WorkflowRun
		for range 5 {
			clk.Advance(time.Millisecond)
			a = append(a, createRun(t, b, keyed("a")))
		}
		for range 2 {
			clk.Advance(time.Millisecond)
			bk = append(bk, createRun(t, b, keyed("b")))
		}
		got := admitClaim(t, b, []string{"limited"}, 10)
		requireIDs(t, "first admission", runIDs(got), []string{a[0].ID, a[1].ID, bk[0].ID, bk[1].ID})
		if more := admitClaim(t, b, []string{"limited"}, 10); len(more) != 0 {
			t.Fatalf("admitted %v with every key at its limit", runIDs(more))
		}
		// A finished run frees its slot; a run sent back to pending for a
		// retry, or parked, keeps it.
		completeRun(t, b, a[0].ID, *got[0].WorkerID, `1`)
		retryRun(t, b, a[1].ID, *got[1].WorkerID, `{"message":"x"}`, clk.Now().Add(time.Hour))
		park(t, b, bk[0].ID, *got[2].WorkerID, clk.Now().Add(time.Hour))
		requireIDs(t, "after one of a's runs finished", runIDs(admitClaim(t, b, []string{"limited"}, 10)), []string{a[2].ID})
		cancelRun(t, b, bk[1].ID)
		cancelRun(t, b, a[2].ID)
		requireIDs(t, "after a's third run and b's second were canceled", runIDs(admitClaim(t, b, []string{"limited"}, 10)), []string{a[3].ID})
	})

	t.Run("global: at most the limit admitted and unfinished across keys", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		putLimits(t, b, "limited", backend.Limits{Concurrency: 3, ConcurrencyPerKey: 5})
		var runs []*backend.WorkflowRun
		for _, k := range []string{"a", "b", "c", "d", "a"} {
			clk.Advance(time.Millisecond)
			runs = append(runs, createRun(t, b, keyed(k)))
		}
		got := admitClaim(t, b, []string{"limited"}, 10)
		requireIDs(t, "admitted", runIDs(got), []string{runs[0].ID, runs[1].ID, runs[2].ID})
		failRun(t, b, runs[1].ID, *got[1].WorkerID, `{"message":"x"}`)
		requireIDs(t, "after one failed", runIDs(admitClaim(t, b, []string{"limited"}, 10)), []string{runs[3].ID})
	})

	t.Run("rate: at most the limit admitted per key within any window of the period", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		putLimits(t, b, "limited", backend.Limits{RateLimit: 2, RatePeriod: time.Minute})
		var runs []*backend.WorkflowRun
		for range 5 {
			clk.Advance(time.Millisecond)
			runs = append(runs, createRun(t, b, keyed("a")))
		}
		other := createRun(t, b, keyed("b"))
		first := admitClaim(t, b, []string{"limited"}, 10)
		requireIDs(t, "first admission", runIDs(first), []string{runs[0].ID, runs[1].ID, other.ID})
		for _, r := range first {
			completeRun(t, b, r.ID, *r.WorkerID, `1`) // finished: no concurrency held, the rate still counts them
		}
		clk.Advance(30 * time.Second)
		requireIDs(t, "half a period later", runIDs(admitClaim(t, b, []string{"limited"}, 10)), nil)
		clk.Advance(30*time.Second - time.Millisecond)
		requireIDs(t, "a millisecond before the period ends", runIDs(admitClaim(t, b, []string{"limited"}, 10)), nil)
		clk.Advance(time.Millisecond)
		requireIDs(t, "when the period ended", runIDs(admitClaim(t, b, []string{"limited"}, 10)), []string{runs[2].ID, runs[3].ID})
		requireIDs(t, "again at once", runIDs(admitClaim(t, b, []string{"limited"}, 10)), nil)
	})

	t.Run("orders admissions by priority, then FIFO", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		putLimits(t, b, "limited", backend.Limits{Concurrency: 2})
		create := func(p int) *backend.WorkflowRun {
			clk.Advance(time.Millisecond)
			return createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "limited", Priority: p})
		}
		low, mid, high, mid2 := create(-1), create(1), create(9), create(1)
		got := admitClaim(t, b, []string{"limited"}, 10)
		requireIDs(t, "admitted", runIDs(got), []string{high.ID, mid.ID})
		completeRun(t, b, high.ID, *got[0].WorkerID, `1`)
		completeRun(t, b, mid.ID, *got[1].WorkerID, `1`)
		requireIDs(t, "then", runIDs(admitClaim(t, b, []string{"limited"}, 10)), []string{mid2.ID, low.ID})
	})

	t.Run("admitted runs merge with other pending runs by priority, then FIFO", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		putLimits(t, b, "limited", backend.Limits{Concurrency: 10})
		create := func(name string, p int) *backend.WorkflowRun {
			clk.Advance(time.Millisecond)
			return createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: name, Priority: p})
		}
		f1, l1, f2, l2 := create("free", 0), create("limited", 0), create("free", 3), create("limited", 5)
		requireIDs(t, "claimed", runIDs(admitClaim(t, b, []string{"limited"}, 10)), []string{l2.ID, f2.ID, f1.ID, l1.ID})
	})

	t.Run("a run whose worker died keeps its slot; when its lease expires any claim takes it over without admission", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		putLimits(t, b, "limited", backend.Limits{ConcurrencyPerKey: 1})
		first := createRun(t, b, keyed("a"))
		clk.Advance(time.Millisecond)
		second := createRun(t, b, keyed("a"))
		got := admitClaim(t, b, []string{"limited"}, 2)
		requireIDs(t, "admitted", runIDs(got), []string{first.ID})
		expireLease(t, clk, b, first.ID, *got[0].WorkerID)
		taken := admitClaim(t, b, []string{"limited"}, 2)
		requireIDs(t, "after the lease expired", runIDs(taken), []string{first.ID})
		if taken[0].Attempts != 2 || taken[0].AdmittedAt == nil || !taken[0].AdmittedAt.Equal(*got[0].AdmittedAt) {
			t.Errorf("taken over: attempts %d admitted_at %v; want 2 and the first admission's %v", taken[0].Attempts, taken[0].AdmittedAt, got[0].AdmittedAt)
		}
		expireLease(t, clk, b, first.ID, *taken[0].WorkerID)
		requireIDs(t, "a claim that admits nothing takes it over too", runIDs(claim(t, b, longLease, newWorkerID(), newWorkerID())), []string{first.ID})
		if r := getRun(t, b, second.ID); r.QueuedAt == nil {
			t.Errorf("the second run of the key left the queue while the first held the slot")
		}
	})

	t.Run("a key whose runs fill the head of the queue does not hold up the other keys", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		putLimits(t, b, "limited", backend.Limits{ConcurrencyPerKey: 1})
		ps := make([]backend.CreateWorkflowRunParams, 300)
		for i := range ps {
			ps[i] = keyed("busy")
		}
		busy, err := b.CreateWorkflowRuns(t.Context(), ps)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Millisecond)
		quiet := createRun(t, b, keyed("quiet"))
		got := admitClaim(t, b, []string{"limited"}, 1)
		if len(got) != 1 || got[0].ConcurrencyKey == nil || *got[0].ConcurrencyKey != "busy" {
			t.Fatalf("first claim of one took %v, want one run of key busy", runIDs(got))
		}
		requireIDs(t, "with busy at its limit and 299 of its runs ahead", runIDs(admitClaim(t, b, []string{"limited"}, 1)), []string{quiet.ID})
		_ = busy
	})

	t.Run("claims that admit concurrently, on several backends, never exceed the limits", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace()
		bs := []backend.Backend{s.backendIn(t, ns), s.backendIn(t, ns), s.backendIn(t, ns), s.backendIn(t, ns)}
		putLimits(t, bs[0], "limited", backend.Limits{Concurrency: 5, ConcurrencyPerKey: 2})
		const rounds = 15
		ps := make([]backend.CreateWorkflowRunParams, rounds*12)
		for i := range ps {
			ps[i] = keyed(fmt.Sprint("k", i%4))
		}
		if _, err := bs[0].CreateWorkflowRuns(t.Context(), ps); err != nil {
			t.Fatal(err)
		}
		// Each round, the four backends claim at once from a start line;
		// then every run admitted is completed, freeing all the slots.
		for round := range rounds {
			var mu sync.Mutex
			var admitted []*backend.WorkflowRun
			var wg sync.WaitGroup
			start := make(chan struct{})
			for _, b := range bs {
				wg.Go(func() {
					<-start
					runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{
						WorkerIDs: []string{newWorkerID(), newWorkerID(), newWorkerID()}, LeaseDuration: longLease, Admit: []string{"limited"}})
					if err != nil {
						t.Errorf("claim: %v", err)
						return
					}
					mu.Lock()
					admitted = append(admitted, runs...)
					mu.Unlock()
				})
			}
			close(start)
			wg.Wait()
			perKey := map[string]int{}
			for _, r := range admitted {
				perKey[*r.ConcurrencyKey]++
			}
			if len(admitted) > 5 {
				t.Fatalf("round %d: %d runs admitted by 4 concurrent claims, limit 5 (per key %v)", round, len(admitted), perKey)
			}
			for k, n := range perKey {
				if n > 2 {
					t.Fatalf("round %d: key %s: %d runs admitted, limit 2", round, k, n)
				}
			}
			if len(admitted) == 0 {
				t.Fatalf("round %d: nothing admitted with every slot free", round)
			}
			for _, r := range admitted {
				completeRun(t, bs[0], r.ID, *r.WorkerID, `1`)
			}
		}
	})

	t.Run("caps bound the runs of a workflow one claim takes, admitted or not", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		putLimits(t, b, "limited", backend.Limits{Concurrency: 100})
		for range 4 {
			createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "capped"})
			createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "limited"})
			createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "free"})
		}
		runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{
			WorkerIDs:     []string{newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID()},
			LeaseDuration: longLease, Admit: []string{"limited"},
			Caps: []backend.WorkflowCap{{Name: "capped", Max: 2}, {Name: "limited", Max: 1}, {Name: "free", Max: 0}},
		})
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, r := range runs {
			count[r.WorkflowName]++
		}
		if count["capped"] != 2 || count["limited"] != 1 || count["free"] != 0 || len(runs) != 3 {
			t.Errorf("claimed per workflow %v, want capped 2, limited 1, free 0", count)
		}
	})

	t.Run("removing the limits releases the waiting runs as ordinary pending runs", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ls := limitStore(t, b)
		putLimits(t, b, "limited", backend.Limits{ConcurrencyPerKey: 1})
		queuedAt := clk.Now()
		r1 := createRun(t, b, keyed("a"))
		clk.Advance(time.Millisecond)
		r2 := createRun(t, b, keyed("a"))
		n, err := ls.DeleteWorkflowLimits(t.Context(), "limited")
		if err != nil || n != 2 {
			t.Fatalf("DeleteWorkflowLimits = %d, %v; want 2 runs released", n, err)
		}
		got := getRun(t, b, r1.ID)
		if got.QueuedAt != nil {
			t.Errorf("released run still queued at %v", got.QueuedAt)
		}
		requireTimeAt(t, "released run's available_at", got.AvailableAt, queuedAt)
		requireIDs(t, "a claim admitting nothing", runIDs(claim(t, b, longLease, newWorkerID(), newWorkerID())), []string{r1.ID, r2.ID})
		if r := createRun(t, b, keyed("a")); r.QueuedAt != nil {
			t.Errorf("a run created after the limits were removed waits for admission")
		}
	})

	t.Run("a retried run of a limited workflow waits for admission again", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		putLimits(t, b, "limited", backend.Limits{ConcurrencyPerKey: 1})
		first := createRun(t, b, keyed("a"))
		got := admitClaim(t, b, []string{"limited"}, 1)
		requireIDs(t, "admitted", runIDs(got), []string{first.ID})
		failRun(t, b, first.ID, *got[0].WorkerID, `{"message":"x"}`)
		clk.Advance(time.Millisecond)
		second := createRun(t, b, keyed("a"))
		requireIDs(t, "the key's next run, after the first failed", runIDs(admitClaim(t, b, []string{"limited"}, 1)), []string{second.ID})
		retried := retryFailed(t, b, first.ID, nil)
		if retried.AvailableAt != nil || retried.QueuedAt == nil || retried.AdmittedAt != nil || retried.Status != backend.RunPending {
			t.Fatalf("retried run: %s available_at %v queued_at %v admitted_at %v; want pending, waiting for admission",
				retried.Status, retried.AvailableAt, retried.QueuedAt, retried.AdmittedAt)
		}
		requireIDs(t, "with the key's slot held by the second run", runIDs(admitClaim(t, b, []string{"limited"}, 1)), nil)
		requireNothingClaimable(t, b)
	})

	t.Run("a waiting run that ends leaves the queue, also when another writer ended it", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		putLimits(t, b, "limited", backend.Limits{ConcurrencyPerKey: 1})
		canceled := createRun(t, b, keyed("a"))
		clk.Advance(time.Millisecond)
		ended := createRun(t, b, keyed("a"))
		clk.Advance(time.Millisecond)
		waiting := createRun(t, b, keyed("a"))
		if r := cancelRun(t, b, canceled.ID); r.QueuedAt != nil {
			t.Errorf("a canceled run is still queued at %v", r.QueuedAt)
		}
		// As the TypeScript SDK ends a run: its status only.
		s.storeStatus(t, b, ended.ID, "canceled")
		requireIDs(t, "admitted", runIDs(admitClaim(t, b, []string{"limited"}, 1)), []string{waiting.ID})
		if r := getRun(t, b, ended.ID); r.QueuedAt != nil {
			t.Errorf("the run another writer ended is still queued at %v after an admission passed it", r.QueuedAt)
		}
	})

	t.Run("a waiting run past its deadline fails in the deadline sweep", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		putLimits(t, b, "limited", backend.Limits{Concurrency: 1})
		r := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "limited", DeadlineAt: ptr(clk.Now().Add(time.Minute))})
		clk.Advance(time.Minute)
		claim(t, b, longLease)
		if got := getRun(t, b, r.ID); got.Status != backend.RunFailed || got.QueuedAt != nil {
			t.Errorf("run waiting for admission past its deadline is %s, queued %v; want failed, unqueued", got.Status, got.QueuedAt)
		}
	})

	t.Run("stores, lists, replaces and removes limits, saying when they changed", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ls := limitStore(t, b)
		l := backend.Limits{Concurrency: 10, ConcurrencyPerKey: 2, RateLimit: 5, RatePeriod: 1500 * time.Millisecond}
		for i, want := range []bool{true, false} {
			changed, err := ls.PutWorkflowLimits(t.Context(), "b-workflow", l)
			if err != nil || changed != want {
				t.Fatalf("put %d: changed %v, %v; want %v", i, changed, err, want)
			}
		}
		if _, err := ls.PutWorkflowLimits(t.Context(), "a-workflow", backend.Limits{ConcurrencyPerKey: 1}); err != nil {
			t.Fatal(err)
		}
		list, err := ls.ListWorkflowLimits(t.Context())
		if err != nil || len(list) != 2 || list[0].WorkflowName != "a-workflow" || list[1].Limits != l || list[1].UpdatedAt.IsZero() {
			t.Fatalf("ListWorkflowLimits = %+v, %v", list, err)
		}
		if changed, err := ls.PutWorkflowLimits(t.Context(), "b-workflow", backend.Limits{}); err != nil || !changed {
			t.Fatalf("put of no limits: changed %v, %v; want them removed", changed, err)
		}
		if list, _ := ls.ListWorkflowLimits(t.Context()); len(list) != 1 {
			t.Errorf("after removing one: %+v", list)
		}
		for _, bad := range []backend.Limits{{Concurrency: -1}, {RateLimit: 1}, {RatePeriod: time.Second}, {RateLimit: 1, RatePeriod: time.Microsecond}} {
			_, err := ls.PutWorkflowLimits(t.Context(), "x", bad)
			requireErrorIs(t, fmt.Sprintf("put %+v", bad), err, backend.ErrInvalidArgument)
		}
		_, err = ls.PutWorkflowLimits(t.Context(), "", l)
		requireErrorIs(t, "put with no workflow name", err, backend.ErrInvalidArgument)
	})
}
