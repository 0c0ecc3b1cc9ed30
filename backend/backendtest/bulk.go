package backendtest

import (
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/clock"
)

// bulkStore returns b's bulk action store, skipping the test when b has
// none.
func bulkStore(t testing.TB, b backend.Backend) backend.BulkActionStore {
	t.Helper()
	s, ok := b.(backend.BulkActionStore)
	if !ok {
		t.Skip("the backend does not implement backend.BulkActionStore")
	}
	return s
}

// newBulkAction stores a running action of op.
func newBulkAction(t testing.TB, b backend.Backend, op backend.BulkOperation) *backend.BulkAction {
	t.Helper()
	a, err := bulkStore(t, b).CreateBulkAction(t.Context(), backend.CreateBulkActionParams{
		ID: "bulk_" + randomHex(8), Operation: op, Query: "workflow = \"bulk\"", Reason: "spec", RequestedBy: "backendtest",
	})
	if err != nil {
		t.Fatalf("CreateBulkAction(%s): %v", op, err)
	}
	return a
}

// claimBulk claims an action for owner and requires it to be want.
func claimBulk(t testing.TB, b backend.Backend, owner string, want *backend.BulkAction) *backend.BulkAction {
	t.Helper()
	a, err := bulkStore(t, b).ClaimBulkAction(t.Context(), backend.ClaimBulkActionParams{Owner: owner, Lease: time.Minute})
	if err != nil {
		t.Fatalf("ClaimBulkAction(%s): %v", owner, err)
	}
	if a == nil || a.ID != want.ID {
		t.Fatalf("ClaimBulkAction(%s) = %+v, want action %s", owner, a, want.ID)
	}
	if a.LeaseOwner != owner || a.LeaseExpiresAt == nil || a.StartedAt == nil {
		t.Fatalf("claimed action has lease owner %q, expiry %v, start %v; want %q, a time, a time", a.LeaseOwner, a.LeaseExpiresAt, a.StartedAt, owner)
	}
	return a
}

// nextBulkPage lists the next page of a over the runs of workflow "bulk".
func nextBulkPage(t testing.TB, b backend.Backend, a *backend.BulkAction, owner string, limit int) backend.ApplyBulkActionPageParams {
	t.Helper()
	p, err := backend.NextBulkPage(t.Context(), b, a, backend.ListWorkflowRunsParams{WorkflowName: "bulk"}, limit)
	if err != nil {
		t.Fatalf("NextBulkPage: %v", err)
	}
	p.Owner, p.Lease = owner, time.Minute
	return p
}

// driveBulk applies a's pages of limit runs as owner until it is final,
// and returns it then.
func driveBulk(t testing.TB, b backend.Backend, a *backend.BulkAction, owner string, limit int) *backend.BulkAction {
	t.Helper()
	for i := 0; a.State.Open(); i++ {
		if i > 100 {
			t.Fatalf("bulk action %s still %s after 100 pages", a.ID, a.State)
		}
		var err error
		a, err = bulkStore(t, b).ApplyBulkActionPage(t.Context(), nextBulkPage(t, b, a, owner, limit))
		if err != nil {
			t.Fatalf("ApplyBulkActionPage: %v", err)
		}
	}
	return a
}

// requireBulkCounts checks an action's state and counts.
func requireBulkCounts(t testing.TB, a *backend.BulkAction, state backend.BulkActionState, acted, skipped, pages int64) {
	t.Helper()
	if a.State != state || a.Acted != acted || a.Skipped != skipped || a.Failed != 0 || a.Pages != pages {
		t.Fatalf("bulk action is %s with acted %d, skipped %d, failed %d in %d pages; want %s with %d, %d, 0 in %d",
			a.State, a.Acted, a.Skipped, a.Failed, a.Pages, state, acted, skipped, pages)
	}
	if !state.Open() && (a.FinishedAt == nil || a.LeaseOwner != "" || a.LeaseExpiresAt != nil) {
		t.Fatalf("final bulk action has finish %v, lease %q until %v; want a finish time and no lease", a.FinishedAt, a.LeaseOwner, a.LeaseExpiresAt)
	}
}

// bulkRuns creates n pending runs of workflow "bulk", a millisecond apart
// on clk.
func bulkRuns(t testing.TB, b backend.Backend, clk *clock.Fake, n int) []*backend.WorkflowRun {
	t.Helper()
	var runs []*backend.WorkflowRun
	for range n {
		runs = append(runs, createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "bulk"}))
		clk.Advance(time.Millisecond)
	}
	return runs
}

// failedBulkRun starts a run of workflow "bulk" and fails it for good,
// with a not-retryable mark first when marked.
func failedBulkRun(t testing.TB, b backend.Backend, marked bool) *backend.WorkflowRun {
	t.Helper()
	w := newWorkerID()
	r := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "bulk"})
	writes := []backend.Write{failWrite(r.ID, w, `{"message":"refused"}`)}
	if marked {
		writes = append([]backend.Write{insertStep(r.ID, w, backend.NotRetryableStep, backend.StepCompleted, `{"reason":"spec"}`, "")}, writes...)
	}
	requireApplied(t, "the run's failure", applyGroups(t, b, writes))
	return getRun(t, b, r.ID)
}

func testBulkActions(t *testing.T, s *suite) {
	t.Run("a bulk cancel acts on each selected run once, page by page, and completes with its counts", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		bulkStore(t, b)
		runs := bulkRuns(t, b, clk, 7)
		other := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "other"})
		clk.Advance(time.Millisecond)
		a := newBulkAction(t, b, backend.BulkCancel)
		if a.State != backend.BulkRunning || a.Operation != backend.BulkCancel || a.Reason != "spec" || a.RequestedBy != "backendtest" || a.Cursor != "" || a.StartedAt != nil {
			t.Fatalf("new bulk action = %+v, want running, unstarted, with its reason and requester", a)
		}
		owner := newWorkerID()
		a = claimBulk(t, b, owner, a)
		a = driveBulk(t, b, a, owner, 3)
		requireBulkCounts(t, a, backend.BulkCompleted, 7, 0, 3)
		for _, r := range runs {
			if got := getRun(t, b, r.ID); got.Status != backend.RunCanceled {
				t.Errorf("selected run %s is %s, want canceled", r.ID, got.Status)
			}
		}
		if got := getRun(t, b, other.ID); got.Status != backend.RunPending {
			t.Errorf("run of another workflow is %s, want pending (not selected)", got.Status)
		}
		if got, err := bulkStore(t, b).GetBulkAction(t.Context(), a.ID); err != nil || got.Acted != 7 || got.State != backend.BulkCompleted {
			t.Fatalf("GetBulkAction = %+v, %v; want the completed action", got, err)
		}
	})

	t.Run("runs created after the action are not selected (the snapshot bound)", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		bulkStore(t, b)
		bulkRuns(t, b, clk, 2)
		a := newBulkAction(t, b, backend.BulkCancel)
		clk.Advance(time.Millisecond)
		late := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "bulk"})
		owner := newWorkerID()
		a = driveBulk(t, b, claimBulk(t, b, owner, a), owner, 10)
		requireBulkCounts(t, a, backend.BulkCompleted, 2, 0, 1)
		if got := getRun(t, b, late.ID); got.Status != backend.RunPending {
			t.Fatalf("run created after the action is %s, want pending", got.Status)
		}
	})

	t.Run("selected runs that are not eligible when reached are skipped, not acted on", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		bulkStore(t, b)
		runs := bulkRuns(t, b, clk, 3)
		cancelRun(t, b, runs[1].ID) // canceled by hand before the action reaches it
		a := newBulkAction(t, b, backend.BulkCancel)
		owner := newWorkerID()
		a = driveBulk(t, b, claimBulk(t, b, owner, a), owner, 10)
		requireBulkCounts(t, a, backend.BulkCompleted, 2, 1, 1)
	})

	t.Run("a bulk retry retries each failed run once, as RetryWorkflowRun, and skips a run marked not retryable", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		bulkStore(t, b)
		failed := []*backend.WorkflowRun{failedBulkRun(t, b, false), failedBulkRun(t, b, false)}
		marked := failedBulkRun(t, b, true)
		clk.Advance(time.Millisecond)
		a := newBulkAction(t, b, backend.BulkRetry)
		owner := newWorkerID()
		a = driveBulk(t, b, claimBulk(t, b, owner, a), owner, 2)
		requireBulkCounts(t, a, backend.BulkCompleted, 2, 1, 2)
		for _, r := range failed {
			got := getRun(t, b, r.ID)
			if got.Status != backend.RunPending || got.Error != nil {
				t.Errorf("retried run %s is %s with error %s, want pending without error", r.ID, got.Status, got.Error)
			}
			marks := 0
			for _, st := range stepsOf(t, b, r.ID) {
				if st.Kind == backend.StepRetry {
					marks++
				}
			}
			if marks != 1 {
				t.Errorf("retried run %s has %d retry marks, want 1", r.ID, marks)
			}
		}
		if got := getRun(t, b, marked.ID); got.Status != backend.RunFailed {
			t.Errorf("run marked not retryable is %s, want still failed", got.Status)
		}
	})

	t.Run("a bulk delete deletes terminal runs with their steps and skips the others", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		bulkStore(t, b)
		done := failedBulkRun(t, b, false)
		pending := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "bulk"})
		clk.Advance(time.Millisecond)
		a := newBulkAction(t, b, backend.BulkDelete)
		owner := newWorkerID()
		a = driveBulk(t, b, claimBulk(t, b, owner, a), owner, 10)
		requireBulkCounts(t, a, backend.BulkCompleted, 1, 1, 1)
		_, err := b.GetWorkflowRun(t.Context(), done.ID)
		requireErrorIs(t, "GetWorkflowRun of the deleted run", err, backend.ErrRunNotFound)
		if steps := stepsOf(t, b, done.ID); len(steps) != 0 {
			t.Errorf("deleted run keeps %d step attempts, want none", len(steps))
		}
		if got := getRun(t, b, pending.ID); got.Status != backend.RunPending {
			t.Errorf("pending run is %s, want kept pending", got.Status)
		}
	})

	t.Run("a bulk pause pauses each unpaused run once with the action's reason, and a bulk resume resumes paused and canceled runs", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		bulkStore(t, b)
		pauser, ok := b.(backend.RunPauser)
		if !ok {
			t.Skip("the backend does not implement backend.RunPauser")
		}
		runs := bulkRuns(t, b, clk, 3)
		if _, err := pauser.PauseWorkflowRun(t.Context(), backend.PauseWorkflowRunParams{WorkflowRunID: runs[0].ID, Reason: "by hand"}); err != nil {
			t.Fatal(err)
		}
		canceled := cancelRun(t, b, createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "bulk"}).ID)
		clk.Advance(time.Millisecond)
		owner := newWorkerID()
		a := driveBulk(t, b, claimBulk(t, b, owner, newBulkAction(t, b, backend.BulkPause)), owner, 10)
		requireBulkCounts(t, a, backend.BulkCompleted, 2, 2, 1) // the run paused by hand and the canceled one skipped
		for i, r := range runs {
			got := getRun(t, b, r.ID)
			want := "spec"
			if i == 0 {
				want = "by hand"
			}
			if !got.Paused() || got.PauseReason == nil || *got.PauseReason != want {
				t.Errorf("run %d after the bulk pause: paused %v, reason %v; want paused with reason %q", i, got.Paused(), got.PauseReason, want)
			}
		}
		clk.Advance(time.Millisecond)
		a = driveBulk(t, b, claimBulk(t, b, owner, newBulkAction(t, b, backend.BulkResume)), owner, 10)
		requireBulkCounts(t, a, backend.BulkCompleted, 4, 0, 1)
		for _, r := range append(runs, canceled) {
			if got := getRun(t, b, r.ID); got.Paused() || got.Status != backend.RunPending {
				t.Errorf("run %s after the bulk resume is %s, paused %v; want pending, not paused", r.ID, got.Status, got.Paused())
			}
		}
	})

	t.Run("a bulk cancel announces the end of a run a worker holds, and a bulk retry announces work, as the single operations do", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		bulkStore(t, b)
		held := startRun(t, b, newWorkerID(), backend.CreateWorkflowRunParams{WorkflowName: "bulk"})
		failed := failedBulkRun(t, b, false)
		clk.Advance(time.Millisecond)
		ch := subscribe(t, b)
		owner := newWorkerID()
		// (the spec's pages list every run of workflow "bulk": each action
		// skips the other's run)
		a := driveBulk(t, b, claimBulk(t, b, owner, newBulkAction(t, b, backend.BulkCancel)), owner, 10)
		requireBulkCounts(t, a, backend.BulkCompleted, 1, 1, 1)
		awaitEvent(t, ch, "EventRunFinished for the held run the bulk cancel canceled", isFinished(held.ID))
		a = driveBulk(t, b, claimBulk(t, b, owner, newBulkAction(t, b, backend.BulkRetry)), owner, 10)
		requireBulkCounts(t, a, backend.BulkCompleted, 1, 1, 1)
		awaitEvent(t, ch, "EventWorkAvailable after the bulk retry of "+failed.ID, isWork)
	})

	t.Run("a page is applied once: the same page again, or by a driver without the lease, is refused and acts on nothing", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		st := bulkStore(t, b)
		failed := failedBulkRun(t, b, false)
		clk.Advance(time.Millisecond)
		a := newBulkAction(t, b, backend.BulkRetry)
		owner := newWorkerID()
		a = claimBulk(t, b, owner, a)
		page := nextBulkPage(t, b, a, owner, 10)
		stranger := page
		stranger.Owner = newWorkerID()
		_, err := st.ApplyBulkActionPage(t.Context(), stranger)
		requireErrorIs(t, "a page applied by a driver without the lease", err, backend.ErrBulkActionLost)
		if _, err := st.ApplyBulkActionPage(t.Context(), page); err != nil {
			t.Fatalf("ApplyBulkActionPage: %v", err)
		}
		// the failed run, failed again, must not be retried a second time by a replay of the page
		w := newWorkerID()
		claimRun(t, b, w, longLease, failed.ID)
		requireApplied(t, "the run's second failure", applyGroups(t, b, []backend.Write{failWrite(failed.ID, w, `{"message":"again"}`)}))
		page.Last = false
		_, err = st.ApplyBulkActionPage(t.Context(), page)
		requireErrorIs(t, "the same page applied again", err, backend.ErrBulkActionFinished)
		if got := getRun(t, b, failed.ID); got.Status != backend.RunFailed {
			t.Fatalf("run after the replayed page is %s, want failed (retried once only)", got.Status)
		}
	})

	t.Run("a canceled action stops at its next page with the counts of what it did; canceling again is idempotent", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		st := bulkStore(t, b)
		runs := bulkRuns(t, b, clk, 4)
		a := newBulkAction(t, b, backend.BulkCancel)
		owner := newWorkerID()
		a = claimBulk(t, b, owner, a)
		a, err := st.ApplyBulkActionPage(t.Context(), nextBulkPage(t, b, a, owner, 2))
		if err != nil {
			t.Fatalf("first page: %v", err)
		}
		c, err := st.CancelBulkAction(t.Context(), a.ID)
		if err != nil || c.State != backend.BulkCanceling {
			t.Fatalf("CancelBulkAction = %+v, %v; want canceling", c, err)
		}
		a, err = st.ApplyBulkActionPage(t.Context(), nextBulkPage(t, b, c, owner, 2))
		if err != nil {
			t.Fatalf("page after the cancel: %v", err)
		}
		requireBulkCounts(t, a, backend.BulkCanceled, 2, 0, 1)
		pending := 0
		for _, r := range runs {
			if getRun(t, b, r.ID).Status == backend.RunPending {
				pending++
			}
		}
		if pending != 2 {
			t.Fatalf("%d runs left pending after the canceled action, want 2 (one page of 2 acted on)", pending)
		}
		if again, err := st.CancelBulkAction(t.Context(), a.ID); err != nil || again.State != backend.BulkCanceled {
			t.Fatalf("CancelBulkAction of a canceled action = %+v, %v; want it unchanged", again, err)
		}
		done := newBulkAction(t, b, backend.BulkCancel)
		done = driveBulk(t, b, claimBulk(t, b, owner, done), owner, 10)
		_, err = st.CancelBulkAction(t.Context(), done.ID)
		requireErrorIs(t, "CancelBulkAction of a completed action", err, backend.ErrBulkActionFinished)
		_, err = st.CancelBulkAction(t.Context(), "bulk_missing")
		requireErrorIs(t, "CancelBulkAction of a missing action", err, backend.ErrBulkActionNotFound)
	})

	t.Run("a driver's action is taken over once its lease expires, and the old driver's pages are refused", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		st := bulkStore(t, b)
		bulkRuns(t, b, clk, 3)
		a := newBulkAction(t, b, backend.BulkCancel)
		first, second := newWorkerID(), newWorkerID()
		a = claimBulk(t, b, first, a)
		a, err := st.ApplyBulkActionPage(t.Context(), nextBulkPage(t, b, a, first, 1))
		if err != nil {
			t.Fatalf("first driver's page: %v", err)
		}
		stale := nextBulkPage(t, b, a, first, 1)
		if got, err := st.ClaimBulkAction(t.Context(), backend.ClaimBulkActionParams{Owner: second, Lease: time.Minute}); err != nil || got != nil {
			t.Fatalf("ClaimBulkAction under a live lease = %+v, %v; want nothing", got, err)
		}
		clk.Advance(time.Minute + time.Second)
		b2 := claimBulk(t, b, second, a)
		if b2.Cursor != a.Cursor || b2.Acted != 1 {
			t.Fatalf("taken-over action has cursor %q and acted %d, want where the first driver left it (%q, 1)", b2.Cursor, b2.Acted, a.Cursor)
		}
		_, err = st.ApplyBulkActionPage(t.Context(), stale)
		requireErrorIs(t, "the first driver's page after the takeover", err, backend.ErrBulkActionLost)
		b2 = driveBulk(t, b, b2, second, 1)
		requireBulkCounts(t, b2, backend.BulkCompleted, 3, 0, 3)
	})

	t.Run("actions are listed newest first, got by id, and a missing one is not found", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		st := bulkStore(t, b)
		older := newBulkAction(t, b, backend.BulkCancel)
		clk.Advance(time.Second)
		newer := newBulkAction(t, b, backend.BulkDelete)
		page, err := st.ListBulkActions(t.Context(), backend.ListBulkActionsParams{Limit: 1})
		if err != nil || len(page.Data) != 1 || page.Data[0].ID != newer.ID || page.Next == nil {
			t.Fatalf("ListBulkActions(limit 1) = %+v, %v; want the newer action and a next page", page, err)
		}
		page, err = st.ListBulkActions(t.Context(), backend.ListBulkActionsParams{After: *page.Next})
		if err != nil || len(page.Data) != 1 || page.Data[0].ID != older.ID || page.Data[0].Query != older.Query {
			t.Fatalf("ListBulkActions(next) = %+v, %v; want the older action", page, err)
		}
		_, err = st.GetBulkAction(t.Context(), "bulk_missing")
		requireErrorIs(t, "GetBulkAction of a missing action", err, backend.ErrBulkActionNotFound)
		_, err = st.CreateBulkAction(t.Context(), backend.CreateBulkActionParams{ID: "bulk_x", Operation: "explode"})
		requireErrorIs(t, "CreateBulkAction of an unknown operation", err, backend.ErrInvalidArgument)
	})
}
