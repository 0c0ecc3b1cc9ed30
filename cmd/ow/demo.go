package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/config"
	"github.com/openworkflow-go/openworkflow/internal/demo/goindex"
)

func (a *app) demoCommand() *cobra.Command {
	var (
		packages []string
		pause    time.Duration
		batch    int
		fresh    bool
	)
	c := &cobra.Command{
		Use:   "demo",
		Short: "Index Go standard-library packages as a durable workflow, end to end",
		Long: `Run the goindex example on the configured backend with an in-process
worker: one child workflow per package (two at a time), a durable sleep
between batches, one step per file, and a final report.

Kill it at any point (even kill -9) and run it again: the latest run of
these packages resumes (the worker's 3 s lease lets the killed process's
runs be claimed again quickly), including one started with --fresh. A run
that already completed (within 24 h) shows its report again; --fresh
starts a new run, which becomes the latest. Each run's workflows carry
its own version, and the demo's worker executes only those, so two demos
never execute (and print) each other's runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pause < 0 {
				return fmt.Errorf("invalid --sleep %s: want a duration of 0 or more, e.g. 2s", pause)
			}
			if batch < 1 {
				return fmt.Errorf("invalid --batch %d: want 1 or more", batch)
			}
			root, err := goindex.SourceRoot()
			if err != nil {
				return err
			}
			if err := goindex.CheckPackages(root, packages); err != nil {
				return fmt.Errorf("invalid --packages: %w", err)
			}
			cfg, err := a.loadConfig(cmd)
			if err != nil {
				return err
			}
			if err := cfg.RequireIntact(cmd.Context()); err != nil {
				return err
			}
			b, err := cfg.OpenBackend(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()

			progress := a.stdout
			if a.jsonOut {
				progress = a.stderr // stdout carries only the JSON document
			}
			if pause == 0 {
				pause = -1 // goindex: negative means no pause
			}
			fmt.Fprintf(progress, "goindex demo on %s %s (kill it any time and run it again: the same run resumes)\n", cfg.Kind(), cfg.Location())
			start := time.Now()
			res, err := goindex.Demo(cmd.Context(), b, goindex.DemoOptions{
				Root: root, Packages: packages, Batch: batch, Pause: pause, Fresh: fresh, Out: progress,
				Worker: ow.WorkerOptions{Concurrency: cfg.Worker.Concurrency},
			})
			if err != nil && cmd.Context().Err() != nil {
				return errors.New("interrupted: run the same 'ow demo' command again to resume the run where it stopped")
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(res)
			}
			return printReport(a.stdout, res, time.Since(start), a.inv)
		},
	}
	f := c.Flags()
	f.StringSliceVar(&packages, "packages", goindex.DefaultPackages, "standard-library packages to index, comma-separated")
	f.DurationVar(&pause, "sleep", goindex.DefaultPause, "durable sleep between batches (0: none)")
	f.IntVar(&batch, "batch", goindex.DefaultBatch, "packages indexed at once")
	f.IntVar(&a.concurrency, "concurrency", 0, "runs the in-process worker executes at once (default 10) [$"+config.EnvWorkerConcurrency+"]")
	f.BoolVar(&fresh, "fresh", false, "start a new run instead of resuming (or re-showing) the latest one for these packages; it becomes the latest")
	return c
}

// printReport prints the demo's report and how to inspect the run with
// ow, run as inv (see invocationFor).
func printReport(w io.Writer, res *goindex.DemoResult, took time.Duration, inv string) error {
	fmt.Fprintln(w)
	if err := res.Report.WriteText(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ndone in %s: run %s; inspect it with '%s runs get %s'\n", formatDuration(took), res.RunID, inv, res.RunID)
	return nil
}
