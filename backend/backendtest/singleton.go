package backendtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// Singleton: at most one active run per (workflow, singleton key), decided
// when a run is created (backend.Singleton, reference §10.2).
func testSingleton(t *testing.T, s *suite) {
	single := func(key string, mode backend.SingletonMode) *backend.Singleton {
		return &backend.Singleton{Key: key, Mode: mode}
	}
	held := func(t *testing.T, b backend.Backend, id string) {
		t.Helper()
		r := getRun(t, b, id)
		if r.Status != backend.RunPending || r.AvailableAt != nil || r.QueuedAt != nil {
			t.Fatalf("run %s: status %s, available at %v, queued at %v; want pending and held (neither set)", id, r.Status, r.AvailableAt, r.QueuedAt)
		}
	}

	t.Run("skip returns the key's active run and creates nothing; other keys and workflows are apart", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		first := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: single("k", backend.SingletonSkip)})
		if first.SingletonSkipped {
			t.Fatal("the first run of the key is marked skipped")
		}
		again := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: single("k", backend.SingletonSkip)})
		if again.ID != first.ID || !again.SingletonSkipped {
			t.Fatalf("second skip start returned run %s (skipped %v), want run %s, skipped", again.ID, again.SingletonSkipped, first.ID)
		}
		other := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: single("k2", backend.SingletonSkip)})
		otherWF := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf2", Singleton: single("k", backend.SingletonSkip)})
		plain := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
		for _, r := range []*backend.WorkflowRun{other, otherWF, plain} {
			if r.ID == first.ID || r.SingletonSkipped {
				t.Fatalf("a start of another key, workflow or none returned %s (skipped %v), want a new run", r.ID, r.SingletonSkipped)
			}
		}
		// A sleeping (parked) run is active too; a finished one is not.
		w := newWorkerID()
		claimed := claim(t, b, longLease, w, newWorkerID(), newWorkerID(), newWorkerID())
		if len(claimed) != 4 {
			t.Fatalf("claimed %d runs, want the 4 created", len(claimed))
		}
		owner := ""
		for _, r := range claimed {
			if r.ID == first.ID {
				owner = *r.WorkerID
			}
		}
		park(t, b, first.ID, owner, time.Now().Add(time.Hour))
		if r := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: single("k", backend.SingletonSkip)}); r.ID != first.ID {
			t.Fatalf("skip start while the key's run sleeps created run %s, want run %s returned", r.ID, first.ID)
		}
		cancelRun(t, b, first.ID)
		next := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: single("k", backend.SingletonSkip)})
		if next.ID == first.ID || next.SingletonSkipped {
			t.Fatalf("skip start after the key's run ended returned %s (skipped %v), want a new run", next.ID, next.SingletonSkipped)
		}
	})

	t.Run("queue holds runs behind the active one and releases them one at a time, FIFO, on any end", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		q := func() *backend.WorkflowRun {
			clk.Advance(time.Millisecond)
			return createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: single("k", backend.SingletonQueue)})
		}
		first, second, third, fourth := q(), q(), q(), q()
		if first.AvailableAt == nil {
			t.Fatalf("the key's first run is held (%+v), want it due", first)
		}
		for _, r := range []*backend.WorkflowRun{second, third, fourth} {
			held(t, b, r.ID)
		}
		w := newWorkerID()
		got := claim(t, b, longLease, w, newWorkerID(), newWorkerID())
		if len(got) != 1 || got[0].ID != first.ID {
			t.Fatalf("claim took %v, want only the key's first run %s", runIDs(got), first.ID)
		}
		completeRun(t, b, first.ID, w, `1`)
		held(t, b, third.ID)
		held(t, b, fourth.ID)
		w2 := newWorkerID()
		claimRun(t, b, w2, longLease, second.ID)
		requireNothingClaimable(t, b)
		failRun(t, b, second.ID, w2, `{"message":"x"}`)
		// A held run canceled releases nothing: the key's released run
		// (third) is still active.
		w3 := newWorkerID()
		claimRun(t, b, w3, longLease, third.ID)
		cancelRun(t, b, fourth.ID)
		requireNothingClaimable(t, b)
		fifth := q()
		held(t, b, fifth.ID)
		cancelRun(t, b, third.ID)
		claimRun(t, b, newWorkerID(), longLease, fifth.ID)
	})

	t.Run("cancel cancels every active run of the key, held ones too, and creates the run", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		running := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: single("k", backend.SingletonQueue)})
		queued := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: single("k", backend.SingletonQueue)})
		held(t, b, queued.ID)
		other := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: single("other", backend.SingletonQueue)})
		fresh := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: single("k", backend.SingletonCancel)})
		if fresh.AvailableAt == nil || fresh.ID == running.ID || fresh.ID == queued.ID {
			t.Fatalf("cancel start returned %+v, want a new due run", fresh)
		}
		for _, id := range []string{running.ID, queued.ID} {
			if r := getRun(t, b, id); r.Status != backend.RunCanceled {
				t.Fatalf("run %s of the key is %s after a cancel start, want canceled", id, r.Status)
			}
		}
		if r := getRun(t, b, other.ID); r.Status != backend.RunPending {
			t.Fatalf("run %s of another key is %s, want pending", other.ID, r.Status)
		}
		// The canceled run's worker is fenced off at its next write.
		_, err := Single(b).CompleteWorkflowRun(t.Context(), CompleteWorkflowRunParams{WorkflowRunID: running.ID, WorkerID: w, Output: rawOrNil(`1`)})
		requireErrorIs(t, "completing the canceled run", err, backend.ErrNotOwner)
	})

	t.Run("a held run stays held through a pause and resume", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		pauser, ok := b.(backend.RunPauser)
		if !ok {
			t.Skip("backend does not pause runs")
		}
		first := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: single("k", backend.SingletonQueue)})
		second := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: single("k", backend.SingletonQueue)})
		if _, err := pauser.PauseWorkflowRun(t.Context(), backend.PauseWorkflowRunParams{WorkflowRunID: second.ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := pauser.ResumeWorkflowRun(t.Context(), backend.ResumeWorkflowRunParams{WorkflowRunID: second.ID, MarkID: id.New(id.PrefixStep)}); err != nil {
			t.Fatal(err)
		}
		held(t, b, second.ID)
		claimRun(t, b, newWorkerID(), longLease, first.ID)
		requireNothingClaimable(t, b)
	})

	t.Run("a singleton start in the caller's transaction: rolled back, it leaves nothing; committed, it is the key's run", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ts := s.txStarter(t, b)
		p := backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: single("k", backend.SingletonSkip)}
		s.inTx(t, b, func(ctx context.Context, tx any) error {
			if _, err := ts.CreateWorkflowRunTx(ctx, tx, p); err != nil {
				return err
			}
			return errRollback
		})
		var inTx *backend.WorkflowRun
		s.inTx(t, b, func(ctx context.Context, tx any) (err error) {
			inTx, err = ts.CreateWorkflowRunTx(ctx, tx, p)
			return err
		})
		if inTx.SingletonSkipped {
			t.Fatal("the start in a transaction was skipped, though the rolled-back start left no run")
		}
		if r := createRun(t, b, p); r.ID != inTx.ID || !r.SingletonSkipped {
			t.Fatalf("a skip start after the commit returned %s (skipped %v), want run %s", r.ID, r.SingletonSkipped, inTx.ID)
		}
	})

	t.Run("a released run of a limited workflow waits for admission", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ls, ok := b.(backend.LimitStore)
		if !ok {
			t.Skip("backend stores no limits")
		}
		if _, err := ls.PutWorkflowLimits(t.Context(), "limited", backend.Limits{ConcurrencyPerKey: 5}); err != nil {
			t.Fatal(err)
		}
		p := backend.CreateWorkflowRunParams{WorkflowName: "limited", Singleton: single("k", backend.SingletonQueue)}
		first := createRun(t, b, p)
		second := createRun(t, b, p)
		if first.QueuedAt == nil {
			t.Fatalf("the key's first run does not wait for admission: %+v", first)
		}
		held(t, b, second.ID)
		admit := func() []*backend.WorkflowRun {
			runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{
				WorkerIDs: []string{newWorkerID(), newWorkerID()}, LeaseDuration: longLease, Admit: []string{"limited"}})
			if err != nil {
				t.Fatal(err)
			}
			return runs
		}
		got := admit()
		if len(got) != 1 || got[0].ID != first.ID {
			t.Fatalf("the admitting claim took %v, want only %s", runIDs(got), first.ID)
		}
		completeRun(t, b, first.ID, *got[0].WorkerID, `1`)
		if r := getRun(t, b, second.ID); r.QueuedAt == nil || r.AvailableAt != nil {
			t.Fatalf("the released run of a limited workflow: queued at %v, available at %v; want waiting for admission", r.QueuedAt, r.AvailableAt)
		}
		if got := admit(); len(got) != 1 || got[0].ID != second.ID {
			t.Fatalf("the admitting claim took %v, want the released run %s", runIDs(got), second.ID)
		}
	})

	t.Run("bad singletons and batches are refused, nothing created", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		for _, sg := range []*backend.Singleton{{Key: "k", Mode: "drop"}, {Key: "k"}, {Key: "a\x00b", Mode: backend.SingletonSkip}} {
			_, err := b.CreateWorkflowRun(t.Context(), backend.CreateWorkflowRunParams{WorkflowName: "wf", Singleton: sg})
			requireErrorIs(t, fmt.Sprintf("singleton %+v", *sg), err, backend.ErrInvalidArgument)
		}
		_, err := b.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{
			{WorkflowName: "wf"}, {WorkflowName: "wf", Singleton: single("k", backend.SingletonSkip)}})
		requireErrorIs(t, "a batch with a singleton", err, backend.ErrSingletonBatch)
		requireNothingClaimable(t, b)
	})

	t.Run("concurrent starts never make two active runs of a key", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace()
		const starters, each = 3, 8
		for _, mode := range []backend.SingletonMode{backend.SingletonSkip, backend.SingletonQueue, backend.SingletonCancel} {
			t.Run(string(mode), func(t *testing.T) {
				var wg sync.WaitGroup
				errs := make(chan error, starters*each)
				created := make(chan string, starters*each)
				wf := "wf-" + string(mode)
				for range starters {
					sb := s.backendIn(t, ns) // a backend (pool) of its own, as another process
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range each {
							r, err := sb.CreateWorkflowRun(t.Context(), backend.CreateWorkflowRunParams{WorkflowName: wf, Singleton: single("k", mode)})
							if err != nil {
								errs <- err
								return
							}
							if !r.SingletonSkipped {
								created <- r.ID
							}
						}
					}()
				}
				wg.Wait()
				close(errs)
				close(created)
				for err := range errs {
					t.Fatal(err)
				}
				b := s.backendIn(t, ns)
				var ids []string
				for id := range created {
					ids = append(ids, id)
				}
				due := 0
				active := 0
				for _, id := range ids {
					r := getRun(t, b, id)
					if r.Status == backend.RunPending {
						active++
						if r.AvailableAt != nil {
							due++
						}
					}
				}
				switch mode {
				case backend.SingletonSkip:
					if len(ids) != 1 || active != 1 {
						t.Fatalf("skip: %d runs created (%d active), want 1", len(ids), active)
					}
				case backend.SingletonQueue:
					if len(ids) != starters*each || due != 1 {
						t.Fatalf("queue: %d runs created, %d due; want %d created, 1 due", len(ids), due, starters*each)
					}
				case backend.SingletonCancel:
					if len(ids) != starters*each || active != 1 {
						t.Fatalf("cancel: %d runs created, %d active; want %d created, 1 active", len(ids), active, starters*each)
					}
				}
			})
		}
	})
}
