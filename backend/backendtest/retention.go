package backendtest

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/clock"
)

// retention is the period of the specifications of retention: runs that
// finished more than this before the clock are pruned.
const retention = 30 * 24 * time.Hour

// runPruner returns b's pruner, skipping the test when b has none.
func runPruner(t testing.TB, b backend.Backend) backend.RunPruner {
	t.Helper()
	p, ok := b.(backend.RunPruner)
	if !ok {
		t.Skip("the backend does not implement backend.RunPruner")
	}
	return p
}

// prune runs one batch with p, the cutoff defaulting to clk's now minus
// retention.
func prune(t testing.TB, b backend.Backend, clk *clock.Fake, p backend.PruneWorkflowRunsParams) backend.PruneResult {
	t.Helper()
	if p.FinishedBefore.IsZero() {
		p.FinishedBefore = clk.Now().Add(-retention)
	}
	res, err := runPruner(t, b).PruneWorkflowRuns(t.Context(), p)
	if err != nil {
		t.Fatalf("PruneWorkflowRuns(%+v): %v", p, err)
	}
	return res
}

// pruneAll walks every batch of p (Limit per batch) and returns the
// counts deleted and the number of batches.
func pruneAll(t testing.TB, b backend.Backend, clk *clock.Fake, p backend.PruneWorkflowRunsParams) (backend.RunCounts, int) {
	t.Helper()
	var total backend.RunCounts
	for batches := 1; ; batches++ {
		if batches > 1000 {
			t.Fatal("prune: still going after 1000 batches")
		}
		res := prune(t, b, clk, p)
		total = total.Plus(res.Deleted)
		if res.Next == "" {
			return total, batches
		}
		p.After = res.Next
	}
}

// finishedRun creates a run of workflow name, claims it and brings it to
// status (completed, failed or canceled).
func finishedRun(t testing.TB, b backend.Backend, name string, status backend.RunStatus) *backend.WorkflowRun {
	t.Helper()
	w := newWorkerID()
	run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: name})
	switch status {
	case backend.RunCompleted:
		return completeRun(t, b, run.ID, w, `"done"`)
	case backend.RunFailed:
		return failRun(t, b, run.ID, w, `{"message":"boom"}`)
	case backend.RunCanceled:
		return cancelRun(t, b, run.ID)
	}
	t.Fatalf("finishedRun: status %s is not terminal", status)
	return nil
}

// requireGone fails unless every run of ids is missing.
func requireGone(t testing.TB, b backend.Backend, what string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := b.GetWorkflowRun(t.Context(), id); !errors.Is(err, backend.ErrRunNotFound) {
			t.Fatalf("%s: GetWorkflowRun(%s) = %v, want ErrRunNotFound (pruned)", what, id, err)
		}
	}
}

// requireKept fails unless every run of ids still exists.
func requireKept(t testing.TB, b backend.Backend, what string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := b.GetWorkflowRun(t.Context(), id); err != nil {
			t.Fatalf("%s: GetWorkflowRun(%s) = %v, want the run kept", what, id, err)
		}
	}
}

func testRetention(t *testing.T, s *suite) {
	t.Run("a prune deletes the old finished runs with their steps, signals, hooks, payloads and streams, and keeps the rest", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		ns := newNamespace()
		b := s.backendInOn(t, ns, clk)
		other := s.backendInOn(t, newNamespace(), clk)

		// A completed run owning one of each thing a run owns.
		w := newWorkerID()
		full := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "full"})
		fn := step(t, b, full, w, "fetch")
		fn.append(t, b, "log", "hello")
		fn.close(t, b, "log")
		fn.finish(t, b, false)
		wait := createStep(t, b, full.ID, w, "approved", backend.StepSignalWait, signalWaitContext("approved-"+ns))
		if got := sendSignal(t, b, "approved-"+ns, `{"ok":true}`); !slices.Equal(got, []string{full.ID}) {
			t.Fatalf("SendSignal delivered to %v, want [%s]", got, full.ID)
		}
		hook := createHook(t, b, full, w, "callback", "tok-"+ns)
		resumeHook(t, b, "tok-"+ns, `{"paid":1}`)
		completeRun(t, b, full.ID, w, `{"nul":"a\u0000b"}`)

		failed := finishedRun(t, b, "other", backend.RunFailed)
		canceled := finishedRun(t, b, "other", backend.RunCanceled)
		pending := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "other"})
		liveOwner := newWorkerID()
		live := claimRun(t, b, liveOwner, longLease, pending.ID)
		createHook(t, b, live, liveOwner, "approval", "live-"+ns)
		// Leased past the clock's advance below: an expired lease is due
		// and would be claimed (in due-time order) by finishedRun's claim.
		if err := b.ExtendWorkflowRunLease(t.Context(), backend.ExtendWorkflowRunLeaseParams{
			WorkflowRunID: live.ID, WorkerID: liveOwner, LeaseDuration: 100 * retention}); err != nil {
			t.Fatal(err)
		}
		later := clk.Now().Add(100 * retention) // not claimable by the claims below
		stillPending := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "other", AvailableAt: &later})
		elsewhere := finishedRun(t, other, "other", backend.RunCompleted)

		clk.Advance(retention + time.Hour)
		recent := finishedRun(t, b, "other", backend.RunCompleted)
		before, err := b.CountWorkflowRuns(t.Context())
		if err != nil {
			t.Fatal(err)
		}

		res := prune(t, b, clk, backend.PruneWorkflowRunsParams{})
		if want := (backend.RunCounts{Completed: 1, Failed: 1, Canceled: 1}); res.Deleted != want || res.Next != "" {
			t.Fatalf("PruneWorkflowRuns = %+v, want deleted %+v and no next batch", res, want)
		}
		requireGone(t, b, "old finished runs", full.ID, failed.ID, canceled.ID)
		requireKept(t, b, "runs not finished, finished recently, or of another namespace", live.ID, stillPending.ID, recent.ID)
		requireKept(t, other, "a run of another namespace", elsewhere.ID)

		for _, id := range []string{fn.attempt, wait.ID} {
			if _, err := b.GetStepAttempt(t.Context(), id); !errors.Is(err, backend.ErrStepNotFound) {
				t.Errorf("GetStepAttempt(%s) of a pruned run = %v, want ErrStepNotFound", id, err)
			}
		}
		requireDelivery(t, b, wait.ID, nil)
		if hooks := listHooks(t, b, full.ID); len(hooks) != 0 {
			t.Errorf("ListHooks of a pruned run = %+v, want none", hooks)
		}
		requirePayloads(t, b, hook.ID) // none left
		requireShown(t, b, full.ID, "log", false)
		requireStreams(t, b, full.ID)
		if _, err := hookStore(t, b).GetHookByToken(t.Context(), "live-"+ns); err != nil {
			t.Errorf("the live hook of a running run: GetHookByToken = %v, want it kept", err)
		}

		after, err := b.CountWorkflowRuns(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if want := before.Sub(res.Deleted); after != want {
			t.Fatalf("CountWorkflowRuns after the prune = %+v, want %+v (%+v before, less those deleted)", after, want, before)
		}
	})

	t.Run("a run is kept until it has been finished for the whole period, whenever it was created", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "slow"})
		clk.Advance(20 * 24 * time.Hour)
		completeRun(t, b, run.ID, w, `1`)
		clk.Advance(retention - time.Hour) // created 49 days ago, finished 29 days ago
		if res := prune(t, b, clk, backend.PruneWorkflowRunsParams{}); res.Deleted.Total() != 0 {
			t.Fatalf("PruneWorkflowRuns deleted %+v, want nothing: the run finished within the period", res.Deleted)
		}
		requireKept(t, b, "a run finished within the period", run.ID)
		clk.Advance(2 * time.Hour)
		if res := prune(t, b, clk, backend.PruneWorkflowRunsParams{}); res.Deleted.Completed != 1 {
			t.Fatalf("PruneWorkflowRuns deleted %+v, want the run now", res.Deleted)
		}
		requireGone(t, b, "a run finished before the period", run.ID)
	})

	t.Run("a finished child is kept while its parent's step waits for it, and pruned once the parent is gone", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		parentWorker := newWorkerID()
		f := startFamily(t, b, parentWorker)
		childWorker := newWorkerID()
		claimRun(t, b, childWorker, longLease, f.child.ID)
		completeRun(t, b, f.child.ID, childWorker, `"child output"`)
		clk.Advance(retention + time.Hour)

		if res := prune(t, b, clk, backend.PruneWorkflowRunsParams{}); res.Deleted.Total() != 0 {
			t.Fatalf("PruneWorkflowRuns deleted %+v, want nothing: the parent's step still reads the child's output", res.Deleted)
		}
		requireKept(t, b, "a child whose parent waits", f.child.ID)

		// The parent is canceled while its step still waits: the child is
		// then only kept as long as the parent is.
		cancelRun(t, b, f.parent.ID)
		clk.Advance(retention + time.Hour)
		if res := prune(t, b, clk, backend.PruneWorkflowRunsParams{}); res.Deleted != (backend.RunCounts{Canceled: 1}) {
			t.Fatalf("first prune deleted %+v, want the canceled parent only", res.Deleted)
		}
		requireGone(t, b, "the canceled parent", f.parent.ID)
		if got := getRun(t, b, f.child.ID); got.ParentStepAttemptID != nil {
			t.Fatalf("the child still names parent step %s, want the link cleared with the parent", *got.ParentStepAttemptID)
		}
		if res := prune(t, b, clk, backend.PruneWorkflowRunsParams{}); res.Deleted != (backend.RunCounts{Completed: 1}) {
			t.Fatalf("second prune deleted %+v, want the child", res.Deleted)
		}
		requireGone(t, b, "the child of a pruned parent", f.child.ID)
	})

	t.Run("a finished child is pruned once its parent's step has its result, the parent's step keeping it", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		parentWorker := newWorkerID()
		f := startFamily(t, b, parentWorker)
		childWorker := newWorkerID()
		claimRun(t, b, childWorker, longLease, f.child.ID)
		completeRun(t, b, f.child.ID, childWorker, `"child output"`)
		_, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{
			WorkflowRunID: f.parent.ID, StepAttemptID: f.step.ID, WorkerID: parentWorker, Output: json.RawMessage(`"child output"`)})
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(retention + time.Hour)
		if res := prune(t, b, clk, backend.PruneWorkflowRunsParams{}); res.Deleted != (backend.RunCounts{Completed: 1}) {
			t.Fatalf("PruneWorkflowRuns deleted %+v, want the child", res.Deleted)
		}
		requireGone(t, b, "a child whose result the parent has", f.child.ID)
		step := getStep(t, b, f.step.ID)
		requireJSON(t, "the parent's step output", step.Output, json.RawMessage(`"child output"`))
		if step.ChildWorkflowRunID != nil {
			t.Fatalf("the parent's step still links child %s, want the link cleared", *step.ChildWorkflowRunID)
		}
	})

	t.Run("batches walk every run, at most Limit each, and a dry run deletes nothing", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		var ids []string
		for i := range 7 {
			status := []backend.RunStatus{backend.RunCompleted, backend.RunFailed, backend.RunCanceled}[i%3]
			ids = append(ids, finishedRun(t, b, "wf", status).ID)
			clk.Advance(time.Millisecond)
		}
		clk.Advance(retention + time.Hour)
		want := backend.RunCounts{Completed: 3, Failed: 2, Canceled: 2}

		dry, batches := pruneAll(t, b, clk, backend.PruneWorkflowRunsParams{Limit: 3, DryRun: true})
		if dry != want || batches != 3 {
			t.Fatalf("dry run counted %+v in %d batches, want %+v in 3", dry, batches, want)
		}
		requireKept(t, b, "runs of a dry run", ids...)

		first := prune(t, b, clk, backend.PruneWorkflowRunsParams{Limit: 3})
		if first.Deleted.Total() != 3 || first.Next == "" {
			t.Fatalf("first batch = %+v, want 3 runs deleted and a next batch", first)
		}
		requireGone(t, b, "the first batch (the oldest runs)", ids[:3]...)
		requireKept(t, b, "the runs after the first batch", ids[3:]...)
		rest, batches := pruneAll(t, b, clk, backend.PruneWorkflowRunsParams{Limit: 3, After: first.Next})
		if rest.Total() != 4 || batches != 2 {
			t.Fatalf("the other batches deleted %+v in %d batches, want 4 runs in 2", rest, batches)
		}
		requireGone(t, b, "every run", ids...)
	})

	t.Run("WorkflowName prunes one workflow and ExceptWorkflowNames leaves workflows alone", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		a := finishedRun(t, b, "a", backend.RunCompleted)
		bb := finishedRun(t, b, "b", backend.RunCompleted)
		c := finishedRun(t, b, "c", backend.RunFailed)
		clk.Advance(retention + time.Hour)

		if res := prune(t, b, clk, backend.PruneWorkflowRunsParams{ExceptWorkflowNames: []string{"a", "b"}}); res.Deleted != (backend.RunCounts{Failed: 1}) {
			t.Fatalf("prune except a, b deleted %+v, want c's failed run", res.Deleted)
		}
		requireGone(t, b, "c", c.ID)
		requireKept(t, b, "a and b", a.ID, bb.ID)
		if res := prune(t, b, clk, backend.PruneWorkflowRunsParams{WorkflowName: "b"}); res.Deleted != (backend.RunCounts{Completed: 1}) {
			t.Fatalf("prune of b deleted %+v, want b's run", res.Deleted)
		}
		requireGone(t, b, "b", bb.ID)
		requireKept(t, b, "a", a.ID)
	})

	t.Run("bad params are refused and delete nothing", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		run := finishedRun(t, b, "wf", backend.RunCompleted)
		clk.Advance(retention + time.Hour)
		cutoff := clk.Now().Add(-retention)
		for name, p := range map[string]backend.PruneWorkflowRunsParams{
			"no cutoff":           {},
			"a negative limit":    {FinishedBefore: cutoff, Limit: -1},
			"a limit too large":   {FinishedBefore: cutoff, Limit: backend.MaxPruneBatch + 1},
			"a malformed cursor":  {FinishedBefore: cutoff, After: "not a cursor"},
			"a name with U+0000":  {FinishedBefore: cutoff, WorkflowName: "a\x00b"},
			"an exception of bad": {FinishedBefore: cutoff, ExceptWorkflowNames: []string{"\xff"}},
		} {
			_, err := runPruner(t, b).PruneWorkflowRuns(t.Context(), p)
			requireErrorIs(t, name, err, backend.ErrInvalidArgument)
		}
		requireKept(t, b, "a run after refused prunes", run.ID)
	})
}
