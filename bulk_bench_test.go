package openworkflow_test

// Benchmarks of bulk actions on PostgreSQL (issue 21: "a bulk cancel of
// 100,000 runs at ≥ 5,000 runs/s without slowing W1 by more than 15 %
// while it runs"). Run once, on PostgreSQL, with
//
//	OPENWORKFLOW_TEST_BACKEND=postgres go test -run '^$' -bench 'Bulk' -benchtime 1x -timeout 30m .
//
// (the variable keeps TestMain from running the package a second time).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

// bulkBenchRuns is the size of the benchmarks' bulk cancel.
const bulkBenchRuns = 100_000

// createPending creates n pending runs of workflow name, 1,000 a call,
// due an hour from now: delayed starts, which a worker's claim does not
// read (a backlog of due runs of a workflow no worker has slows every
// claim, whatever a bulk action does; see docs/benchmarks.md).
func createPending(b *testing.B, be backend.Backend, name string, n int) {
	b.Helper()
	later := time.Now().Add(time.Hour)
	for done := 0; done < n; {
		ps := make([]backend.CreateWorkflowRunParams, min(1000, n-done))
		for i := range ps {
			ps[i] = backend.CreateWorkflowRunParams{WorkflowName: name, AvailableAt: &later}
		}
		if _, err := be.CreateWorkflowRuns(context.Background(), ps); err != nil {
			b.Fatal(err)
		}
		done += len(ps)
	}
}

// startBulkDriver starts a worker that runs no workflow and drives bulk
// actions, stopped when b ends.
func startBulkDriver(b *testing.B, be backend.Backend) {
	b.Helper()
	w := ow.NewWorker(be, ow.WorkerOptions{Concurrency: 1, SkipSchedules: true, BulkActionPoll: 20 * time.Millisecond})
	if err := w.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Stop(context.Background()) })
}

// waitBulkDone waits for the action to end and returns it.
func waitBulkDone(b *testing.B, c *ow.Client, id string) *ow.BulkAction {
	b.Helper()
	for {
		a, err := c.GetBulkAction(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		if !a.State.Open() {
			return a
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkBulkCancel100k cancels 100,000 pending runs with one bulk
// action, unthrottled and at the default rate, and reports runs/s from
// the action's own start and finish times.
func BenchmarkBulkCancel100k(b *testing.B) {
	if pgtest.Skipped() {
		b.Skip("OPENWORKFLOW_SKIP_POSTGRES=1")
	}
	for _, tc := range []struct {
		name string
		rate int
	}{{"unthrottled", 1 << 30}, {"default-rate", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				be := pgtest.Open(b, postgres.Options{})
				createPending(b, be, "bulk-bench", bulkBenchRuns)
				c := ow.NewClient(be)
				startBulkDriver(b, be)
				a, err := c.StartBulkAction(context.Background(), backend.BulkCancel, `workflow = "bulk-bench"`, ow.BulkActionOptions{MaxPerSecond: tc.rate})
				if err != nil {
					b.Fatal(err)
				}
				a = waitBulkDone(b, c, a.ID)
				if a.State != backend.BulkCompleted || a.Acted != bulkBenchRuns {
					b.Fatalf("bulk cancel ended %s with %d acted, want completed with %d", a.State, a.Acted, bulkBenchRuns)
				}
				secs := a.FinishedAt.Sub(*a.StartedAt).Seconds()
				b.ReportMetric(float64(a.Acted)/secs, "runs/s")
				b.ReportMetric(secs, "s/action")
			}
		})
	}
}

// w1Bench is W1's workflow: three sequential steps.
var w1Bench = ow.Define(ow.Spec{Name: "bench-w1"}, func(ctx ow.Context, in int) (int, error) {
	n := in
	for _, step := range []string{"one", "two", "three"} {
		var err error
		n, err = ow.Run(ctx, step, func(context.Context) (int, error) { return n + 1, nil })
		if err != nil {
			return 0, err
		}
	}
	return n, nil
})

// runW1 runs 5,000 W1 runs on a fresh worker of concurrency 100 and
// returns its steps per second.
func runW1(b *testing.B, be backend.Backend) float64 {
	b.Helper()
	const runs = 5000
	ctx := context.Background()
	ps := make([]backend.CreateWorkflowRunParams, runs)
	for i := range ps {
		ps[i] = backend.CreateWorkflowRunParams{WorkflowName: "bench-w1", Input: []byte(fmt.Sprint(i))}
	}
	if _, err := be.CreateWorkflowRuns(ctx, ps); err != nil {
		b.Fatal(err)
	}
	w := ow.NewWorker(be, ow.WorkerOptions{Concurrency: 100, SkipSchedules: true, SkipBulkActions: true})
	if err := w.Register(w1Bench); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer w.Stop(ctx)
	for {
		n, err := be.CountMatchingRuns(ctx, backend.ListWorkflowRunsParams{WorkflowName: "bench-w1", Status: backend.RunCompleted})
		if err != nil {
			b.Fatal(err)
		}
		if n == runs {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 3 * runs / time.Since(start).Seconds()
}

// BenchmarkW1BesideBulkCancel measures W1 (5,000 runs of 3 steps,
// concurrency 100) alone and while a bulk cancel of 100,000 other runs
// runs, at each rate of OW_BULK_BENCH_RATES (runs/s, comma-separated;
// default "5000,1000"), alternating alone and beside in one sitting (two
// rounds a rate), and reports each and their ratio.
func BenchmarkW1BesideBulkCancel(b *testing.B) {
	if pgtest.Skipped() {
		b.Skip("OPENWORKFLOW_SKIP_POSTGRES=1")
	}
	rates := "5000,1000"
	if v := os.Getenv("OW_BULK_BENCH_RATES"); v != "" {
		rates = v
	}
	for _, r := range strings.Split(rates, ",") {
		rate, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil || rate <= 0 {
			b.Fatalf("OW_BULK_BENCH_RATES: %q is not a rate", r)
		}
		b.Run(fmt.Sprintf("rate-%d", rate), func(b *testing.B) {
			for range b.N {
				w1BesideBulk(b, rate)
			}
		})
	}
}

func w1BesideBulk(b *testing.B, rate int) {
	var alone, beside []float64
	for round := range 2 {
		// Alone: the same 100,000 runs in the namespace, no bulk action.
		be := pgtest.Open(b, postgres.Options{})
		createPending(b, be, "bulk-bench", bulkBenchRuns)
		alone = append(alone, runW1(b, be))

		be = pgtest.Open(b, postgres.Options{})
		createPending(b, be, "bulk-bench", bulkBenchRuns)
		c := ow.NewClient(be)
		startBulkDriver(b, be)
		a, err := c.StartBulkAction(context.Background(), backend.BulkCancel, `workflow = "bulk-bench"`, ow.BulkActionOptions{MaxPerSecond: rate})
		if err != nil {
			b.Fatal(err)
		}
		for a.StartedAt == nil || a.Acted == 0 {
			time.Sleep(10 * time.Millisecond)
			if a, err = c.GetBulkAction(context.Background(), a.ID); err != nil {
				b.Fatal(err)
			}
		}
		beside = append(beside, runW1(b, be))
		a, err = c.GetBulkAction(context.Background(), a.ID)
		if err != nil {
			b.Fatal(err)
		}
		if !a.State.Open() {
			b.Logf("round %d: the bulk cancel ended before W1 did; W1 ran beside it only in part", round)
		}
		b.Logf("round %d: W1 alone %.0f steps/s, beside the bulk cancel at %d runs/s %.0f steps/s (bulk at %d/%d)", round, alone[round], rate, beside[round], a.Acted, a.Matched)
		if _, err := c.CancelBulkAction(context.Background(), a.ID); err != nil && !errors.Is(err, backend.ErrBulkActionFinished) {
			b.Fatal(err)
		}
		waitBulkDone(b, c, a.ID)
	}
	mean := func(xs []float64) (s float64) {
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	b.ReportMetric(mean(alone), "w1-alone-steps/s")
	b.ReportMetric(mean(beside), "w1-beside-steps/s")
	b.ReportMetric(mean(beside)/mean(alone), "ratio")
}
