package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

func TestBusyErrorsAreRecognised(t *testing.T) {
	a, path := openTest(t, nil)
	// b waits 10 ms at most in SQLite itself, so a 50 ms lock reaches the
	// backend as SQLITE_BUSY and only its own retry (retryBusy, for up to
	// ten busy timeouts) gets past it.
	b, err := open(t.Context(), path, Options{BusyTimeout: 10 * time.Millisecond}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	conn, err := a.db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	// What a second writer gets while the lock is held is a busy error.
	other, err := b.db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, busyErr := other.ExecContext(t.Context(), "BEGIN IMMEDIATE")
	other.Close()
	if !isBusy(busyErr) || isConstraint(busyErr) {
		t.Fatalf("BEGIN IMMEDIATE while another connection writes: %v; want an error isBusy recognises (and not a constraint)", busyErr)
	}
	// Another "process" waits for the lock rather than failing.
	done := make(chan error, 1)
	go func() {
		_, err := b.CreateWorkflowRun(context.Background(), backend.CreateWorkflowRunParams{WorkflowName: "wf"})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if _, err := conn.ExecContext(t.Context(), "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("create while another connection held the write lock: %v", err)
	}
}
