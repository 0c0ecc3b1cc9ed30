package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/openworkflow-go/openworkflow/cmd/ow/internal/bench"
	"github.com/openworkflow-go/openworkflow/config"
)

// benchScaleCommand is "ow bench scale": the engine on a PostgreSQL
// database of ten million finished runs against an empty one (issue 23).
func (a *app) benchScaleCommand() *cobra.Command {
	var o bench.ScaleOptions
	c := &cobra.Command{
		Use:   "scale",
		Short: "Measure the engine on PostgreSQL with 10,000,000 finished runs loaded, against an empty database",
		Long: `Create two PostgreSQL databases (ow_bench_scale_<random> and
ow_bench_scale_empty_<random>) through the admin connection ($` + config.EnvPostgresURL + `
or --postgres-url, default ` + bench.DefaultPostgresURL + `; the user needs
CREATEDB), load --finished finished runs with 3 completed step attempts
each into the first (generate_series on the server, 100,000 runs per
statement, the secondary indexes rebuilt after the load, then VACUUM
ANALYZE), and measure, beside the empty one:

  W1 runs/s, loaded ÷ empty (in turn, --pairs times each)   target ≥ 0.90
  W2 start-to-result p99                                    target ≤ 25 ms
  a page of 50 with a status filter, p99                    target ≤ 20 ms
  run counts (CountWorkflowRuns), p99                       target ≤ 5 ms
  W1 slowed while --prune-runs of them are pruned           target ≤ 15 %

Every run's output, every page and every count is checked. Each figure is
printed with its target and pass or FAIL (--json: one line). A FAIL is
reported, not an error: the exit status is 1 only when a measurement could
not be taken. Both databases are dropped at the end unless --keep; a
kept load is then restored as loaded (the measurements' runs deleted, the
pruned runs inserted again, VACUUM ANALYZE), and --reuse <database>
measures on it again (restoring it first, should an earlier run have been
interrupted) and keeps it. Ten million runs take about 15 GB and, on 2
cores, most of an hour.`,
		Example: `  ow bench scale                                  # 10,000,000 finished runs
  ow bench scale --finished 20000 --runs 200     # a quick check that it works
  ow bench scale --finished 1000000 --keep --json
  ow bench scale --reuse ow_bench_scale_417b839f7164   # measure again on a kept load`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.PostgresURL = os.Getenv(config.EnvPostgresURL)
			if cmd.Flags().Changed("postgres-url") && a.postgresURL != "" {
				o.PostgresURL = a.postgresURL
			}
			o.Progress = a.stderr
			rep, err := bench.RunScale(cmd.Context(), o)
			if rep != nil {
				var werr error
				if a.jsonOut {
					werr = bench.WriteScaleJSON(a.stdout, rep)
				} else {
					fmt.Fprintln(a.stdout)
					werr = bench.WriteScaleText(a.stdout, rep)
				}
				if err == nil {
					err = werr
				}
			}
			return err
		},
	}
	f := c.Flags()
	f.IntVar(&o.Finished, "finished", bench.DefaultScaleFinished, "finished runs to load (each with 3 step attempts; one in 10 failed)")
	f.IntVar(&o.PruneRuns, "prune-runs", 0, "how many of them finished 60 days ago and are pruned while W1 runs (default min(1,000,000, --finished/10))")
	f.Float64Var(&o.PruneDuty, "prune-duty", 0, "the prune's largest share of the time beside W1, 0 to 1 (default 0.05, ow server's pruner's)")
	f.IntVar(&o.Runs, "runs", 5000, "W1's run count (W2 runs a 25th of it, at least 20)")
	f.IntVar(&o.Concurrency, "concurrency", bench.DefaultConcurrency, "worker slots")
	f.IntVar(&o.Pairs, "pairs", bench.DefaultScalePairs, "W1 measurements per database, and alone/pruning pairs")
	f.BoolVar(&o.Keep, "keep", false, "keep both databases (their names are printed) instead of dropping them")
	f.StringVar(&o.Reuse, "reuse", "", "measure on this loaded database, kept by an earlier --keep, instead of loading one (restored as loaded first; --finished and --prune-runs must be the load's); it is kept")
	return c
}
