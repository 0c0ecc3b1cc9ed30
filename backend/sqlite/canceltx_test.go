package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"
)

// A write whose context ends while its transaction is open fails as the
// context's error, not as database/sql's "transaction has already been
// committed or rolled back" (database/sql rolls the transaction back the
// moment the context ends, and the next statement on it gets ErrTxDone).
// Callers such as the pruner tell "stopped" from "failed" by it.
func TestWriteCanceledMidTransactionFailsAsContextCanceled(t *testing.T) {
	b, _ := openTest(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err := b.write(ctx, func(tx *txn, _ time.Time, _ *events) error {
		if _, err := tx.ExecContext(ctx, "SELECT 1"); err != nil {
			return err
		}
		cancel()
		// database/sql's rollback on cancel runs in its own goroutine;
		// wait until the transaction is gone.
		for i := 0; i < 1000; i++ {
			_, err := tx.ExecContext(context.WithoutCancel(ctx), "SELECT 1")
			if err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		t.Error("the transaction was still open 1 s after its context was canceled")
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want one wrapping context.Canceled", err)
	}
	if !errors.Is(err, sql.ErrTxDone) {
		t.Errorf("err = %v, want it to keep database/sql's ErrTxDone too", err)
	}
}
