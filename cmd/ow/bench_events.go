package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// benchEventsResult is the JSON document of 'ow bench events'.
type benchEventsResult struct {
	Backend          string  `json:"backend"`
	SinglePerSec     float64 `json:"singlePerSec"`
	BatchPerSec      float64 `json:"batchPerSec"`
	BatchSize        int     `json:"batchSize"`
	TriggeredP50Ms   float64 `json:"triggeredP50Ms"`
	TriggeredP95Ms   float64 `json:"triggeredP95Ms"`
	TriggeredSamples int     `json:"triggeredSamples"`
}

// benchEventsCommand is 'ow bench events': the publish rate one at a
// time and in batches (events no trigger matches), and the latency from
// a publish to the first step of the run it triggers, with an idle
// in-process worker. It writes to the configured database: run it on a
// namespace (--namespace) or schema of its own.
func (a *app) benchEventsCommand() *cobra.Command {
	var single, batches, batchSize, samples int
	c := &cobra.Command{
		Use:   "events",
		Short: "Measure publishing events (one at a time, in batches) and event → triggered run's first step latency",
		Long: `Publish --single events one at a time and --batches batches of --batch-size
events (named bench.plain, which no trigger matches), then publish
--samples events one at a time that start a run of a workflow registered on
an idle in-process worker, each after the previous run's first step ran,
and report publishes/s and the time from the publish call to the first
step's start (p50, p95). Writes to the configured database and namespace:
give it one of its own (--namespace, --schema, --sqlite-path).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			ctx := cmd.Context()
			c := ow.NewClient(b)
			res := benchEventsResult{Backend: string(cfg.Kind()), BatchSize: batchSize}

			start := time.Now()
			for i := 0; i < single; i++ {
				if _, err := c.PublishEvent(ctx, "bench.plain", map[string]int{"i": i}, ow.PublishOptions{}); err != nil {
					return err
				}
			}
			res.SinglePerSec = float64(single) / time.Since(start).Seconds()
			batch := make([]ow.Event, batchSize)
			start = time.Now()
			for j := 0; j < batches; j++ {
				for i := range batch {
					batch[i] = ow.Event{Name: "bench.plain", Data: map[string]int{"i": i}}
				}
				if _, err := c.PublishEvents(ctx, batch); err != nil {
					return err
				}
			}
			res.BatchPerSec = float64(batches*batchSize) / time.Since(start).Seconds()

			lat, err := benchTriggeredLatency(ctx, b, c, samples)
			if err != nil {
				return err
			}
			slices.Sort(lat)
			if len(lat) > 0 {
				res.TriggeredSamples = len(lat)
				res.TriggeredP50Ms = float64(lat[len(lat)/2].Microseconds()) / 1000
				res.TriggeredP95Ms = float64(lat[len(lat)*95/100].Microseconds()) / 1000
			}
			if a.jsonOut {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.stdout, "%s: publish one at a time %.0f events/s; in batches of %d %.0f events/s; publish → triggered run's first step p50 %.2f ms, p95 %.2f ms (%d samples)\n",
				res.Backend, res.SinglePerSec, batchSize, res.BatchPerSec, res.TriggeredP50Ms, res.TriggeredP95Ms, res.TriggeredSamples)
			return nil
		},
	}
	f := c.Flags()
	f.IntVar(&single, "single", 2000, "events published one at a time")
	f.IntVar(&batches, "batches", 20, "batches published")
	f.IntVar(&batchSize, "batch-size", 1000, "events per batch (at most 5,000)")
	f.IntVar(&samples, "samples", 200, "triggered runs timed")
	return c
}

// benchTriggeredLatency publishes n events one at a time, each starting a
// run on an idle in-process worker, and returns for each the time from
// the publish call to its run's first step.
func benchTriggeredLatency(ctx context.Context, b backend.Backend, c *ow.Client, n int) ([]time.Duration, error) {
	if n <= 0 {
		return nil, nil
	}
	var mu sync.Mutex
	sent := make([]time.Time, n)
	got := make([]chan time.Duration, n)
	for i := range got {
		got[i] = make(chan time.Duration, 1)
	}
	type in struct {
		Data struct {
			I int `json:"i"`
		} `json:"data"`
	}
	wf := ow.Define(ow.Spec{Name: "bench-events-triggered", Triggers: []ow.EventTrigger{{Event: "bench.trigger"}}}, func(ctx ow.Context, x in) (int, error) {
		return ow.Run(ctx, "first", func(context.Context) (int, error) {
			mu.Lock()
			t0 := sent[x.Data.I]
			mu.Unlock()
			select {
			case got[x.Data.I] <- time.Since(t0):
			default:
			}
			return x.Data.I, nil
		})
	})
	w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: 4})
	if err := w.Register(wf); err != nil {
		return nil, err
	}
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	defer w.Stop(context.Background())
	defer func() { _, _ = c.DeleteEventTriggers(context.Background(), wf.Spec().Name) }()
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		mu.Lock()
		sent[i] = time.Now()
		mu.Unlock()
		if _, err := c.PublishEvent(ctx, "bench.trigger", map[string]int{"i": i}, ow.PublishOptions{}); err != nil {
			return nil, err
		}
		select {
		case d := <-got[i]:
			out = append(out, d)
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("the run of triggered event %d did not reach its first step within 30 s", i)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}
