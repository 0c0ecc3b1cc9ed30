package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/config"
	"github.com/openworkflow-go/openworkflow/internal/demo/goindex"
	"github.com/openworkflow-go/openworkflow/internal/demo/samples"
	"github.com/openworkflow-go/openworkflow/server"
)

// Worker settings of 'ow dev': a short lease, so that after a kill -9 the
// next 'ow dev' takes the runs back within seconds, and a short grace at
// Ctrl-C.
const (
	devLeaseDuration = 5 * time.Second
	devShutdownGrace = 5 * time.Second
)

func (a *app) devCommand() *cobra.Command {
	var addr string
	c := &cobra.Command{
		Use:   "dev",
		Short: "Run a development server: the API, /metrics, the dashboard and a worker with sample workflows, in one process",
		Long: `Run everything in one process on the configured backend (by default the
SQLite file .openworkflow/openworkflow.db, created if needed): the HTTP API
under /v1, Prometheus metrics at /metrics, the dashboard at / (when this
build has one) and a worker with these workflows registered:

  samples/hello    one step: {"name": "Ada"} → {"greeting": "Hello, Ada!"}
  samples/order    a retried step, a durable sleep, a child run
                   (samples/ship) and a wait for the signal
                   order/<orderId>/delivered (30 s); input {} will do
  goindex          the 'ow demo' workflow: {"root": "<GOROOT>/src", "packages": ["strings"]}
  openflow         an OpenFlow flow given in the input, and each flow of
                   openflow.dirs under its path

The worker executes only these workflows' runs: in a project of your own
(say, one 'ow init' made) your program's workers execute yours, and 'ow
dev' shows them all.

Start runs with the API, the dashboard or 'ow runs start'; inspect them
with 'ow runs'. Ctrl-C stops it gracefully: requests in flight finish, and
runs in flight finish within 5 s or are handed back, to be resumed by the
next 'ow dev'.`,
		Example: `  ow dev
  ow dev --addr 127.0.0.1:9090
  ow runs start samples/hello --input '{"name":"Ada"}' --wait`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("addr") {
				a.serverAddr = &addr
			}
			cfg, err := a.loadConfig(cmd)
			if err != nil {
				return err
			}
			if err := cfg.RequireIntact(cmd.Context()); err != nil {
				return err
			}
			if err := checkServer(cfg); err != nil {
				return err
			}
			b, err := cfg.OpenBackend(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			client := ow.NewClient(b)
			logger := warnLogger(a.stderr) // no access log: a terminal, not a log collector
			opts, m, err := httpOptions(cfg, client, logger)
			if err != nil {
				return err
			}
			flows, err := flowDefinitions(cfg)
			if err != nil {
				return err
			}
			ix := goindex.New(goindex.Options{Progress: a.stderr})
			defs := append(samples.Definitions(), ix.Index, ix.Package)
			defs = append(defs, flows...)
			w := ow.NewWorker(b, ow.WorkerOptions{
				Concurrency: cfg.Worker.Concurrency, Logger: logger, Metrics: m,
				LeaseDuration: devLeaseDuration, ShutdownGracePeriod: devShutdownGrace, Limits: workerLimits(cfg),
			})
			if err := w.Register(defs...); err != nil {
				return err
			}
			opts.Worker = w
			opts.Ready = func(addr string) {
				printDevBanner(a.stdout, cfg, addr, defs, opts.Dashboard != nil, a.inv)
			}
			err = server.Serve(cmd.Context(), client, opts)
			if err == nil {
				fmt.Fprintln(a.stdout, "ow dev stopped; run it again to carry on where it stopped")
			}
			return err
		},
	}
	c.Flags().StringVar(&addr, "addr", config.DefaultServerAddr, "address to listen on [$"+config.EnvServerAddr+"]")
	c.Flags().IntVar(&a.concurrency, "concurrency", 0, "runs the worker executes at once (default 10) [$"+config.EnvWorkerConcurrency+"]")
	return c
}

// printDevBanner says where everything is and how to start a run, with
// ow run as inv (see invocationFor).
func printDevBanner(w io.Writer, cfg *config.Config, addr string, defs []ow.Definition, dashboard bool, inv string) {
	base := "http://" + addr
	var names []string
	for _, d := range defs {
		names = append(names, d.Spec().Name)
	}
	fmt.Fprintf(w, "ow dev: %s %s, a worker with %d slots\n", cfg.Kind(), cfg.Location(), cfg.Worker.Concurrency)
	fmt.Fprintf(w, "  workflows  %s\n", strings.Join(names, ", "))
	if dashboard {
		fmt.Fprintf(w, "  dashboard  %s/\n", base)
	}
	fmt.Fprintf(w, "  API        %s/v1  (described by %s/v1/openapi.json)\n", base, base)
	fmt.Fprintf(w, "  metrics    %s/metrics\n", base)
	fmt.Fprintf(w, "Start a run:\n")
	fmt.Fprintf(w, "  curl -s %s/v1/runs -H 'Content-Type: application/json' -d '{\"workflowName\":\"%s\",\"input\":{\"name\":\"Ada\"}}'\n", base, samples.HelloName)
	fmt.Fprintf(w, "  %s runs start %s --input '{}'   # prints the run's id\n", inv, samples.OrderName)
	fmt.Fprintf(w, "  %s runs signal <run id> %s --data '{\"by\":\"courier\"}'\n", inv, samples.DeliveredSignal("ord-1"))
	fmt.Fprintf(w, "Ctrl-C stops it.\n")
}
