package openworkflow_test

// Benchmarks of the engine's own cost (DESIGN.md §6): claiming runs,
// recording fast steps, replaying a history. They run only with -bench,
// e.g.
//
//	go test -run '^$' -bench . -benchmem .
//
// Each runs on SQLite — a fresh file in a temporary directory, with the
// default synchronous FULL (every commit fsynced) unless
// OW_BENCH_SYNCHRONOUS=NORMAL — and on PostgreSQL
// (OPENWORKFLOW_TEST_POSTGRES_URL, default
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable) in a fresh
// namespace whose rows are deleted at the end; the PostgreSQL cases are
// skipped when the database is unreachable.
//
// Besides ns/op they report cpu-ns/op (cpu-ns/run, cpu-ns/step): the CPU
// time of this process (user and system, all threads) in the timed part,
// steadier than ns/op on a loaded machine and without the database's own
// work when it is a server (PostgreSQL).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
	"github.com/openworkflow-go/openworkflow/internal/testhooks"
	"github.com/openworkflow-go/openworkflow/owtest"
)

// benchTarget opens a fresh backend for one benchmark, closed (and, on
// PostgreSQL, emptied) when it ends.
type benchTarget struct {
	name string
	open func(b *testing.B) backend.Backend
}

var benchTargets = []benchTarget{
	{"sqlite", openSQLiteBench},
	{"postgres", openPostgresBench},
}

func openSQLiteBench(b *testing.B) backend.Backend {
	b.Helper()
	be, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{Synchronous: os.Getenv("OW_BENCH_SYNCHRONOUS")})
	if err != nil {
		b.Fatalf("open sqlite: %v", err)
	}
	b.Cleanup(func() { _ = be.Close() })
	return be
}

func openPostgresBench(b *testing.B) backend.Backend {
	b.Helper()
	if pgtest.Skipped() {
		b.Skip("OPENWORKFLOW_SKIP_POSTGRES=1")
	}
	// A schema of the benchmark's own, dropped with everything in it
	// when the benchmark ends.
	be := pgtest.Open(b, postgres.Options{})
	return be
}

// benchWorker is a worker on be with one slot, driven by Tick.
func benchWorker(b *testing.B, be backend.Backend, now func() time.Time, defs ...ow.Definition) *ow.Worker {
	b.Helper()
	w := ow.NewWorker(be, ow.WorkerOptions{Concurrency: 1, ID: "bench-worker", Now: now})
	if err := w.Register(defs...); err != nil {
		b.Fatalf("register: %v", err)
	}
	return w
}

// tickOne runs one worker tick, which must claim exactly one run.
func tickOne(b *testing.B, w *ow.Worker) {
	if n, err := testhooks.Tick(context.Background(), w); err != nil || n != 1 {
		b.Fatalf("tick claimed %d runs (%v), want 1", n, err)
	}
}

// mallocs is the number of heap allocations so far.
func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// cpuTime is the process's CPU time so far, user and system, all threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportPer reports total ns and cpu ns divided by n as "<unit>" and
// "cpu-<unit>".
func reportPer(b *testing.B, n int, cpu time.Duration, unit string) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), unit)
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-"+unit)
}

// claimBatch is the number of runs BenchmarkClaim claims per op.
const claimBatch = 100

// BenchmarkClaim measures one claim of 100 pending runs (a worker with 100
// free slots), the runs being created outside the timer. ns/run is ns/op
// divided by the runs claimed.
func BenchmarkClaim(b *testing.B) {
	for _, tg := range benchTargets {
		b.Run(tg.name, func(b *testing.B) {
			be := tg.open(b)
			ctx := context.Background()
			slots := make([]string, claimBatch)
			for i := range slots {
				slots[i] = fmt.Sprintf("bench-worker/%d", i)
			}
			params := make([]backend.CreateWorkflowRunParams, claimBatch)
			for i := range params {
				params[i] = backend.CreateWorkflowRunParams{WorkflowName: "bench-claim", Input: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
			}
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if _, err := be.CreateWorkflowRuns(ctx, params); err != nil {
					b.Fatalf("create runs: %v", err)
				}
				b.StartTimer()
				cpu0 := cpuTime()
				runs, err := be.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: slots, LeaseDuration: time.Hour})
				cpu += cpuTime() - cpu0
				if err != nil || len(runs) != claimBatch {
					b.Fatalf("claimed %d runs (%v), want %d", len(runs), err, claimBatch)
				}
			}
			reportPer(b, b.N, cpu, "ns/op")
			reportPer(b, b.N*claimBatch, cpu, "ns/run")
		})
	}
}

// BenchmarkStepRecord measures the execution by Worker.Tick of a run of N
// fast steps, from its claim to its completion (the run is started outside
// the timer): ns/step and allocs/step are the op's figures divided by N.
// On the hot path each step costs one write, its finished attempt,
// committed at the next step's barrier (the last one with the run's
// completion).
func BenchmarkStepRecord(b *testing.B) {
	for _, tg := range benchTargets {
		for _, n := range []int{10, 100} {
			b.Run(fmt.Sprintf("%s/N=%d", tg.name, n), func(b *testing.B) {
				be := tg.open(b)
				ctx := context.Background()
				wf := ow.Define(ow.Spec{Name: fmt.Sprintf("bench-steps-%d", n)}, func(ctx ow.Context, in int) (int, error) {
					sum := in
					for i := range n {
						v, err := ow.Run(ctx, "step", func(context.Context) (int, error) { return sum + i, nil })
						if err != nil {
							return 0, err
						}
						sum = v
					}
					return sum, nil
				})
				w := benchWorker(b, be, nil, wf)
				client := ow.NewClient(be)
				var allocs uint64
				var cpu time.Duration
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					h, err := wf.Start(ctx, client, 0)
					if err != nil {
						b.Fatalf("start: %v", err)
					}
					m0 := mallocs()
					b.StartTimer()
					cpu0 := cpuTime()
					tickOne(b, w)
					cpu += cpuTime() - cpu0
					b.StopTimer()
					allocs += mallocs() - m0
					if run, err := client.GetRun(ctx, h.ID); err != nil || run.Status != backend.RunCompleted {
						b.Fatalf("run %s after one tick: %v, %v; want completed", h.ID, run, err)
					}
					b.StartTimer()
				}
				reportPer(b, b.N, cpu, "ns/op")
				reportPer(b, b.N*n, cpu, "ns/step")
				b.ReportMetric(float64(allocs)/float64(b.N*n), "allocs/step")
			})
		}
	}
}

// replaySteps is the history BenchmarkReplay100StepHistory replays.
const replaySteps = 100

// BenchmarkReplay100StepHistory measures one pass of a run whose 100 steps
// are completed: the claim, the read of its history, the replay of the
// 100 memoized steps and the park at the signal wait that follows them.
//
// To claim the same run again and again with an unchanged history, the
// worker's clock is fixed years behind the backend's: the signal wait's
// timeout (an hour after the worker's now) has passed for the backend, so
// the parked run is due at once, but not for the workflow, which waits on
// and parks again without recording anything.
func BenchmarkReplay100StepHistory(b *testing.B) {
	for _, tg := range benchTargets {
		b.Run(tg.name, func(b *testing.B) {
			be := tg.open(b)
			ctx := context.Background()
			var executed, passes atomic.Int64
			wf := ow.Define(ow.Spec{Name: "bench-replay"}, func(ctx ow.Context, in int) (int, error) {
				passes.Add(1)
				sum := in
				for i := range replaySteps {
					v, err := ow.Run(ctx, "step", func(context.Context) (int, error) {
						executed.Add(1)
						return sum + i, nil
					})
					if err != nil {
						return 0, err
					}
					sum = v
				}
				_, _, err := ow.WaitForSignal[int](ctx, "never-sent", ow.WithTimeout(time.Hour))
				return sum, err
			})
			clock := owtest.NewClock(time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC))
			w := benchWorker(b, be, clock.Now, wf)
			client := ow.NewClient(be)
			h, err := wf.Start(ctx, client, 0)
			if err != nil {
				b.Fatalf("start: %v", err)
			}
			tickOne(b, w) // executes the 100 steps and parks
			history := requireParked(b, client, h.ID)
			if history != replaySteps+1 {
				b.Fatalf("run has %d step attempts after its first pass, want %d steps and the wait", history, replaySteps)
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				tickOne(b, w)
			}
			b.StopTimer()
			reportPer(b, b.N, cpuTime()-cpu0, "ns/op")
			if got := requireParked(b, client, h.ID); got != history {
				b.Fatalf("replays changed the history from %d to %d step attempts", history, got)
			}
			if got := executed.Load(); got != replaySteps {
				b.Fatalf("step functions executed %d times, want %d: a replay re-executed a memoized step", got, replaySteps)
			}
			if got, want := passes.Load(), int64(b.N)+1; got != want {
				b.Fatalf("workflow function ran %d times, want %d (one pass per claim)", got, want)
			}
		})
	}
}

// requireParked fails unless the run is parked (running, owned by no
// worker), and returns its number of step attempts.
func requireParked(b *testing.B, c *ow.Client, runID string) int {
	b.Helper()
	ctx := context.Background()
	run, err := c.GetRun(ctx, runID)
	if err != nil {
		b.Fatal(err)
	}
	if s := run.Status.Normalize(); s != backend.RunRunning || run.WorkerID != nil {
		b.Fatalf("run %s is %s (worker %v, error %s), want parked", runID, s, run.WorkerID, run.Error)
	}
	page, err := c.ListSteps(ctx, backend.ListStepAttemptsParams{WorkflowRunID: runID, Limit: 1000})
	if err != nil {
		b.Fatal(err)
	}
	if page.Next != nil {
		b.Fatal(errors.New("more than 1000 step attempts"))
	}
	return len(page.Data)
}

// BenchmarkMemoryPerRun reports the memory (heap and goroutine stacks) a
// worker holds per executing run
// (a pass blocked inside a step: its goroutines, execution state, history
// and heartbeat) and per parked run (none: a parked run is a database row
// only). Each iteration measures 1,000 runs of each, after a warm-up
// batch of parked runs has grown the pools and caches. The timer runs
// through the whole iteration (a few seconds), so that the benchmark
// framework does not scale b.N up from a stopped timer's tiny ns/op into
// thousands of iterations; ns/op means nothing here, the reported metrics
// do.
func BenchmarkMemoryPerRun(b *testing.B) {
	const runs = 1000
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc + m.StackInuse // goroutine stacks count too
	}
	for range b.N {
		be := openSQLiteBench(b)
		release := make(chan struct{})
		var entered sync.WaitGroup
		entered.Add(runs)
		blocking := ow.Define(ow.Spec{Name: "mem-block"}, func(ctx ow.Context, _ int) (int, error) {
			return ow.Run(ctx, "hold", func(context.Context) (int, error) { entered.Done(); <-release; return 1, nil })
		})
		parking := ow.Define(ow.Spec{Name: "mem-park"}, func(ctx ow.Context, _ int) (int, error) {
			return 0, ow.Sleep(ctx, "nap", time.Hour)
		})
		c := ow.NewClient(be)
		w := ow.NewWorker(be, ow.WorkerOptions{Concurrency: runs})
		if err := w.Register(blocking, parking); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if err := w.Start(ctx); err != nil {
			b.Fatal(err)
		}
		parkAll := func(want int) {
			if _, err := parking.StartMany(ctx, c, make([]int, runs)); err != nil {
				b.Fatal(err)
			}
			deadline := time.Now().Add(60 * time.Second)
			for parked := 0; parked < want; {
				if time.Now().After(deadline) {
					b.Fatalf("%d of %d runs parked", parked, want)
				}
				time.Sleep(10 * time.Millisecond)
				parked = 0
				for cursor := ""; ; {
					page, err := c.ListRuns(ctx, backend.ListWorkflowRunsParams{WorkflowName: "mem-park", Limit: 1000, After: cursor})
					if err != nil {
						b.Fatal(err)
					}
					for _, r := range page.Data {
						if r.Status == backend.RunRunning && r.WorkerID == nil {
							parked++
						}
					}
					if page.Next == nil {
						break
					}
					cursor = *page.Next
				}
			}
			time.Sleep(50 * time.Millisecond) // let the last passes return
		}
		parkAll(runs) // warm-up
		before, gBefore := heap(), runtime.NumGoroutine()
		parkAll(2 * runs)
		parked, gParked := heap(), runtime.NumGoroutine()
		if _, err := blocking.StartMany(ctx, c, make([]int, runs)); err != nil {
			b.Fatal(err)
		}
		entered.Wait()
		executing, gExecuting := heap(), runtime.NumGoroutine()
		close(release)
		if err := w.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		be.Close()
		b.ReportMetric(float64(int64(parked)-int64(before))/runs, "B/parked-run")
		b.ReportMetric(float64(int64(executing)-int64(parked))/runs, "B/executing-run")
		b.ReportMetric(float64(gParked-gBefore)/runs, "goroutines/parked-run")
		b.ReportMetric(float64(gExecuting-gParked)/runs, "goroutines/executing-run")
	}
}
