package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
	"github.com/openworkflow-go/openworkflow/internal/clock"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// TestConformance runs the shared backend suite against one database file
// (every specification works in its own namespace; backends of one
// namespace share the file as two processes would).
func TestConformance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conformance.db")
	backendtest.Run(t, backendtest.Harness{
		NewBackend: func(t testing.TB, namespaceID string, now func() time.Time) backend.Backend {
			b, err := Open(context.Background(), path, Options{NamespaceID: namespaceID, Now: now})
			if err != nil {
				t.Fatalf("Open(%s): %v", path, err)
			}
			return b
		},
		AgeRun:                    ageRun,
		StoreStatus:               storeStatus,
		StoreScheduleWorkflowName: storeScheduleWorkflowName,
		InTx: func(t testing.TB, b backend.Backend, fn func(ctx context.Context, tx any) error) error {
			return b.(*Backend).InTx(context.Background(), func(ctx context.Context, tx *sql.Tx) error { return fn(ctx, tx) })
		},
	})
}

// execWrite runs one statement as the backend's own writes run: in the
// file's in-process write queue, retried while busy. The conformance
// suite's specifications share one file in parallel, and a statement
// outside that queue could wait past the busy timeout while the queue
// hands the write lock from one backend to the next.
func execWrite(sb *Backend, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := sb.write(context.Background(), func(tx *txn, _ time.Time, _ *events) error {
		var err error
		res, err = tx.ExecContext(context.Background(), query, args...)
		return err
	})
	return res, err
}

// storeStatus writes status as is into a run's status column.
func storeStatus(t testing.TB, b backend.Backend, runID, status string) {
	t.Helper()
	sb := b.(*Backend)
	res, err := execWrite(sb,
		`UPDATE "workflow_runs" SET "status" = ? WHERE "namespace_id" = ? AND "id" = ?`, status, sb.ns, runID)
	if err != nil {
		t.Fatalf("store status of run %s: %v", runID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("store status of run %s: no such run in namespace %s", runID, sb.ns)
	}
}

// storeScheduleWorkflowName writes name as is into a schedule's
// workflow_name.
func storeScheduleWorkflowName(t testing.TB, b backend.Backend, schedule, name string) {
	t.Helper()
	sb := b.(*Backend)
	res, err := execWrite(sb,
		`UPDATE "workflow_schedules" SET "workflow_name" = ? WHERE "namespace_id" = ? AND "name" = ?`, name, sb.ns, schedule)
	if err != nil {
		t.Fatalf("store workflow name of schedule %s: %v", schedule, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("store workflow name of schedule %s: no such schedule in namespace %s", schedule, sb.ns)
	}
}

// ageRun moves a run's created_at back by d.
func ageRun(t testing.TB, b backend.Backend, runID string, d time.Duration) {
	t.Helper()
	sb := b.(*Backend)
	run, err := sb.GetWorkflowRun(context.Background(), runID)
	if err != nil {
		t.Fatalf("age run %s: %v", runID, err)
	}
	_, err = execWrite(sb,
		`UPDATE "workflow_runs" SET "created_at" = ? WHERE "namespace_id" = ? AND "id" = ?`,
		backend.FormatTime(run.CreatedAt.Add(-d)), sb.ns, runID)
	if err != nil {
		t.Fatalf("age run %s: %v", runID, err)
	}
}

// TestTheEmbeddedSQLLoads loads sql/*.sql as Open does: every placeholder
// names a fragment, every fragment and statement is used, and every field
// of queries has its statement.
func TestTheEmbeddedSQLLoads(t *testing.T) {
	if _, err := loadQueries(); err != nil {
		t.Fatal(err)
	}
}

// newFakeClock returns a clock that stands still until the test moves it.
func newFakeClock() *clock.Fake { return clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)) }

// openTest opens a backend on a fresh file, closed when the test ends.
func openTest(t *testing.T, clk *clock.Fake) (*Backend, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sub", "ow.db")
	return openAt(t, path, clk, true), path
}

// openAt opens another backend on path; share=false stands for another
// process (own in-process lock and hub).
func openAt(t *testing.T, path string, clk *clock.Fake, share bool) *Backend {
	t.Helper()
	opts := Options{}
	if clk != nil {
		opts.Now = clk.Now
	}
	b, err := open(t.Context(), path, opts, share)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func mustCreate(t *testing.T, b *Backend, p backend.CreateWorkflowRunParams) *backend.WorkflowRun {
	t.Helper()
	if p.WorkflowName == "" {
		p.WorkflowName = "wf"
	}
	r, err := b.CreateWorkflowRun(t.Context(), p)
	if err != nil {
		t.Fatalf("CreateWorkflowRun: %v", err)
	}
	return r
}

func mustClaim(t *testing.T, b *Backend, lease time.Duration, workers ...string) []*backend.WorkflowRun {
	t.Helper()
	runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{WorkerIDs: workers, LeaseDuration: lease})
	if err != nil {
		t.Fatalf("ClaimWorkflowRuns: %v", err)
	}
	return runs
}

func getRun(t *testing.T, b *Backend, runID string) *backend.WorkflowRun {
	t.Helper()
	r, err := b.GetWorkflowRun(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// steps lists a run's attempts, oldest first.
func steps(t *testing.T, b *Backend, runID string) []backend.StepAttempt {
	t.Helper()
	page, err := b.ListStepAttempts(t.Context(), backend.ListStepAttemptsParams{WorkflowRunID: runID, Limit: backend.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	return page.Data
}

func ids(runs []*backend.WorkflowRun) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// insertCompleted is a WriteInsertStep of a completed attempt.
func insertCompleted(runID, worker, name string, output string) backend.Write {
	return backend.Write{
		Kind: backend.WriteInsertStep, WorkflowRunID: runID, WorkerID: worker,
		Step: &backend.StepAttempt{ID: id.New(id.PrefixStep), StepName: name, Kind: backend.StepFunction, Status: backend.StepCompleted, Output: json.RawMessage(output)},
	}
}

// singles makes each write a group of its own.
func singles(ws ...backend.Write) [][]backend.Write {
	groups := make([][]backend.Write, len(ws))
	for i := range ws {
		groups[i] = ws[i : i+1]
	}
	return groups
}

// waitEvent waits for an event equal to want, ignoring others.
func waitEvent(t *testing.T, ch <-chan backend.Event, want backend.Event) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case e := <-ch:
			// How a finished run ended (Event.Finished) is not compared:
			// a pointer the backend made.
			if e.Finished != nil && want.Finished == nil {
				e.Finished = nil
			}
			if e == want {
				return
			}
		case <-timeout:
			t.Fatalf("no event %+v within 5 s", want)
		}
	}
}
