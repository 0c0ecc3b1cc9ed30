package backendtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// errRollback makes inTx roll back.
var errRollback = errors.New("roll back")

// txStarter returns b's TxStarter, skipping the test when b has none or
// the harness cannot make transactions.
func (s *suite) txStarter(t testing.TB, b backend.Backend) backend.TxStarter {
	t.Helper()
	ts, ok := b.(backend.TxStarter)
	if !ok {
		t.Skip("the backend does not implement backend.TxStarter")
	}
	if s.h.InTx == nil {
		t.Skip("Harness.InTx is nil: cannot make the backend's transactions")
	}
	return ts
}

// inTx runs fn in one of b's transactions (Harness.InTx): committed when
// fn returns nil, rolled back when it returns errRollback (not an error
// of the test).
func (s *suite) inTx(t testing.TB, b backend.Backend, fn func(ctx context.Context, tx any) error) {
	t.Helper()
	if err := s.h.InTx(t, b, fn); err != nil && !errors.Is(err, errRollback) {
		t.Fatalf("transaction: %v", err)
	}
}

func testCreateWorkflowRunTx(t *testing.T, s *suite) {
	t.Run("a run started in a transaction exists once it commits, and not before", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ts := s.txStarter(t, b)
		ch := subscribe(t, b)
		var run *backend.WorkflowRun
		s.inTx(t, b, func(ctx context.Context, tx any) error {
			var err error
			run, err = ts.CreateWorkflowRunTx(ctx, tx, backend.CreateWorkflowRunParams{WorkflowName: "tx", Input: []byte(`{"order":7}`)})
			if err != nil {
				return err
			}
			if _, err := b.GetWorkflowRun(t.Context(), run.ID); !errors.Is(err, backend.ErrRunNotFound) {
				t.Errorf("GetWorkflowRun before the commit = %v, want ErrRunNotFound: the run must not be seen before its transaction commits", err)
			}
			select {
			case e := <-ch:
				t.Errorf("event %+v before the commit, want none until the transaction commits", e)
			case <-time.After(100 * time.Millisecond):
			}
			return nil
		})
		awaitEvent(t, ch, "EventWorkAvailable after the commit", isWork)
		got := getRun(t, b, run.ID)
		if got.Status != backend.RunPending || got.WorkflowName != "tx" {
			t.Fatalf("the committed run = %+v, want a pending run of tx", got)
		}
		requireJSON(t, "input", got.Input, []byte(`{"order":7}`))
		claimRun(t, b, newWorkerID(), longLease, run.ID)
	})

	t.Run("a run started in a transaction that rolls back never exists", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ts := s.txStarter(t, b)
		var run *backend.WorkflowRun
		s.inTx(t, b, func(ctx context.Context, tx any) error {
			var err error
			if run, err = ts.CreateWorkflowRunTx(ctx, tx, backend.CreateWorkflowRunParams{WorkflowName: "tx"}); err != nil {
				return err
			}
			return errRollback
		})
		if run == nil {
			t.Fatal("CreateWorkflowRunTx returned no run")
		}
		if _, err := b.GetWorkflowRun(t.Context(), run.ID); !errors.Is(err, backend.ErrRunNotFound) {
			t.Fatalf("GetWorkflowRun after the rollback = %v, want ErrRunNotFound", err)
		}
		requireNothingClaimable(t, b)
		if counts, err := b.CountWorkflowRuns(t.Context()); err != nil || counts.Total() != 0 {
			t.Fatalf("CountWorkflowRuns after the rollback = %+v, %v; want no run", counts, err)
		}
	})

	t.Run("an idempotency key finds the run of the same transaction, and of a committed one after it", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ts := s.txStarter(t, b)
		key := "order-7"
		p := backend.CreateWorkflowRunParams{WorkflowName: "tx", IdempotencyKey: &key}
		var first *backend.WorkflowRun
		s.inTx(t, b, func(ctx context.Context, tx any) error {
			var err error
			if first, err = ts.CreateWorkflowRunTx(ctx, tx, p); err != nil {
				return err
			}
			again, err := ts.CreateWorkflowRunTx(ctx, tx, p)
			if err != nil {
				return err
			}
			if again.ID != first.ID || first.Reused || !again.Reused {
				t.Errorf("a second keyed start in the same transaction made run %s (Reused %v; the first's %v), want %s, Reused", again.ID, again.Reused, first.Reused, first.ID)
			}
			return nil
		})
		if got := createRun(t, b, p); got.ID != first.ID || !got.Reused {
			t.Fatalf("a keyed start after the commit made run %s (Reused %v), want the committed %s, Reused", got.ID, got.Reused, first.ID)
		}
	})

	t.Run("a transaction of the wrong kind, or bad params, are refused", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ts := s.txStarter(t, b)
		for _, tx := range []any{nil, "a string", struct{}{}} {
			_, err := ts.CreateWorkflowRunTx(t.Context(), tx, backend.CreateWorkflowRunParams{WorkflowName: "tx"})
			requireErrorIs(t, "CreateWorkflowRunTx with a wrong transaction", err, backend.ErrInvalidArgument)
		}
		s.inTx(t, b, func(ctx context.Context, tx any) error {
			_, err := ts.CreateWorkflowRunTx(ctx, tx, backend.CreateWorkflowRunParams{})
			requireErrorIs(t, "CreateWorkflowRunTx without a workflow name", err, backend.ErrInvalidArgument)
			return nil
		})
		requireNothingClaimable(t, b)
	})
}
