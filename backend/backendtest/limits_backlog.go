package backendtest

import (
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// testLimitBacklog (issue 19, item 11): limits apply to every run of the
// workflow from the moment they are stored, the backlog queued before
// included, and a declaration that replaces different limits is recorded.
func testLimitBacklog(t *testing.T, s *suite) {
	limitStore := func(t *testing.T, b backend.Backend) backend.LimitStore {
		t.Helper()
		ls, ok := b.(backend.LimitStore)
		if !ok {
			t.Skip("the backend does not implement backend.LimitStore")
		}
		return ls
	}
	admitClaim := func(t *testing.T, b backend.Backend, name string, n int) []*backend.WorkflowRun {
		t.Helper()
		ids := make([]string, n)
		for i := range ids {
			ids[i] = newWorkerID()
		}
		runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{WorkerIDs: ids, LeaseDuration: longLease, Admit: []string{name}})
		if err != nil {
			t.Fatalf("ClaimWorkflowRuns admitting %s: %v", name, err)
		}
		return runs
	}

	t.Run("runs queued before the limits were stored wait for admission, and runs already started hold slots", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ls := limitStore(t, b)
		w := newWorkerID()
		started := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "backlog", ConcurrencyKey: ptr("a")})
		var queued []*backend.WorkflowRun
		for range 6 {
			clk.Advance(time.Millisecond)
			queued = append(queued, createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "backlog"}))
		}
		delayed := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "backlog", AvailableAt: ptr(clk.Now().Add(time.Hour))})
		other := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "unlimited"})
		clk.Advance(time.Second)

		if changed, err := ls.PutWorkflowLimits(t.Context(), "backlog", backend.Limits{Concurrency: 2}); err != nil || !changed {
			t.Fatalf("PutWorkflowLimits = %v, %v; want stored", changed, err)
		}
		for _, r := range append(queued, delayed) {
			got := getRun(t, b, r.ID)
			if got.Status != backend.RunPending || got.AvailableAt != nil || got.QueuedAt == nil || !got.QueuedAt.Equal(*r.AvailableAt) {
				t.Fatalf("run %s queued before the limits: %s, available_at %v, queued_at %v; want pending, waiting for admission from %v",
					r.ID, got.Status, got.AvailableAt, got.QueuedAt, r.AvailableAt)
			}
		}
		if got := getRun(t, b, started.ID); got.AdmittedAt == nil || !got.AdmittedAt.Equal(*started.StartedAt) {
			t.Fatalf("run %s running when the limits were stored: admitted_at %v, want its started_at %v (it holds a slot)", started.ID, got.AdmittedAt, started.StartedAt)
		}
		// A claim that does not admit the workflow takes only the other
		// workflow's run; one that admits it takes one run: the limit is
		// 2 and the run already started holds a slot.
		if runs := claim(t, b, longLease, newWorkerID(), newWorkerID(), newWorkerID()); len(runs) != 1 || runs[0].ID != other.ID {
			t.Fatalf("a claim that does not admit the workflow took %v, want only %s", runIDs(runs), other.ID)
		}
		runs := admitClaim(t, b, "backlog", 10)
		if len(runs) != 1 || runs[0].ID != queued[0].ID {
			t.Fatalf("the admitting claim took %v, want the first queued run %s alone (limit 2, one run already started)", runIDs(runs), queued[0].ID)
		}
		if runs := admitClaim(t, b, "backlog", 10); len(runs) != 0 {
			t.Fatalf("took %v with both slots held", runIDs(runs))
		}
		completeRun(t, b, started.ID, w, `1`)
		if runs := admitClaim(t, b, "backlog", 10); len(runs) != 1 || runs[0].ID != queued[1].ID {
			t.Fatalf("after the started run finished the admitting claim took %v, want %s", runIDs(runs), queued[1].ID)
		}
		// Stored again unchanged, nothing moves; removed, the waiting
		// runs are released as before.
		if changed, err := ls.PutWorkflowLimits(t.Context(), "backlog", backend.Limits{Concurrency: 2}); err != nil || changed {
			t.Fatalf("PutWorkflowLimits again = %v, %v; want unchanged", changed, err)
		}
		if n, err := ls.DeleteWorkflowLimits(t.Context(), "backlog"); err != nil || n != 5 {
			t.Fatalf("DeleteWorkflowLimits = %d, %v; want 5 runs released (4 queued, 1 delayed)", n, err)
		}
	})

	t.Run("a declaration replacing different limits records them and who declared them", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ls := limitStore(t, b)
		d, ok := b.(backend.LimitDeclarer)
		if !ok {
			t.Fatalf("%T implements backend.LimitStore but not backend.LimitDeclarer", b)
		}
		declare := func(l backend.Limits, by string) (*backend.ReplacedLimits, bool) {
			t.Helper()
			replaced, changed, err := d.DeclareWorkflowLimits(t.Context(), "wf", l, by)
			if err != nil {
				t.Fatalf("DeclareWorkflowLimits(%+v, %q): %v", l, by, err)
			}
			return replaced, changed
		}
		list := func() backend.WorkflowLimits {
			t.Helper()
			got, err := ls.ListWorkflowLimits(t.Context())
			if err != nil || len(got) != 1 {
				t.Fatalf("ListWorkflowLimits = %+v, %v; want one row", got, err)
			}
			return got[0]
		}
		if replaced, changed := declare(backend.Limits{Concurrency: 2}, "worker-a (wf@v1)"); replaced != nil || !changed {
			t.Fatalf("first declaration: replaced %+v, changed %v; want nothing replaced, stored", replaced, changed)
		}
		if got := list(); got.DeclaredBy != "worker-a (wf@v1)" || got.Replaced != nil || got.Concurrency != 2 {
			t.Fatalf("stored %+v (replaced %+v); want concurrency 2 declared by worker-a, nothing replaced", got, got.Replaced)
		}
		if replaced, changed := declare(backend.Limits{Concurrency: 2}, "worker-c (wf@v1)"); replaced != nil || changed {
			t.Fatalf("the same limits declared again: replaced %+v, changed %v; want nothing", replaced, changed)
		}
		clk.Advance(time.Minute)
		replaced, changed := declare(backend.Limits{ConcurrencyPerKey: 1, RateLimit: 5, RatePeriod: time.Second}, "worker-b (wf@v2)")
		want := backend.ReplacedLimits{Limits: backend.Limits{Concurrency: 2}, DeclaredBy: "worker-a (wf@v1)", At: ms(clk.Now())}
		if !changed || replaced == nil || *replaced != want {
			t.Fatalf("conflicting declaration: replaced %+v, changed %v; want %+v", replaced, changed, want)
		}
		got := list()
		if got.DeclaredBy != "worker-b (wf@v2)" || got.Replaced == nil || *got.Replaced != want ||
			got.Limits != (backend.Limits{ConcurrencyPerKey: 1, RateLimit: 5, RatePeriod: time.Second}) {
			t.Fatalf("stored %+v (replaced %+v); want v2's limits declared by worker-b, replacing %+v", got, got.Replaced, want)
		}
		if _, _, err := d.DeclareWorkflowLimits(t.Context(), "wf", backend.Limits{}, "worker-d"); err == nil {
			t.Error("declaring zero limits succeeded; a declaration never removes limits")
		}
	})
}
