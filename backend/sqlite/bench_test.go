package sqlite

import (
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
)

// The write path's benchmarks. Each opens a fresh file with the default
// options (synchronous FULL: every commit is fsynced), so ns/op includes
// the commit's fsync; OW_BENCH_SYNCHRONOUS=NORMAL leaves the fsync out to
// show the engine's own cost (as does -cpuprofile).

// openBench opens a backend on a fresh file, closed when b ends.
func openBench(b *testing.B) *Backend {
	b.Helper()
	be, err := Open(b.Context(), b.TempDir()+"/bench.db", Options{Synchronous: os.Getenv("OW_BENCH_SYNCHRONOUS")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	return be
}

// cpuTime is the process's CPU time so far (user and system, all
// threads). The benchmarks report it per op as cpu-ns/op: on a busy or
// slow-disk machine it is steadier than ns/op, which includes waiting
// for fsync and for the CPU.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time spent since start per op.
func reportCPU(b *testing.B, spent time.Duration) {
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// seeded numbers the seeded runs' ids.
var seeded atomic.Int64

// seedRuns inserts n pending runs claimable now in one transaction,
// bypassing the code under test.
func seedRuns(b *testing.B, be *Backend, n int) {
	b.Helper()
	now := be.now()
	tx, err := be.db.BeginTx(b.Context(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	for range n {
		_, err := tx.ExecContext(b.Context(), `INSERT INTO "workflow_runs" (
			"namespace_id", "id", "workflow_name", "status", "config", "attempts",
			"available_at", "created_at", "updated_at")
			VALUES (?, ?, 'wf', 'pending', '{}', 0, ?, ?, ?)`,
			be.ns, fmt.Sprintf("wrun_seed_%d", seeded.Add(1)), timeArg(now), timeArg(now), timeArg(now))
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// workerIDs returns n distinct worker (slot) ids.
func workerIDs(n int) []string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("worker-%d", i)
	}
	return ws
}

// claimOwned seeds n runs and claims them for an hour, returning them.
func claimOwned(b *testing.B, be *Backend, n int) []*backend.WorkflowRun {
	b.Helper()
	seedRuns(b, be, n)
	runs, err := be.ClaimWorkflowRuns(b.Context(), backend.ClaimWorkflowRunsParams{WorkerIDs: workerIDs(n), LeaseDuration: time.Hour})
	if err != nil || len(runs) != n {
		b.Fatalf("claim %d runs: got %d, %v", n, len(runs), err)
	}
	return runs
}

// benchOutput is a typical small step output.
var benchOutput = json.RawMessage(`{"id":42,"name":"a user","tags":["x","y"],"ok":true}`)

func BenchmarkCreateWorkflowRun(b *testing.B) {
	be := openBench(b)
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := be.CreateWorkflowRun(b.Context(), backend.CreateWorkflowRunParams{WorkflowName: "wf", Input: benchOutput}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpuTime()-cpu0)
}

// BenchmarkClaimWorkflowRuns claims N runs per op (seeding them is not
// timed).
func BenchmarkClaimWorkflowRuns(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			be := openBench(b)
			workers := workerIDs(n)
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				seedRuns(b, be, n)
				b.StartTimer()
				cpu0 := cpuTime()
				runs, err := be.ClaimWorkflowRuns(b.Context(), backend.ClaimWorkflowRunsParams{WorkerIDs: workers, LeaseDuration: time.Hour})
				cpu += cpuTime() - cpu0
				if err != nil || len(runs) != n {
					b.Fatalf("claimed %d runs, %v", len(runs), err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkSingleWriteSteps100 records 100 fast steps (one per owned run)
// the way the worker did before group commit: CreateStepAttempt then
// CompleteStepAttempt, one transaction each.
func BenchmarkSingleWriteSteps100(b *testing.B) {
	be := openBench(b)
	runs := claimOwned(b, be, 100)
	b.ReportAllocs()
	i := 0
	cpu0 := cpuTime()
	for b.Loop() {
		for _, r := range runs {
			s, err := backendtest.Single(be).CreateStepAttempt(b.Context(), backendtest.CreateStepAttemptParams{
				WorkflowRunID: r.ID, WorkerID: *r.WorkerID, StepName: fmt.Sprintf("step-%d", i), Kind: backend.StepFunction,
			})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := backendtest.Single(be).CompleteStepAttempt(b.Context(), backendtest.CompleteStepAttemptParams{
				WorkflowRunID: r.ID, StepAttemptID: s.ID, WorkerID: *r.WorkerID, Output: benchOutput,
			}); err != nil {
				b.Fatal(err)
			}
		}
		i++
	}
	reportCPU(b, cpuTime()-cpu0)
}

// BenchmarkCreateWorkflowRunLoop1000 starts 1,000 runs one
// CreateWorkflowRun at a time (the twin of CreateWorkflowRuns).
func BenchmarkCreateWorkflowRunLoop1000(b *testing.B) {
	be := openBench(b)
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		for range 1000 {
			if _, err := be.CreateWorkflowRun(b.Context(), backend.CreateWorkflowRunParams{WorkflowName: "wf", Input: benchOutput}); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportCPU(b, cpuTime()-cpu0)
}

// BenchmarkApplyWrites100 applies a batch of 100 fast steps (one inserted
// completed attempt per owned run) in one ApplyWrites: the group-commit
// twin of BenchmarkSingleWriteSteps100.
func BenchmarkApplyWrites100(b *testing.B) {
	be := openBench(b)
	runs := claimOwned(b, be, 100)
	ws := make([][]backend.Write, len(runs))
	b.ReportAllocs()
	i := 0
	cpu0 := cpuTime()
	for b.Loop() {
		for j, r := range runs {
			ws[j] = []backend.Write{{
				Kind: backend.WriteInsertStep, WorkflowRunID: r.ID, WorkerID: *r.WorkerID,
				Step: &backend.StepAttempt{
					ID: fmt.Sprintf("step_bench_%d_%d", i, j), StepName: fmt.Sprintf("step-%d", i),
					Kind: backend.StepFunction, Status: backend.StepCompleted, Output: benchOutput,
				},
			}}
		}
		for j, err := range be.ApplyWrites(b.Context(), ws) {
			if err != nil {
				b.Fatalf("group %d: %v", j, err)
			}
		}
		i++
	}
	reportCPU(b, cpuTime()-cpu0)
}

// BenchmarkCreateWorkflowRuns1000 starts 1,000 runs in one call.
func BenchmarkCreateWorkflowRuns1000(b *testing.B) {
	be := openBench(b)
	ps := make([]backend.CreateWorkflowRunParams, 1000)
	for i := range ps {
		ps[i] = backend.CreateWorkflowRunParams{WorkflowName: "wf", Input: benchOutput}
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := be.CreateWorkflowRuns(b.Context(), ps); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpuTime()-cpu0)
}

// BenchmarkCountWorkflowRunsAt100k counts the runs per status of a
// namespace holding 100,000 finished runs (every tenth failed) and 1,000
// pending ones (GET /v1/runs/counts).
func BenchmarkCountWorkflowRunsAt100k(b *testing.B) {
	be := openBench(b)
	const finished, pending = 100000, 1000
	now := timeArg(be.now())
	_, err := be.db.ExecContext(b.Context(), `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?)
		INSERT INTO "workflow_runs" ("namespace_id", "id", "workflow_name", "status", "config", "attempts",
			"available_at", "finished_at", "created_at", "updated_at")
		SELECT ?, 'wrun_count_' || i, 'wf', CASE WHEN i > ? THEN 'pending' WHEN i % 10 = 0 THEN 'failed' ELSE 'completed' END,
			'{}', 1, NULL, ?, ?, ? FROM g`, finished+pending, be.ns, finished, now, now, now)
	if err != nil {
		b.Fatal(err)
	}
	want := backend.RunCounts{Completed: finished * 9 / 10, Failed: finished / 10, Pending: pending}
	for b.Loop() {
		got, err := be.CountWorkflowRuns(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if got != want {
			b.Fatalf("counts %+v, want %+v", got, want)
		}
	}
}
