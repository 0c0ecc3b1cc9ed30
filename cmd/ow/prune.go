package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/config"
)

// pruneProgressEvery is how often a long prune prints its progress (a
// variable for tests).
var pruneProgressEvery = time.Second

func (a *app) runsPruneCommand() *cobra.Command {
	var (
		olderThan, workflow string
		dryRun              bool
		batch               int
	)
	c := &cobra.Command{
		Use:   "prune",
		Short: "Delete finished runs older than the retention period",
		Long: `Delete the finished runs (completed, failed, canceled) that finished longer
ago than the retention period, with their steps, signals, hooks and streams,
in batches of --batch runs, each its own short transaction, so workers
keep running meanwhile. Runs still in use are kept: a child whose parent
still waits for its result, and every run that has not finished.

The period is --older-than for every workflow, or else the retention
section of openworkflow.yaml (a default and periods per workflow; 'ow
server' applies it on its own every hour). --dry-run prints what would be
deleted and deletes nothing. A long prune prints its progress on stderr
every second; interrupted, it keeps what it deleted and can be run again.`,
		Example: `  ow runs prune --older-than 30d --dry-run
  ow runs prune --older-than 30d
  ow runs prune --older-than 7d --workflow nightly-report
  ow runs prune                     # the retention of openworkflow.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if batch < 1 || batch > backend.MaxPruneBatch {
				return fmt.Errorf("invalid --batch %d: want 1 to %d", batch, backend.MaxPruneBatch)
			}
			var period time.Duration
			if olderThan != "" {
				d, err := config.ParseDuration(olderThan)
				if err != nil {
					return fmt.Errorf("invalid --older-than: %w", err)
				}
				if d == 0 {
					return fmt.Errorf("invalid --older-than %q: a period of 0 would delete every finished run; give one such as 30d", olderThan)
				}
				period = d
			}
			if workflow != "" && period == 0 {
				return fmt.Errorf("--workflow needs --older-than: say how long that workflow's runs are kept")
			}
			cfg, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			r, err := retentionOf(cfg, period, workflow)
			if err != nil {
				return err
			}
			started, last := time.Now(), time.Now()
			verb := "deleted"
			if dryRun {
				verb = "would delete"
			}
			rep, err := ow.NewClient(b).PruneRuns(cmd.Context(), r, ow.PruneOptions{
				DryRun: dryRun, BatchSize: batch,
				Progress: func(p ow.PruneProgress) {
					if time.Since(last) < pruneProgressEvery {
						return
					}
					last = time.Now()
					fmt.Fprintf(a.stderr, "%s %d runs so far (%d batches, %s)…\n", verb, p.Deleted.Total(), p.Batches, time.Since(started).Round(time.Second))
				},
			})
			if err != nil {
				if rep.Batches > 0 {
					return fmt.Errorf("%w (%d runs %s before the error; run the command again to go on)", err, rep.Deleted.Total(), pastTense(verb))
				}
				return err
			}
			if a.jsonOut {
				return a.printJSON(rep)
			}
			return a.printPrune(r, rep, verb, time.Since(started))
		},
	}
	f := c.Flags()
	f.StringVar(&olderThan, "older-than", "", "delete runs finished longer ago than this, e.g. 30d or 12h (default: openworkflow.yaml's retention)")
	f.StringVar(&workflow, "workflow", "", "only runs of this workflow (with --older-than)")
	f.BoolVar(&dryRun, "dry-run", false, "count what would be deleted; delete nothing")
	f.IntVar(&batch, "batch", backend.DefaultPruneBatch, fmt.Sprintf("runs per transaction (1 to %d)", backend.MaxPruneBatch))
	return c
}

// retentionOf is the policy of a prune: period for every workflow (or
// only workflow) when given, else the configuration's.
func retentionOf(cfg *config.Config, period time.Duration, workflow string) (ow.Retention, error) {
	switch {
	case workflow != "":
		return ow.Retention{Workflows: map[string]time.Duration{workflow: period}}, nil
	case period > 0:
		return ow.Retention{Default: period}, nil
	case !cfg.Retention.Enabled():
		where := "openworkflow.yaml"
		if cfg.File != "" {
			where = cfg.File
		}
		return ow.Retention{}, fmt.Errorf("no retention period: pass --older-than (e.g. --older-than 30d), or set retention.default in %s", where)
	}
	def, ws := cfg.Retention.Periods()
	return ow.Retention{Default: def, Workflows: ws}, nil
}

// printPrune prints a prune's report: totals by status and by period.
func (a *app) printPrune(r ow.Retention, rep ow.PruneReport, verb string, took time.Duration) error {
	d := rep.Deleted
	fmt.Fprintf(a.stdout, "%s %d finished runs (%d completed, %d failed, %d canceled) in %d batches, %s\n",
		verb, d.Total(), d.Completed, d.Failed, d.Canceled, rep.Batches, took.Round(time.Millisecond))
	for _, name := range slices.Sorted(maps.Keys(rep.ByWorkflow)) {
		period := r.Default
		label := "other workflows"
		if name != "" {
			period, label = r.Workflows[name], "workflow "+name
		}
		fmt.Fprintf(a.stdout, "  %-30s older than %-8s %d\n", label, config.Duration(period), rep.ByWorkflow[name])
	}
	if rep.DryRun {
		fmt.Fprintln(a.stdout, "dry run: nothing was deleted; run without --dry-run to delete")
	}
	return nil
}

// pastTense turns the progress verb into the error's.
func pastTense(verb string) string { return strings.Replace(verb, "would delete", "counted", 1) }
