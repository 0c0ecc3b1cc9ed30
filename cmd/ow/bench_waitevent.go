package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/config"
)

// waitEventIn is the input of the waitevent workload's runs: the order
// whose "bench.paid" event each waits for.
type waitEventIn struct {
	OrderID string `json:"orderId"`
}

// waitEventWorkflow waits for its order's event, then runs one step that
// returns when it started (Unix ns): the woken wait's next step.
var waitEventWorkflow = ow.Define(ow.Spec{Name: "bench-waitevent"}, func(ctx ow.Context, in waitEventIn) (int64, error) {
	if _, ok, err := ow.WaitForEvent[waitEventIn](ctx, "bench.paid", `event.data.orderId == input.orderId`, 24*time.Hour); err != nil || !ok {
		return 0, errors.Join(err, errors.New("the wait timed out"))
	}
	return ow.Run(ctx, "next", func(context.Context) (int64, error) { return time.Now().UnixNano(), nil })
})

// benchWaitEventCommand is `ow bench waitevent`: the latency from a
// publish to the woken WaitForEvent's next step, beside many runs waiting
// on the same event name with other matches (issue 22).
func (a *app) benchWaitEventCommand() *cobra.Command {
	var (
		backendName string
		waiting     []int
		samples     int
	)
	c := &cobra.Command{
		Use:   "waitevent",
		Short: "Measure event → woken WaitForEvent's next step, beside N runs waiting on other matches",
		Long: `For each --waiting count N (default 100 and 10000) on a fresh database
(a new PostgreSQL schema, dropped after, or a temporary SQLite file):
start N runs of bench-waitevent waiting for "bench.paid" events of other
orders and let them park; then, --samples times, start one more run, wait
until its wait is stored, publish its event, and measure the time to the
start of the step after its wait. Prints p50 and p95 per N: with the
wait index the figure should not grow with N.`,
		Example: `  ow bench waitevent --backend postgres --waiting 100,10000`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if samples < 1 {
				return fmt.Errorf("--samples %d: want at least 1", samples)
			}
			for _, n := range waiting {
				if n < 0 {
					return fmt.Errorf("--waiting %d: want 0 or more", n)
				}
				b, closeB, err := a.openBenchBackend(cmd.Context(), backendName)
				if err != nil {
					return err
				}
				lat, err := measureWaitEvent(cmd.Context(), b, n, samples, a.stderr)
				closeB()
				if err != nil {
					return fmt.Errorf("%s, %d waiting: %w", backendName, n, err)
				}
				slices.Sort(lat)
				fmt.Fprintf(a.stdout, "waitevent %-8s waiting=%-6d samples=%d p50=%.2fms p95=%.2fms\n", backendName, n, len(lat),
					benchMs(lat[len(lat)/2]), benchMs(lat[len(lat)*95/100]))
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&backendName, "backend", "postgres", "postgres (OPENWORKFLOW_POSTGRES_URL or --postgres-url) or sqlite")
	f.IntSliceVar(&waiting, "waiting", []int{100, 10000}, "the numbers of runs left waiting on other matches, one measurement each")
	f.IntVar(&samples, "samples", 50, "events published and measured per measurement")
	return c
}

func benchMs(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// openBenchBackend opens a fresh backend: a new schema on the configured
// PostgreSQL server (dropped by the returned close), or a SQLite file in a
// temporary directory.
func (a *app) openBenchBackend(ctx context.Context, name string) (backend.Backend, func(), error) {
	switch name {
	case "sqlite":
		dir, err := os.MkdirTemp("", "ow-bench-waitevent-")
		if err != nil {
			return nil, nil, err
		}
		b, err := sqlite.Open(ctx, filepath.Join(dir, "ow.db"), sqlite.Options{})
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		return b, func() { b.Close(); os.RemoveAll(dir) }, nil
	case "postgres":
		url := os.Getenv(config.EnvPostgresURL)
		if a.postgresURL != "" {
			url = a.postgresURL
		}
		if url == "" {
			return nil, nil, fmt.Errorf("no PostgreSQL URL: set %s or --postgres-url", config.EnvPostgresURL)
		}
		schema := fmt.Sprintf("ow_bench_waitevent_%d_%d", os.Getpid(), time.Now().UnixNano())
		b, err := postgres.Open(ctx, url, postgres.Options{Schema: schema})
		if err != nil {
			return nil, nil, err
		}
		return b, func() {
			_, _ = b.Pool().Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			b.Close()
		}, nil
	}
	return nil, nil, fmt.Errorf("--backend %q: want postgres or sqlite", name)
}

// measureWaitEvent parks n runs on other orders, then measures samples
// publish → next step latencies.
func measureWaitEvent(ctx context.Context, b backend.Backend, n, samples int, progress interface{ Write([]byte) (int, error) }) ([]time.Duration, error) {
	ew, ok := b.(backend.EventWaiter)
	if !ok {
		return nil, errors.New("the backend cannot wait for events")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: 32})
	if err := w.Register(waitEventWorkflow); err != nil {
		return nil, err
	}
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	defer w.Stop(context.Background())
	c := ow.NewClient(b)
	ins := make([]waitEventIn, n)
	for i := range ins {
		ins[i] = waitEventIn{OrderID: fmt.Sprintf("other-%d", i)}
	}
	var bg []*ow.Handle[int64]
	for len(ins) > 0 {
		k := min(len(ins), 500)
		hs, err := waitEventWorkflow.StartMany(ctx, c, ins[:k])
		if err != nil {
			return nil, err
		}
		bg, ins = append(bg, hs...), ins[k:]
	}
	fmt.Fprintf(progress, "waitevent: %d runs started, waiting for them to park\n", n)
	if err := awaitParked(ctx, b, ew, bg, progress); err != nil {
		return nil, err
	}
	var lat, pub []time.Duration
	for s := range samples {
		order := fmt.Sprintf("sample-%d", s)
		h, err := waitEventWorkflow.Start(ctx, c, waitEventIn{OrderID: order})
		if err != nil {
			return nil, err
		}
		for parkBy := time.Now().Add(30 * time.Second); ; {
			ws, err := ew.ListEventWaits(ctx, h.ID)
			if err != nil {
				return nil, err
			}
			if len(ws) > 0 {
				break
			}
			if time.Now().After(parkBy) {
				return nil, fmt.Errorf("sample %d: run %s stored no wait within 30 s", s, h.ID)
			}
			if err := sleepCtx(ctx, time.Millisecond); err != nil {
				return nil, err
			}
		}
		// Let the worker finish parking the run, so the event wakes a
		// parked run (the path measured) rather than one still owned.
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if _, err := c.PublishEvent(ctx, "bench.paid", waitEventIn{OrderID: order}, ow.PublishOptions{}); err != nil {
			return nil, err
		}
		pub = append(pub, time.Since(t0))
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		next, err := h.Result(rctx)
		rcancel()
		if err != nil {
			return nil, fmt.Errorf("sample %d: %w", s, err)
		}
		lat = append(lat, time.Unix(0, next).Sub(t0))
	}
	slices.Sort(pub)
	fmt.Fprintf(progress, "waitevent: the publish alone (its transaction, delivery included): p50 %.2fms\n", benchMs(pub[len(pub)/2]))
	return lat, nil
}

// parkTimeout bounds the wait for the background runs to park: a run
// that never parks (its worker failed it, say) must end the measurement
// with an error, not leave it waiting.
const parkTimeout = 10 * time.Minute

// awaitParked waits until every run of hs has stored its event wait,
// reporting progress every 10 s. A run that ends instead fails it,
// naming the run and its error; so does parkTimeout.
func awaitParked(ctx context.Context, b backend.Backend, ew backend.EventWaiter, hs []*ow.Handle[int64], progress interface{ Write([]byte) (int, error) }) error {
	start, report := time.Now(), time.Now()
	for i := 0; i < len(hs); {
		ws, err := ew.ListEventWaits(ctx, hs[i].ID)
		if err != nil {
			return err
		}
		if len(ws) > 0 {
			i++
			continue
		}
		r, err := b.GetWorkflowRun(ctx, hs[i].ID)
		if err != nil {
			return err
		}
		if r.Status.Terminal() {
			return fmt.Errorf("run %s ended %s before its wait was stored: %s", r.ID, r.Status, r.Error)
		}
		if time.Since(start) > parkTimeout {
			return fmt.Errorf("%d of %d runs parked in %v; run %s is %s", i, len(hs), parkTimeout, r.ID, r.Status)
		}
		if time.Since(report) > 10*time.Second {
			fmt.Fprintf(progress, "waitevent: %d of %d runs parked after %.0fs\n", i, len(hs), time.Since(start).Seconds())
			report = time.Now()
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	fmt.Fprintf(progress, "waitevent: %d runs parked in %.1fs\n", len(hs), time.Since(start).Seconds())
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
