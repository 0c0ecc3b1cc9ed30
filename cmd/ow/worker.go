package main

import (
	"fmt"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/config"
	"github.com/openworkflow-go/openworkflow/openflow"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

func (a *app) workerCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "worker",
		Short: "Run a worker for the OpenFlow flows of the configured directories",
		Long: `Start a worker on the configured backend that runs OpenFlow flows until
interrupted (SIGINT or SIGTERM, then a graceful stop):

  - every flow file of openflow.dirs (openworkflow.yaml) as a workflow
    named by its path: f/team/etl.flow.yaml is the workflow "f/team/etl",
    whose input is the flow's args;
  - the "openflow" workflow, which runs the flow given in its input: the
    runs 'ow flow run' starts, so this worker finishes them if that command
    was interrupted.

Runs of other workflows are left to the workers that have them.

A damaged SQLite file (as 'ow doctor' reports it) is refused at start;
one found damaged while the worker runs stops it, with exit status 1 and
a message naming the file and what to do.

It puts the schedules of openworkflow.yaml (schedules:) when it starts,
and fires the due ticks of every schedule of the namespace, as every
worker does: each tick starts one run whichever worker fires it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd)
			if err != nil {
				return err
			}
			// A damaged SQLite file is refused before the worker starts
			// (PRAGMA quick_check, as 'ow doctor' runs); damage found
			// later stops the worker (backend.ErrUnusable).
			if err := cfg.RequireIntact(cmd.Context()); err != nil {
				return err
			}
			b, err := cfg.OpenBackend(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			if err := a.applySchedules(cmd.Context(), cfg, b); err != nil {
				return err
			}
			w, err := a.flowWorker(cfg, b, nil)
			if err != nil {
				return err
			}
			return w.Run(cmd.Context())
		},
	}
	c.Flags().IntVar(&a.concurrency, "concurrency", 0, "runs executed at once (default 10) [$"+config.EnvWorkerConcurrency+"]")
	return c
}

// workerLimits converts the worker.limits of the configuration.
func workerLimits(cfg *config.Config) map[string]ow.Limits {
	if len(cfg.Worker.Limits) == 0 {
		return nil
	}
	out := make(map[string]ow.Limits, len(cfg.Worker.Limits))
	for name, l := range cfg.Worker.Limits {
		out[name] = ow.Limits{Concurrency: l.Concurrency, ConcurrencyPerKey: l.ConcurrencyPerKey, PerWorker: l.PerWorker,
			RateLimit: l.RateLimit, RatePeriod: l.RatePeriod}
	}
	return out
}

// flowWorker returns a worker for the OpenFlow flows of cfg's openflow.dirs
// (each a workflow named by its path) and the "openflow" workflow, and
// says on stderr what it runs. m, if not nil, receives its measurements.
func (a *app) flowWorker(cfg *config.Config, b backend.Backend, m telemetry.Metrics) (*ow.Worker, error) {
	defs, err := flowDefinitions(cfg)
	if err != nil {
		return nil, err
	}
	w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: cfg.Worker.Concurrency, Logger: warnLogger(a.stderr), Metrics: m,
		Limits: workerLimits(cfg)})
	if err := w.Register(defs...); err != nil {
		return nil, err
	}
	flows := defs[2:]
	fmt.Fprintf(a.stderr, "worker on %s %s: %d flow(s) from %s, and %q runs\n", cfg.Kind(), cfg.Location(), len(flows), orNone(cfg.OpenFlow.Dirs), openflow.WorkflowName)
	for _, d := range flows {
		fmt.Fprintf(a.stderr, "  %s\n", d.Spec().Name)
	}
	return w, nil
}

// flowDefinitions are the engine's two workflows ("openflow" and the
// chunks of long loops, "openflow.loop"), first, then one workflow per
// flow file of cfg's openflow.dirs.
func flowDefinitions(cfg *config.Config) ([]ow.Definition, error) {
	e := openflow.New(openflow.Options{Dirs: cfg.OpenFlow.Dirs})
	defs, err := e.DirWorkflows()
	if err != nil {
		return nil, fmt.Errorf("openflow.dirs: %w", err)
	}
	return append(e.Workflows(), defs...), nil
}
