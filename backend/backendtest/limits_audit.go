package backendtest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// testLimitAudit (issue 19, item 10): the stored times prove the limits.
// Each admitted run holds a slot from its go_admitted_at to its
// finished_at; an audit that reads those two columns must never see more
// runs of a workflow, or of a key, overlap than the limit allows. Those
// times were the transaction's start (PostgreSQL's now()), taken before
// the claim waited for the admission lock, so a run admitted into the slot
// of a run that finished while the claim waited appeared to start before
// that run finished. Runs on the wall clock: the fault is in which clock
// reading is stored.
func testLimitAudit(t *testing.T, s *suite) {
	t.Run("the stored admitted and finished times never overlap more runs than the limits, under concurrent claimers", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace()
		bs := []backend.Backend{s.backendIn(t, ns), s.backendIn(t, ns), s.backendIn(t, ns), s.backendIn(t, ns)}
		ls, ok := bs[0].(backend.LimitStore)
		if !ok {
			t.Skip("the backend does not implement backend.LimitStore")
		}
		const (
			concurrency, perKey = 3, 2
			total               = 160
		)
		if _, err := ls.PutWorkflowLimits(t.Context(), "audited", backend.Limits{Concurrency: concurrency, ConcurrencyPerKey: perKey}); err != nil {
			t.Fatal(err)
		}
		ps := make([]backend.CreateWorkflowRunParams, total)
		for i := range ps {
			ps[i] = backend.CreateWorkflowRunParams{WorkflowName: "audited", ConcurrencyKey: ptr(fmt.Sprint("k", i%2))}
		}
		created, err := bs[0].CreateWorkflowRuns(t.Context(), ps)
		if err != nil {
			t.Fatal(err)
		}
		// Four claimers, each on its own backend, claim and complete at
		// once what they claimed, until every run has finished; a claim
		// that takes nothing tries again (another claimer's completion
		// frees a slot).
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		var finished atomic.Int64
		var wg sync.WaitGroup
		for _, b := range bs {
			wg.Go(func() {
				for finished.Load() < total && ctx.Err() == nil {
					runs, err := b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{
						WorkerIDs: []string{newWorkerID(), newWorkerID()}, LeaseDuration: longLease, Admit: []string{"audited"}})
					if err != nil {
						t.Errorf("claim: %v", err)
						return
					}
					for _, r := range runs {
						if _, err := Single(b).CompleteWorkflowRun(ctx, CompleteWorkflowRunParams{WorkflowRunID: r.ID, WorkerID: *r.WorkerID, Output: rawOrNil(`1`)}); err != nil {
							t.Errorf("complete %s: %v", r.ID, err)
							return
						}
						finished.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if n := finished.Load(); n != total {
			t.Fatalf("%d of %d runs finished before the claimers stopped (%v)", n, total, ctx.Err())
		}

		// The audit: each run's slot is [admitted_at, finished_at), from
		// the stored rows. A finish and an admission at the same
		// millisecond do not overlap.
		type event struct {
			at    time.Time
			delta int // +1 admitted, -1 finished
			key   string
			run   string
		}
		var events []event
		for _, c := range created {
			r := getRun(t, bs[0], c.ID)
			if r.AdmittedAt == nil || r.FinishedAt == nil || r.Status != backend.RunCompleted {
				t.Fatalf("run %s: %s, admitted_at %v, finished_at %v; want completed with both times", r.ID, r.Status, r.AdmittedAt, r.FinishedAt)
			}
			if r.FinishedAt.Before(*r.AdmittedAt) {
				t.Errorf("run %s finished at %v, before its admission at %v", r.ID, r.FinishedAt, r.AdmittedAt)
			}
			events = append(events, event{*r.AdmittedAt, +1, *r.ConcurrencyKey, r.ID}, event{*r.FinishedAt, -1, *r.ConcurrencyKey, r.ID})
		}
		slices.SortStableFunc(events, func(a, b event) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return cmp.Compare(a.delta, b.delta) // finishes first
		})
		all, keys := 0, map[string]int{}
		worst, worstKey := 0, 0
		var breach []string
		for _, e := range events {
			all += e.delta
			keys[e.key] += e.delta
			worst, worstKey = max(worst, all), max(worstKey, keys[e.key])
			if e.delta > 0 && (all > concurrency || keys[e.key] > perKey) && len(breach) < 5 {
				breach = append(breach, fmt.Sprintf("at %s run %s admitted: %d runs hold slots (key %s: %d)",
					e.at.Format(time.RFC3339Nano), e.run, all, e.key, keys[e.key]))
			}
		}
		if worst > concurrency || worstKey > perKey {
			t.Errorf("the stored times show %d runs at once (limit %d), %d of one key (limit %d): %v", worst, concurrency, worstKey, perKey, breach)
		}
		if worst < 2 {
			t.Errorf("the stored times never show two runs at once: the claimers did not run concurrently, so this proves nothing")
		}
	})
}
