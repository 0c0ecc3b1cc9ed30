package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/openworkflow-go/openworkflow/cmd/ow/internal/bench"
	"github.com/openworkflow-go/openworkflow/config"
)

func (a *app) benchCommand() *cobra.Command {
	var (
		o          bench.Options
		backend    string
		cpuprofile string
	)
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure the engine on the standard workloads W0–W5, L3 and L3h, on PostgreSQL and SQLite",
		Long: `Run the standard workloads (enqueue W0/W0b, 3-step throughput W1,
latency W2, three-step latency L3, and L3h through
the HTTP API's run-and-wait start, fan-out W3, durable sleep W4, scale-out W5 over 2 and 4 worker
processes; on request L0, the pgbench limit, W1m, W1 with Prometheus
metrics, measured in turn with W1, W1k, W1 with a concurrency key on
every run (100 keys, at most 5 runs of each at once), W1f, W1 with fair
shares on 100 keys, measured in turn with W1, R1, W1 while a
prune deletes
--prune-runs finished runs, and S1, a schedule ticking every second for
--s1-duration over 3 worker processes) and print runs/s, steps/s,
PostgreSQL commits per step, latency and wake lateness percentiles, and
S1's tick lateness (a run's created_at − its tick).

Each measurement runs on a fresh database: on PostgreSQL a database
ow_bench_<random> created through the admin connection
($` + config.EnvPostgresURL + ` or --postgres-url, default
` + bench.DefaultPostgresURL + `; the user needs
CREATEDB) and dropped afterwards, on SQLite a new file in WAL mode. Every
run's output is verified: a wrong or missing one fails the workload.
With OW_BENCH_LOG_STATEMENTS set, each PostgreSQL database logs every
statement to the server's log (log_min_duration_statement 0; the user
must be a superuser): the trace of a run, statement by statement.

Progress goes to stderr, results to stdout (--json: one object per line).
--compare-openworkflow-ts also runs the same workloads on the TypeScript
OpenWorkflow (npm openworkflow@0.10, installed in a temporary directory;
needs node and npm; its SQLite backend needs Node 22.13 or later, which is
installed from npm into the same directory, about 30 MB, when the node on
PATH is older) and prints Go/TS ratios.`,
		Example: `  ow bench                                  # everything, standard counts
  ow bench --runs 200                       # a quick check that it all works
  ow bench --workload W1,W2 --backend postgres --repeat 3
  ow bench --repeat 3 --compare-openworkflow-ts
  ow bench --workload W1,W1m --repeat 5     # what metrics cost: W1m's speed-up over W1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := bench.ParseWorkloads(o.Workloads)
			if err != nil {
				return fmt.Errorf("invalid --workload: %w", err)
			}
			bs, err := bench.ParseBackends([]string{backend})
			if err != nil {
				return fmt.Errorf("invalid --backend: %w", err)
			}
			o.Workloads, o.Backends = ws, bs
			o.PostgresURL = os.Getenv(config.EnvPostgresURL)
			if cmd.Flags().Changed("postgres-url") && a.postgresURL != "" {
				o.PostgresURL = a.postgresURL
			}
			o.Progress = a.stderr
			o.WorkerCommand = benchWorkerCommand
			if cpuprofile != "" {
				stop, err := startCPUProfile(cpuprofile)
				if err != nil {
					return err
				}
				defer stop()
			}
			rep, err := bench.Run(cmd.Context(), o)
			if rep != nil {
				var werr error
				if a.jsonOut {
					werr = bench.WriteJSON(a.stdout, rep)
				} else {
					fmt.Fprintln(a.stdout)
					werr = bench.WriteText(a.stdout, rep)
				}
				if err == nil {
					err = werr
				}
			}
			return err
		},
	}
	f := c.Flags()
	f.StringSliceVar(&o.Workloads, "workload", nil, "workloads to run, comma-separated: W0 (with W0b), W0b, W1, W1m, W1k, W1f, W2, L3, L3h, W3, W4, W5, L0, R1, S1, or all (default all = W0–W5, L3, L3h)")
	f.IntVar(&o.PruneRuns, "prune-runs", bench.DefaultPruneRuns, "R1: the finished runs seeded and pruned while W1 runs")
	f.Float64Var(&o.PruneDuty, "prune-duty", 0, "R1: the prune's largest share of the time beside W1, 0 to 1 (default 0.05, ow server's pruner's)")
	f.IntVar(&o.Runs, "runs", 0, "W1's run count; the others keep their standard proportion (default: the standard counts, W1 = 5000)")
	f.IntVar(&o.Concurrency, "concurrency", bench.DefaultConcurrency, "worker slots")
	f.StringVar(&backend, "backend", "both", "postgres, sqlite or both")
	f.IntVar(&o.Repeat, "repeat", 1, "measurements per workload, each on a fresh database; medians are reported")
	f.BoolVar(&o.CompareTS, "compare-openworkflow-ts", false, "also run the workloads on the TypeScript OpenWorkflow and print Go/TS ratios")
	f.DurationVar(&o.L0Duration, "l0-duration", 20*time.Second, "how long L0 runs pgbench per client count (10, 20 and 50 clients)")
	f.DurationVar(&o.S1Duration, "s1-duration", 2*time.Minute, "how long S1's schedule ticks, once a second")
	f.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of this process (client and in-process worker) to a file")
	c.AddCommand(a.benchWorkerCommand(), a.benchEventsCommand(), a.benchWaitEventCommand(), a.benchScaleCommand())
	return c
}

// benchWorkerCommand is the hidden "ow bench worker": a W5 worker process,
// started by ow bench itself.
func (a *app) benchWorkerCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "worker --backend postgres|sqlite --dsn URL-or-file --concurrency N",
		Short:              "A bench worker process (started by ow bench for W5)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return bench.WorkerMain(cmd.Context(), args, cmd.InOrStdin(), a.stdout, a.stderr)
		},
	}
}

// benchWorkerCommand re-executes this binary as "ow bench worker args…".
func benchWorkerCommand(ctx context.Context, args []string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.CommandContext(ctx, exe, append([]string{"bench", "worker"}, args...)...)
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
