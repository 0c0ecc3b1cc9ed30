package postgres

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
)

// batchRecorder is a pgx tracer that records the SQL of every
// statement sent in a batch.
type batchRecorder struct {
	mu  sync.Mutex
	sql []string
}

func (r *batchRecorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range d.Batch.QueuedQueries {
		r.sql = append(r.sql, q.SQL)
	}
	return ctx
}
func (*batchRecorder) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (*batchRecorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// The query hooks pgx requires of a tracer; single queries are not recorded.
func (*batchRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (*batchRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// sent reports whether a batch sent stmt since the last reset, and resets.
func (r *batchRecorder) sent(stmt string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	found := slices.Contains(r.sql, stmt)
	r.sql = nil
	return found
}

// TestAParkOfOnlySleepsIsNotReconciled checks that ApplyWrites skips the
// reconciliation of a park whose run waits only on sleeps
// (Write.OnlySleeps): a statement and a round trip it could not use, on
// every durable sleep. A park without it is reconciled, as before.
func TestAParkOfOnlySleepsIsNotReconciled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, schema := migratedSchema(t, "ow_sleeps_")
	cfg := admin.Config().Copy()
	rec := &batchRecorder{}
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	b, err := newBackend(pool, Options{Schema: schema, NamespaceID: "n"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateWorkflowRuns(ctx, manyRuns(2)); err != nil {
		t.Fatal(err)
	}
	runs, err := b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: []string{"w", "w"}, LeaseDuration: time.Minute})
	if err != nil || len(runs) != 2 {
		t.Fatalf("claimed %d runs (%v), want 2", len(runs), err)
	}
	for i, onlySleeps := range []bool{true, false} {
		rec.sent("") // reset
		park := backend.Write{Kind: backend.WriteParkRun, WorkflowRunID: runs[i].ID, WorkerID: "w",
			AvailableAt: time.Now().Add(time.Hour), OnlySleeps: onlySleeps}
		if errs := b.ApplyWrites(ctx, [][]backend.Write{{park}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		if got := rec.sent(b.q.ReconcileParkedRuns); got == onlySleeps {
			t.Errorf("a park with OnlySleeps %v sent the reconciliation: %v, want %v", onlySleeps, got, !onlySleeps)
		}
	}
}
