package postgres_test

// Benchmarks of the hot paths, run only with -bench, e.g.
//
//	go test ./backend/postgres -run '^$' -bench . -benchmem
//
// Each uses a fresh namespace on the shared pool and deletes its rows at
// the end. "xids/op" counts the transaction ids assigned per operation
// (every committed or aborted write transaction takes one), read from
// pg_current_snapshot on an otherwise quiet server: it is the number of
// commits per operation.

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// benchBackend returns a backend in a fresh namespace whose rows are
// deleted when the benchmark ends.
func benchBackend(b *testing.B) *postgres.Backend {
	b.Helper()
	be := newBackend(b)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// step_attempts go with their runs (ON DELETE CASCADE).
		if _, err := requirePool(b).Exec(ctx, `DELETE FROM `+table("workflow_runs")+` WHERE namespace_id = $1`, be.NamespaceID()); err != nil {
			b.Errorf("clean up namespace %s: %v", be.NamespaceID(), err)
		}
	})
	return be
}

// xidCounter reports xids/op: the transaction ids assigned meanwhile.
type xidCounter struct{ start int64 }

func currentXid(b *testing.B) int64 {
	b.Helper()
	var x int64
	if err := requirePool(b).QueryRow(context.Background(), `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&x); err != nil {
		b.Fatal(err)
	}
	return x
}

func startXids(b *testing.B) xidCounter { return xidCounter{currentXid(b)} }

func (c xidCounter) report(b *testing.B, ops int) {
	b.ReportMetric(float64(currentXid(b)-c.start)/float64(ops), "xids/op")
}

func benchParams(n int) []backend.CreateWorkflowRunParams {
	ps := make([]backend.CreateWorkflowRunParams, n)
	for i := range ps {
		ps[i] = backend.CreateWorkflowRunParams{WorkflowName: "bench", Input: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	return ps
}

// BenchmarkClaimWorkflowRuns claims N runs per operation from a namespace
// holding pending runs (created outside the timer).
func BenchmarkClaimWorkflowRuns(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			be := benchBackend(b)
			ctx := context.Background()
			workers := make([]string, n)
			for i := range workers {
				workers[i] = fmt.Sprintf("bench-worker-%d", i)
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if _, err := be.CreateWorkflowRuns(ctx, benchParams(n)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				runs, err := be.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: workers, LeaseDuration: time.Hour})
				if err != nil {
					b.Fatal(err)
				}
				if len(runs) != n {
					b.Fatalf("claimed %d runs, want %d", len(runs), n)
				}
			}
		})
	}
}

// BenchmarkClaimAdmitting is W1k's claim: N runs claimed per operation,
// of a workflow limited to 5 runs per key, 100 keys round-robin, against
// "plain", the same claim of a workflow without limits (the runs are
// created, and those of the previous operation finished, outside the
// timer).
func BenchmarkClaimAdmitting(b *testing.B) {
	for _, limited := range []bool{false, true} {
		name := "plain"
		if limited {
			name = "admitting"
		}
		b.Run(fmt.Sprintf("%s/N=25", name), func(b *testing.B) {
			const n = 25
			be := benchBackend(b)
			ctx := context.Background()
			p := backend.ClaimWorkflowRunsParams{LeaseDuration: time.Hour}
			for i := range n {
				p.WorkerIDs = append(p.WorkerIDs, fmt.Sprintf("bench-worker-%d", i))
			}
			if limited {
				if _, err := be.PutWorkflowLimits(ctx, "bench", backend.Limits{ConcurrencyPerKey: 5}); err != nil {
					b.Fatal(err)
				}
				p.Admit = []string{"bench"}
			}
			seq := 0
			var last []string
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if len(last) > 0 {
					if _, err := requirePool(b).Exec(ctx, `UPDATE `+table("workflow_runs")+` SET status = 'completed', worker_id = NULL, available_at = NULL
						WHERE namespace_id = $1 AND id = ANY($2)`, be.NamespaceID(), last); err != nil {
						b.Fatal(err)
					}
				}
				ps := benchParams(n)
				for i := range ps {
					key := fmt.Sprint("key-", seq%100)
					ps[i].ConcurrencyKey = &key
					seq++
				}
				if _, err := be.CreateWorkflowRuns(ctx, ps); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				runs, err := be.ClaimWorkflowRuns(ctx, p)
				if err != nil {
					b.Fatal(err)
				}
				if len(runs) != n {
					b.Fatalf("claimed %d runs, want %d", len(runs), n)
				}
				last = last[:0]
				for _, r := range runs {
					last = append(last, r.ID)
				}
			}
		})
	}
}

// claimedRuns creates and claims n runs, one worker id per run.
func claimedRuns(b *testing.B, be *postgres.Backend, n int) []*backend.WorkflowRun {
	b.Helper()
	ctx := context.Background()
	if _, err := be.CreateWorkflowRuns(ctx, benchParams(n)); err != nil {
		b.Fatal(err)
	}
	workers := make([]string, n)
	for i := range workers {
		workers[i] = id.New("w")
	}
	runs, err := be.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: workers, LeaseDuration: time.Hour})
	if err != nil || len(runs) != n {
		b.Fatalf("claim %d runs: got %d, %v", n, len(runs), err)
	}
	return runs
}

func stepWrite(r *backend.WorkflowRun, name string) backend.Write {
	return backend.Write{
		Kind: backend.WriteInsertStep, WorkflowRunID: r.ID, WorkerID: *r.WorkerID,
		Step: &backend.StepAttempt{ID: id.New(id.PrefixStep), StepName: name, Kind: backend.StepFunction,
			Status: backend.StepCompleted, Output: json.RawMessage(`{"i":1}`)},
	}
}

func requireAllApplied(b *testing.B, errs []error) {
	b.Helper()
	for i, err := range errs {
		if err != nil {
			b.Fatalf("write %d: %v", i, err)
		}
	}
}

// BenchmarkApplyWrites measures one batch of 100 writes: "steps" inserts a
// completed step into each of 100 running runs (the fast-step hot path);
// "steps+completions" inserts the last step of 50 runs and completes them
// (runs created and claimed outside the timer); "one-pass" is the batch of
// one run's single fast step and its completion, a lone pass's commit on
// an idle worker (W2). "single-writes" is the
// same 100 step inserts through CreateStepAttempt one at a time, for
// comparison.
func BenchmarkApplyWrites(b *testing.B) {
	ctx := context.Background()
	b.Run("steps", func(b *testing.B) {
		be := benchBackend(b)
		runs := claimedRuns(b, be, 100)
		b.ReportAllocs()
		xids, ops := startXids(b), 0
		for b.Loop() {
			ws := make([][]backend.Write, len(runs))
			for i, r := range runs {
				ws[i] = []backend.Write{stepWrite(r, fmt.Sprintf("s%d", ops))}
			}
			requireAllApplied(b, be.ApplyWrites(ctx, ws))
			ops++
		}
		xids.report(b, ops)
	})
	b.Run("steps+completions", func(b *testing.B) {
		be := benchBackend(b)
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			runs := claimedRuns(b, be, 50)
			ws := make([][]backend.Write, 0, 50)
			for _, r := range runs {
				ws = append(ws, []backend.Write{stepWrite(r, "last"),
					{Kind: backend.WriteCompleteRun, WorkflowRunID: r.ID, WorkerID: *r.WorkerID, Output: json.RawMessage(`{"done":true}`)}})
			}
			b.StartTimer()
			requireAllApplied(b, be.ApplyWrites(ctx, ws))
		}
	})
	b.Run("one-pass", func(b *testing.B) {
		be := benchBackend(b)
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			r := claimedRuns(b, be, 1)[0]
			ws := [][]backend.Write{{stepWrite(r, "only"),
				{Kind: backend.WriteCompleteRun, WorkflowRunID: r.ID, WorkerID: *r.WorkerID, Output: json.RawMessage(`{"done":true}`)}}}
			b.StartTimer()
			requireAllApplied(b, be.ApplyWrites(ctx, ws))
		}
	})
	b.Run("single-writes", func(b *testing.B) {
		be := benchBackend(b)
		runs := claimedRuns(b, be, 100)
		b.ReportAllocs()
		xids, ops := startXids(b), 0
		for b.Loop() {
			for _, r := range runs {
				if _, err := backendtest.Single(be).CreateStepAttempt(ctx, backendtest.CreateStepAttemptParams{WorkflowRunID: r.ID, WorkerID: *r.WorkerID, StepName: fmt.Sprintf("s%d", ops), Kind: backend.StepFunction}); err != nil {
					b.Fatal(err)
				}
			}
			ops++
		}
		xids.report(b, ops)
	})
}

// BenchmarkCreateWorkflowRuns creates N runs per operation with
// CreateWorkflowRuns (one INSERT … SELECT FROM unnest), and, for 5,000, the
// COPY-into-a-temporary-table alternative it was chosen over.
func BenchmarkCreateWorkflowRuns(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("unnest/N=%d", n), func(b *testing.B) {
			be := benchBackend(b)
			ps := benchParams(n)
			b.ReportAllocs()
			for b.Loop() {
				runs, err := be.CreateWorkflowRuns(ctx, ps)
				if err != nil || len(runs) != n {
					b.Fatalf("created %d runs, %v", len(runs), err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "runs/s")
		})
	}
	b.Run("copy/N=5000", func(b *testing.B) {
		be := benchBackend(b)
		ps := benchParams(5000)
		b.ReportAllocs()
		for b.Loop() {
			runs, err := postgres.CopyCreateWorkflowRuns(ctx, be, ps)
			if err != nil || len(runs) != len(ps) {
				b.Fatalf("created %d runs, %v", len(runs), err)
			}
		}
		b.ReportMetric(5000*float64(b.N)/b.Elapsed().Seconds(), "runs/s")
	})
}

// BenchmarkContinueWorkflowRun measures one continue-as-new of a claimed
// run (ContinueWorkflowRun: one transaction of six statements), against
// what a workflow would do without it: complete the run (ApplyWrites) and
// start a fresh one (CreateWorkflowRun), two transactions with no
// lineage and no fence on the start. Runs are created and claimed outside
// the timer.
func BenchmarkContinueWorkflowRun(b *testing.B) {
	ctx := context.Background()
	b.Run("continue", func(b *testing.B) {
		be := benchBackend(b)
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			r := claimedRuns(b, be, 1)[0]
			b.StartTimer()
			if _, err := be.ContinueWorkflowRun(ctx, backend.ContinueWorkflowRunParams{WorkflowRunID: r.ID, WorkerID: *r.WorkerID, Input: json.RawMessage(`{"i":2}`)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("complete-then-start", func(b *testing.B) {
		be := benchBackend(b)
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			r := claimedRuns(b, be, 1)[0]
			b.StartTimer()
			requireAllApplied(b, be.ApplyWrites(ctx, [][]backend.Write{{
				{Kind: backend.WriteCompleteRun, WorkflowRunID: r.ID, WorkerID: *r.WorkerID, Output: json.RawMessage(`{"done":true}`)}}}))
			if _, err := be.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "bench", Input: json.RawMessage(`{"i":2}`)}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
