package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

// InTx's function writes through its transaction: a write of the backend
// with InTx's context fails at once instead of waiting for the write lock
// InTx holds, and a transaction InTx did not begin is refused (its commit
// could not wake the workers).
func TestInTxRefusesWritesThatWouldWaitForItAndTransactionsItDidNotBegin(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, filepath.Join(t.TempDir(), "ow.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.InTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf"}); !errors.Is(err, ErrWriteInsideTx) {
			t.Errorf("CreateWorkflowRun inside InTx = %v, want ErrWriteInsideTx", err)
		}
		if err := b.InTx(ctx, func(context.Context, *sql.Tx) error { return nil }); !errors.Is(err, ErrWriteInsideTx) {
			t.Errorf("InTx inside InTx = %v, want ErrWriteInsideTx", err)
		}
		_, err := b.CreateWorkflowRunTx(ctx, tx, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	own, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Rollback()
	if _, err := b.CreateWorkflowRunTx(ctx, own, backend.CreateWorkflowRunParams{WorkflowName: "wf"}); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("CreateWorkflowRunTx with a transaction InTx did not begin = %v, want ErrInvalidArgument", err)
	}
}

func TestCreateWorkflowRunTxRefusesATransactionOfAnotherFile(t *testing.T) {
	ctx := context.Background()
	b, _ := openTest(t, nil)
	other, otherPath := openTest(t, nil)
	err := other.InTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := b.CreateWorkflowRunTx(ctx, tx, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
		if !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("CreateWorkflowRunTx with another file's InTx transaction = %v, want ErrInvalidArgument", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if page, err := other.ListWorkflowRuns(ctx, backend.ListWorkflowRunsParams{}); err != nil || len(page.Data) != 0 {
		t.Fatalf("runs in %s: %v, %v; want none", otherPath, page, err)
	}
}
