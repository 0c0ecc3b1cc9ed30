package backendtest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

func listRuns(t testing.TB, b backend.Backend, p backend.ListWorkflowRunsParams) *backend.Page[backend.WorkflowRun] {
	t.Helper()
	page, err := b.ListWorkflowRuns(t.Context(), p)
	if err != nil {
		t.Fatalf("ListWorkflowRuns(%+v): %v", p, err)
	}
	return page
}

func pageRunIDs(p *backend.Page[backend.WorkflowRun]) []string {
	ids := make([]string, len(p.Data))
	for i, r := range p.Data {
		ids[i] = r.ID
	}
	return ids
}

func requireIDs(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// requireCursors checks which of a page's cursors are set.
func requireCursors[T any](t testing.TB, what string, p *backend.Page[T], wantNext, wantPrev bool) {
	t.Helper()
	if (p.Next != nil) != wantNext || (p.Prev != nil) != wantPrev {
		t.Fatalf("%s: next set = %v, prev set = %v; want %v, %v", what, p.Next != nil, p.Prev != nil, wantNext, wantPrev)
	}
}

// createRuns creates n runs of workflow name and returns their ids, oldest
// first.
func createRuns(t testing.TB, b backend.Backend, n int, name string) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: name}).ID
	}
	return ids
}

func reversed(ids []string) []string {
	r := slices.Clone(ids)
	slices.Reverse(r)
	return r
}

// requirePaginates walks the run list forward with After and back with
// Before in pages of p.Limit, checking each page against want (the whole
// list in order) and which cursors are set.
func requirePaginates(t testing.TB, b backend.Backend, p backend.ListWorkflowRunsParams, want []string) {
	t.Helper()
	list := func(after, before string) ([]string, *string, *string) {
		q := p
		q.After, q.Before = after, before
		page := listRuns(t, b, q)
		return pageRunIDs(page), page.Next, page.Prev
	}
	requirePages(t, list, p.Limit, want)
}

// requirePages is requirePaginates for any list: list returns one page's
// ids and its next and prev cursors.
func requirePages(t testing.TB, list func(after, before string) (ids []string, next, prev *string), limit int, want []string) {
	t.Helper()
	type page struct {
		ids        []string
		next, prev *string
	}
	var pages []page
	after := ""
	for i := 0; ; i++ {
		ids, next, prev := list(after, "")
		what := fmt.Sprintf("page %d (limit %d) going forward", i, limit)
		lo, hi := min(i*limit, len(want)), min((i+1)*limit, len(want))
		requireIDs(t, what, ids, want[lo:hi])
		if (next != nil) != (hi < len(want)) || (prev != nil) != (i > 0) {
			t.Fatalf("%s: next set = %v, prev set = %v; want %v, %v", what, next != nil, prev != nil, hi < len(want), i > 0)
		}
		pages = append(pages, page{ids, next, prev})
		if next == nil {
			break
		}
		after = *next
	}
	for i := len(pages) - 1; i > 0; i-- {
		ids, next, prev := list("", *pages[i].prev)
		what := fmt.Sprintf("page %d (limit %d) going back", i-1, limit)
		requireIDs(t, what, ids, pages[i-1].ids)
		if next == nil || (prev != nil) != (i-1 > 0) {
			t.Fatalf("%s: next set = %v, prev set = %v; want true, %v", what, next != nil, prev != nil, i-1 > 0)
		}
	}
}

func testListWorkflowRuns(t *testing.T, s *suite) {
	t.Run("lists runs newest first", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ids := createRuns(t, b, 3, "wf")
		page := listRuns(t, b, backend.ListWorkflowRunsParams{})
		requireIDs(t, "listed runs", pageRunIDs(page), reversed(ids))
		requireCursors(t, "the only page", page, false, false)
		requireRun(t, "listed run", &page.Data[2], getRun(t, b, ids[0]))
	})

	t.Run("returns an empty page without cursors when there are no runs", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		page := listRuns(t, b, backend.ListWorkflowRunsParams{})
		if page.Data == nil || len(page.Data) != 0 {
			t.Fatalf("listed %#v in an empty namespace, want an empty, non-nil list", page.Data)
		}
		requireCursors(t, "empty page", page, false, false)
	})

	t.Run("paginates forward with After and back with Before", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ids := createRuns(t, b, 5, "wf")
		requirePaginates(t, b, backend.ListWorkflowRunsParams{Limit: 2}, reversed(ids))
	})

	t.Run("has no next page when the last page is exactly full", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ids := createRuns(t, b, 4, "wf")
		requirePaginates(t, b, backend.ListWorkflowRunsParams{Limit: 2}, reversed(ids))
	})

	t.Run("paginates with the id as tiebreaker among runs with the same created_at", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		tied := createRuns(t, b, 5, "wf")
		var oldest time.Time
		for i, id := range tied {
			if c := getRun(t, b, id).CreatedAt; i == 0 || c.Before(oldest) {
				oldest = c
			}
		}
		same := oldest.Add(-time.Hour)
		for _, id := range tied {
			s.ageRun(t, b, id, getRun(t, b, id).CreatedAt.Sub(same))
			if got := getRun(t, b, id).CreatedAt; !got.Equal(same) {
				t.Fatalf("AgeRun: created_at of %s = %v, want %v", id, got, same)
			}
		}
		newer := createRuns(t, b, 2, "wf")
		want := append(reversed(newer), slices.Sorted(slices.Values(tied))...)
		slices.Reverse(want[len(newer):])
		requirePaginates(t, b, backend.ListWorkflowRunsParams{Limit: 2}, want)
		requirePaginates(t, b, backend.ListWorkflowRunsParams{Limit: 3}, want)
	})

	t.Run("returns 100 runs per page when no limit is given", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ids := createRuns(t, b, backend.DefaultPageSize+1, "wf")
		page := listRuns(t, b, backend.ListWorkflowRunsParams{})
		requireIDs(t, "first page", pageRunIDs(page), reversed(ids)[:backend.DefaultPageSize])
		requireCursors(t, "first page", page, true, false)
	})

	t.Run("filters", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		worker := newWorkerID()
		// Oldest first: order/completed, invoice/completed, order/pending,
		// invoice/pending, order/pending.
		orderDone := startRun(t, b, worker, backend.CreateWorkflowRunParams{WorkflowName: "order"}).ID
		completeRun(t, b, orderDone, worker, `1`)
		invoiceDone := startRun(t, b, worker, backend.CreateWorkflowRunParams{WorkflowName: "invoice"}).ID
		completeRun(t, b, invoiceDone, worker, `2`)
		order1 := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order"}).ID
		invoice1 := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "invoice"}).ID
		order2 := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order"}).ID

		cases := []struct {
			name   string
			params backend.ListWorkflowRunsParams
			want   []string
		}{
			{"by status", backend.ListWorkflowRunsParams{Status: backend.RunPending}, []string{order2, invoice1, order1}},
			{"by another status", backend.ListWorkflowRunsParams{Status: backend.RunCompleted}, []string{invoiceDone, orderDone}},
			{"by a status no run has", backend.ListWorkflowRunsParams{Status: backend.RunCanceled}, []string{}},
			{"by workflow name", backend.ListWorkflowRunsParams{WorkflowName: "order"}, []string{order2, order1, orderDone}},
			{"by status and workflow name together", backend.ListWorkflowRunsParams{Status: backend.RunPending, WorkflowName: "invoice"}, []string{invoice1}},
			{"by status, one run per page", backend.ListWorkflowRunsParams{Status: backend.RunPending, Limit: 1}, []string{order2, invoice1, order1}},
			{"by workflow name, two runs per page", backend.ListWorkflowRunsParams{WorkflowName: "order", Limit: 2}, []string{order2, order1, orderDone}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				if c.params.Limit == 0 {
					requireIDs(t, "listed runs", pageRunIDs(listRuns(t, b, c.params)), c.want)
					return
				}
				requirePaginates(t, b, c.params, c.want)
			})
		}
	})

	t.Run("filters by creation time, at or after CreatedAfter and before CreatedBefore", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		worker := newWorkerID()
		// One run a second, oldest first: order, invoice, order/completed,
		// invoice, order.
		at := make([]time.Time, 5)
		ids := make([]string, 5)
		for i, name := range []string{"order", "invoice", "order", "invoice", "order"} {
			at[i] = clk.Now()
			ids[i] = createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: name}).ID
			clk.Advance(time.Second)
		}
		claimRun(t, b, worker, longLease, ids[0])
		park(t, b, ids[0], worker, clk.Now().Add(farFuture))
		claimRun(t, b, worker, longLease, ids[1])
		park(t, b, ids[1], worker, clk.Now().Add(farFuture))
		claimRun(t, b, worker, longLease, ids[2])
		completeRun(t, b, ids[2], worker, `1`)
		halfMs := 500 * time.Microsecond

		cases := []struct {
			name          string
			params        backend.ListWorkflowRunsParams
			after, before *time.Time
			want          []string
		}{
			{"after, its own creation time included", backend.ListWorkflowRunsParams{}, &at[2], nil, []string{ids[4], ids[3], ids[2]}},
			{"before, its own creation time excluded", backend.ListWorkflowRunsParams{}, nil, &at[2], []string{ids[1], ids[0]}},
			{"between", backend.ListWorkflowRunsParams{}, &at[1], &at[4], []string{ids[3], ids[2], ids[1]}},
			{"after a time between two milliseconds", backend.ListWorkflowRunsParams{}, ptr(at[2].Add(halfMs)), nil, []string{ids[4], ids[3]}},
			{"before a time between two milliseconds", backend.ListWorkflowRunsParams{}, nil, ptr(at[2].Add(halfMs)), []string{ids[2], ids[1], ids[0]}},
			{"an empty range", backend.ListWorkflowRunsParams{}, &at[3], &at[3], []string{}},
			{"a range before every run", backend.ListWorkflowRunsParams{}, nil, &at[0], []string{}},
			{"a range far off", backend.ListWorkflowRunsParams{}, ptr(at[0].AddDate(-3000, 0, 0)), ptr(at[0].AddDate(9000, 0, 0)), reversed(ids)},
			{"with a status", backend.ListWorkflowRunsParams{Status: backend.RunPending}, &at[1], nil, []string{ids[4], ids[3]}},
			{"with the running status, parked runs included", backend.ListWorkflowRunsParams{Status: backend.RunRunning}, nil, &at[1], []string{ids[0]}},
			{"with a workflow name", backend.ListWorkflowRunsParams{WorkflowName: "order"}, &at[1], &at[4], []string{ids[2]}},
			{"with a status and a workflow name", backend.ListWorkflowRunsParams{Status: backend.RunPending, WorkflowName: "invoice"}, &at[1], nil, []string{ids[3]}},
			{"one run per page", backend.ListWorkflowRunsParams{Limit: 1}, &at[1], &at[4], []string{ids[3], ids[2], ids[1]}},
			{"with a workflow name, one run per page", backend.ListWorkflowRunsParams{WorkflowName: "order", Limit: 1}, &at[0], &at[4], []string{ids[2], ids[0]}},
			{"with a status, two runs per page", backend.ListWorkflowRunsParams{Status: backend.RunPending, Limit: 2}, &at[2], nil, []string{ids[4], ids[3]}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				p := c.params
				p.CreatedAfter, p.CreatedBefore = c.after, c.before
				if p.Limit == 0 {
					requireIDs(t, "listed runs", pageRunIDs(listRuns(t, b, p)), c.want)
					return
				}
				requirePaginates(t, b, p, c.want)
			})
		}
	})

	t.Run("rejects bad cursors and limits out of range with ErrInvalidArgument", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		createRuns(t, b, 3, "wf")
		first := listRuns(t, b, backend.ListWorkflowRunsParams{Limit: 1})
		cases := []struct {
			name   string
			params backend.ListWorkflowRunsParams
		}{
			{"both After and Before", backend.ListWorkflowRunsParams{After: *first.Next, Before: *first.Next}},
			{"a cursor that is not base64", backend.ListWorkflowRunsParams{After: "%%%not-a-cursor%%%"}},
			{"a base64 cursor that is not a list cursor", backend.ListWorkflowRunsParams{Before: "eyJmb28iOjF9"}},
			{"a negative limit", backend.ListWorkflowRunsParams{Limit: -1}},
			{"a limit above the largest page", backend.ListWorkflowRunsParams{Limit: backend.MaxPageSize + 1}},
		}
		for _, c := range cases {
			_, err := b.ListWorkflowRuns(t.Context(), c.params)
			requireErrorIs(t, c.name, err, backend.ErrInvalidArgument)
		}
		page := listRuns(t, b, backend.ListWorkflowRunsParams{Limit: backend.MaxPageSize})
		if len(page.Data) != 3 {
			t.Fatalf("a page of the largest size listed %d runs, want all 3", len(page.Data))
		}
	})
}

func countRuns(t testing.TB, b backend.Backend) backend.RunCounts {
	t.Helper()
	c, err := b.CountWorkflowRuns(t.Context())
	if err != nil {
		t.Fatalf("CountWorkflowRuns: %v", err)
	}
	return c
}

func requireCounts(t testing.TB, what string, b backend.Backend, want backend.RunCounts) {
	t.Helper()
	if got := countRuns(t, b); got != want {
		t.Fatalf("%s: counts = %+v, want %+v", what, got, want)
	}
}

func testCountWorkflowRuns(t *testing.T, s *suite) {
	t.Run("returns zero counts for an empty namespace", func(t *testing.T) {
		t.Parallel()
		requireCounts(t, "empty namespace", s.newBackend(t), backend.RunCounts{})
	})

	t.Run("counts runs per status, parked runs as running", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		completeRun(t, b, startRun(t, b, w, backend.CreateWorkflowRunParams{}).ID, w, `1`)
		failRun(t, b, startRun(t, b, w, backend.CreateWorkflowRunParams{}).ID, w, `{"message":"x"}`)
		cancelRun(t, b, createRun(t, b, backend.CreateWorkflowRunParams{}).ID)
		startRun(t, b, w, backend.CreateWorkflowRunParams{})
		park(t, b, startRun(t, b, w, backend.CreateWorkflowRunParams{}).ID, w, time.Now().Add(farFuture))
		createRuns(t, b, 2, "wf")
		requireCounts(t, "mixed namespace", b, backend.RunCounts{Pending: 2, Running: 2, Completed: 1, Failed: 1, Canceled: 1})
	})

	t.Run("follows runs through their transitions", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		ids := createRuns(t, b, 4, "wf")
		requireCounts(t, "after 4 creates", b, backend.RunCounts{Pending: 4})

		claimed := claim(t, b, longLease, w, w+"-2")
		if len(claimed) != 2 || claimed[0].WorkerID == nil || claimed[1].WorkerID == nil {
			t.Fatalf("claimed %v, want 2 runs with worker ids", runIDs(claimed))
		}
		requireCounts(t, "after claiming 2", b, backend.RunCounts{Pending: 2, Running: 2})

		completeRun(t, b, claimed[0].ID, *claimed[0].WorkerID, `null`)
		requireCounts(t, "after completing 1", b, backend.RunCounts{Pending: 2, Running: 1, Completed: 1})

		failRun(t, b, claimed[1].ID, *claimed[1].WorkerID, `{"message":"x"}`)
		requireCounts(t, "after failing 1", b, backend.RunCounts{Pending: 2, Completed: 1, Failed: 1})

		for _, id := range ids {
			if getRun(t, b, id).Status == backend.RunPending {
				cancelRun(t, b, id)
				break
			}
		}
		requireCounts(t, "after canceling 1", b, backend.RunCounts{Pending: 1, Completed: 1, Failed: 1, Canceled: 1})
	})

	t.Run("moves a retried run from failed to pending, and follows the deadline sweep and a batch start", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		failRun(t, b, r.ID, w, `{"message":"x"}`)
		requireCounts(t, "after the failure", b, backend.RunCounts{Failed: 1})
		retryFailed(t, b, r.ID, ptr(clk.Now().Add(time.Minute)))
		requireCounts(t, "after the retry", b, backend.RunCounts{Pending: 1})
		clk.Advance(time.Hour)
		requireNothingClaimable(t, b) // the sweep fails it past its deadline
		requireCounts(t, "after the deadline sweep", b, backend.RunCounts{Failed: 1})
		batch := make([]backend.CreateWorkflowRunParams, 25)
		for i := range batch {
			batch[i].WorkflowName = "wf"
		}
		if _, err := b.CreateWorkflowRuns(t.Context(), batch); err != nil {
			t.Fatalf("CreateWorkflowRuns: %v", err)
		}
		requireCounts(t, "after a batch of 25", b, backend.RunCounts{Pending: 25, Failed: 1})
	})

	t.Run("stays exact while clients and workers change runs concurrently", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace()
		// Four processes of one namespace: two clients starting and
		// canceling runs, two workers claiming and finishing them.
		clients := []backend.Backend{s.backendIn(t, ns), s.backendIn(t, ns)}
		workers := []backend.Backend{s.backendIn(t, ns), s.backendIn(t, ns)}
		const perClient = 40
		var created atomic.Int64 // runs whose create returned
		var wg sync.WaitGroup
		done := make(chan struct{})
		for _, c := range clients {
			wg.Go(func() {
				for i := range perClient {
					r, err := c.CreateWorkflowRun(t.Context(), backend.CreateWorkflowRunParams{WorkflowName: "wf"})
					if err != nil {
						t.Errorf("create: %v", err)
						return
					}
					created.Add(1)
					if i%5 == 0 {
						if _, err := c.CancelWorkflowRun(t.Context(), r.ID); err != nil && !errors.Is(err, backend.ErrRunTerminal) {
							t.Errorf("cancel %s: %v", r.ID, err)
						}
					}
				}
			})
		}
		var workersWG sync.WaitGroup
		for wi, b := range workers {
			workersWG.Go(func() {
				for n := 0; ; n++ {
					runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{
						WorkerIDs: []string{newWorkerID(), newWorkerID(), newWorkerID()}, LeaseDuration: longLease})
					if err != nil {
						t.Errorf("claim: %v", err)
						return
					}
					if len(runs) == 0 {
						select {
						case <-done:
							return
						case <-time.After(time.Millisecond): // poll again, leaving the clients room
							continue
						}
					}
					groups := make([][]backend.Write, len(runs))
					for i, r := range runs {
						if (n+i+wi)%3 == 0 {
							groups[i] = []backend.Write{failWrite(r.ID, *r.WorkerID, `{"message":"x"}`)}
						} else {
							groups[i] = []backend.Write{completeWrite(r.ID, *r.WorkerID, `1`)}
						}
					}
					for _, err := range b.ApplyWrites(t.Context(), groups) {
						// A run canceled after the claim refuses its write.
						if err != nil && !errors.Is(err, backend.ErrNotOwner) {
							t.Errorf("apply: %v", err)
						}
					}
				}
			})
		}
		// Meanwhile every count covers between the runs created before it
		// began and those whose create had started when it ended.
		reader := s.backendIn(t, ns)
		for {
			lo := created.Load()
			c := countRuns(t, reader)
			hi := created.Load() + int64(len(clients))
			if total := int64(c.Pending + c.Running + c.Completed + c.Failed + c.Canceled); total < lo || total > hi {
				t.Fatalf("a count during the writes totals %d runs (%+v), want between %d and %d", total, c, lo, hi)
			}
			if lo == perClient*int64(len(clients)) {
				break
			}
		}
		wg.Wait()
		close(done)
		workersWG.Wait()
		requireCounts(t, "after the writes", reader, statusesListed(t, reader))
	})
}

// statusesListed counts the namespace's runs per status by listing them
// all: what CountWorkflowRuns must say, found another way.
func statusesListed(t testing.TB, b backend.Backend) backend.RunCounts {
	t.Helper()
	var c backend.RunCounts
	p := backend.ListWorkflowRunsParams{Limit: backend.MaxPageSize}
	for {
		page := listRuns(t, b, p)
		for _, r := range page.Data {
			c.Add(r.Status, 1)
		}
		if page.Next == nil {
			return c
		}
		p.After = *page.Next
	}
}
