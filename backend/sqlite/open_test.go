package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
)

func TestOpenCreatesTheSchemaAtVersionFive(t *testing.T) {
	b, path := openTest(t, nil)
	rows, err := b.db.QueryContext(t.Context(), `SELECT "version" FROM "openworkflow_migrations" ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var versions []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if fmt.Sprint(versions) != "[0 1 2 3 4 5]" {
		t.Fatalf("versions = %v, want [0 1 2 3 4 5]", versions)
	}
	var mode string
	if err := b.db.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	// Reopening applies nothing and keeps the data.
	r := mustCreate(t, b, backend.CreateWorkflowRunParams{})
	b2 := openAt(t, path, nil, false)
	if _, err := b2.GetWorkflowRun(t.Context(), r.ID); err != nil {
		t.Fatalf("reopened backend lost run: %v", err)
	}
}

func TestConcurrentOpenersOfAFreshFileMigrateOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fresh.db")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			b, err := open(context.Background(), path, Options{}, false)
			if err != nil {
				errs <- err
				return
			}
			_, err = b.CreateWorkflowRun(context.Background(), backend.CreateWorkflowRunParams{WorkflowName: "wf"})
			errs <- errors.Join(err, b.Close())
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
}

func TestInMemoryDatabaseWorks(t *testing.T) {
	b, err := Open(t.Context(), ":memory:", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r := mustCreate(t, b, backend.CreateWorkflowRunParams{})
	mustClaim(t, b, time.Minute, "w")
	if _, err := backendtest.Single(b).CompleteStepAttempt(t.Context(), backendtest.CompleteStepAttemptParams{WorkflowRunID: r.ID, StepAttemptID: "step_x", WorkerID: "w"}); !errors.Is(err, backend.ErrStepNotFound) {
		t.Fatalf("complete a missing step: err = %v, want ErrStepNotFound", err)
	}
	done, err := backendtest.Single(b).CompleteWorkflowRun(t.Context(), backendtest.CompleteWorkflowRunParams{WorkflowRunID: r.ID, WorkerID: "w"})
	if err != nil || done.Status != backend.RunCompleted || string(done.Output) != "null" {
		t.Fatalf("complete = %+v, %v", done, err)
	}
}

// TestOpenRefusesANamespaceNoRowCouldCarry: a namespace id is a run's
// field like its workflow name (issue 19): text of at most 255 bytes.
func TestOpenRefusesANamespaceNoRowCouldCarry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ow.db")
	for _, ns := range []string{strings.Repeat("n", backend.MaxNamespaceIDLength+1), "ns\xff", "ns\x00"} {
		_, err := Open(context.Background(), path, Options{NamespaceID: ns})
		var fe *backend.FieldError
		if !errors.As(err, &fe) || fe.Field != "namespace" || !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("Open with namespace %.40q: %v; want a FieldError on namespace", ns, err)
		}
	}
}
