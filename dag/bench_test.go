package dag_test

// Benchmarks of the DAG interpreter against the core, on PostgreSQL
// (OPENWORKFLOW_TEST_POSTGRES_URL, a fresh schema per benchmark) and
// SQLite (a fresh file, synchronous FULL), each with one started worker
// of the default concurrency (10):
//
//	go test ./dag -run '^$' -bench . -benchtime 100x
//
// Chain10 (a chain of 10 no-op steps) and FanOut100 (1 root, 100 parallel
// steps, 1 join: the wide DAG) start one run at a time and time it from
// Start to Result; p50-ms and p95-ms are percentiles over the b.N DAG
// runs. Each alternates its DAG runs with runs of the same steps written
// as a Go workflow (ow.Run, and ow.Go for the parallel ones) and reports
// the steps per second of the median run of each and their ratio,
// measured in the same run so that the machine's noise weighs on both
// alike.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/dag"
)

// noop is a handler that does nothing.
func noop(context.Context, dag.StepContext) (any, error) { return nil, nil }

// benchFixture is a backend with a started worker executing names.
func benchFixture(b *testing.B, tg target, defs []dag.Definition, extra ...ow.Definition) (*dag.Engine, *ow.Client) {
	b.Helper()
	be, _ := tg.open(b, nil)
	c := ow.NewClient(be)
	eng := dag.New(c, dag.Options{Handlers: map[string]dag.Handler{"noop": noop}})
	ctx := context.Background()
	w := ow.NewWorker(be, ow.WorkerOptions{})
	for _, d := range defs {
		if _, err := eng.Define(ctx, d); err != nil {
			b.Fatal(err)
		}
		if err := w.Register(eng.Workflow(d.Name)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Register(extra...); err != nil {
		b.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Stop(context.Background()) })
	return eng, c
}

// chainDef is a chain of n no-op steps.
func chainDef(n int) dag.Definition {
	d := dag.Definition{Name: fmt.Sprintf("chain-%d", n)}
	for i := range n {
		s := dag.Step{Name: fmt.Sprintf("s%02d", i), Handler: "noop"}
		if i > 0 {
			s.DependsOn = []string{fmt.Sprintf("s%02d", i-1)}
		}
		d.Steps = append(d.Steps, s)
	}
	return d
}

// wideDef is 1 root, width parallel steps depending on it, and 1 join
// depending on them all.
func wideDef(width int) dag.Definition {
	d := dag.Definition{Name: fmt.Sprintf("wide-%d", width), Steps: []dag.Step{{Name: "root", Handler: "noop"}}}
	var mids []string
	for i := range width {
		name := fmt.Sprintf("p%03d", i)
		mids = append(mids, name)
		d.Steps = append(d.Steps, dag.Step{Name: name, Handler: "noop", DependsOn: []string{"root"}})
	}
	d.Steps = append(d.Steps, dag.Step{Name: "join", Handler: "noop", DependsOn: mids})
	return d
}

// runOnce starts a run of the DAG workflow name and waits for its result.
func runOnce(b *testing.B, eng *dag.Engine, name string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now()
	h, err := eng.Start(ctx, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := h.Result(ctx); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

// median is the median of ds (sorted in place).
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// reportPercentiles reports the p50 and p95 of ds in milliseconds.
func reportPercentiles(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	pct := func(p float64) float64 {
		return float64(ds[int(float64(len(ds)-1)*p)]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
}

// chainGo is the work of chainDef(n) as a Go workflow: n sequential
// ow.Run steps.
func chainGo(n int) *ow.Workflow[any, int] {
	return ow.Define(ow.Spec{Name: fmt.Sprintf("chain-go-%d", n)}, func(ctx ow.Context, _ any) (int, error) {
		for i := range n {
			if _, err := ow.Run(ctx, fmt.Sprintf("s%02d", i), noopStep); err != nil {
				return 0, err
			}
		}
		return n, nil
	})
}

// wideGo is the work of wideDef(width) as a Go workflow: a root step,
// width parallel steps (ow.Go), a join step.
func wideGo(width int) *ow.Workflow[any, int] {
	return ow.Define(ow.Spec{Name: fmt.Sprintf("wide-go-%d", width)}, func(ctx ow.Context, _ any) (int, error) {
		if _, err := ow.Run(ctx, "root", noopStep); err != nil {
			return 0, err
		}
		fs := make([]*ow.Future[json.RawMessage], width)
		for i := range fs {
			fs[i] = ow.Go(ctx, fmt.Sprintf("p%03d", i), noopStep)
		}
		for _, f := range fs {
			if _, err := f.Get(); err != nil {
				return 0, err
			}
		}
		if _, err := ow.Run(ctx, "join", noopStep); err != nil {
			return 0, err
		}
		return width + 2, nil
	})
}

func noopStep(context.Context) (json.RawMessage, error) { return json.RawMessage("null"), nil }

// benchAgainstGo runs, alternately, b.N runs of the DAG d and b.N runs of
// goWF (the same steps as Go code), one run at a time, each timed from
// Start to Result, and reports for the DAG the p50 and p95 latency, and
// for both the steps per second of their median run and the ratio.
func benchAgainstGo(b *testing.B, tg target, d dag.Definition, goWF *ow.Workflow[any, int]) {
	eng, c := benchFixture(b, tg, []dag.Definition{d}, goWF)
	runGo := func() time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		t0 := time.Now()
		h, err := goWF.Start(ctx, c, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := h.Result(ctx); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	runOnce(b, eng, d.Name) // warm up: connections, prepared statements
	runGo()
	dagTimes, goTimes := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		// Alternate which goes first, so neither always follows the
		// other's leftovers (commits, autovacuum).
		if i%2 == 0 {
			dagTimes = append(dagTimes, runOnce(b, eng, d.Name))
			goTimes = append(goTimes, runGo())
		} else {
			goTimes = append(goTimes, runGo())
			dagTimes = append(dagTimes, runOnce(b, eng, d.Name))
		}
	}
	b.StopTimer()
	reportPercentiles(b, dagTimes)
	b.ReportMetric(float64(median(goTimes))/float64(time.Millisecond), "go-p50-ms")
	// Rates from the median run of each, so that a few runs delayed by
	// the loaded machine do not decide the ratio.
	steps := float64(len(d.Steps))
	dagRate, goRate := steps/median(dagTimes).Seconds(), steps/median(goTimes).Seconds()
	b.ReportMetric(dagRate, "dag-steps/s")
	b.ReportMetric(goRate, "go-steps/s")
	b.ReportMetric(100*dagRate/goRate, "dag/go-%")
}

func BenchmarkChain10(b *testing.B) {
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) { benchAgainstGo(b, tg, chainDef(10), chainGo(10)) })
	}
}

func BenchmarkFanOut100(b *testing.B) {
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) { benchAgainstGo(b, tg, wideDef(100), wideGo(100)) })
	}
}
