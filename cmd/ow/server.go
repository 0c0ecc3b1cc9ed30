package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/access"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/config"
	"github.com/openworkflow-go/openworkflow/metrics"
	"github.com/openworkflow-go/openworkflow/server"
)

func (a *app) serverCommand() *cobra.Command {
	var addr string
	var worker bool
	c := &cobra.Command{
		Use:   "server",
		Short: "Serve the web dashboard, the HTTP API and /metrics (and a worker for OpenFlow flows) on the configured backend",
		Long: `Serve the web dashboard at /, the HTTP API under /v1 (GET
/v1/openapi.json describes it), a health check at /healthz and Prometheus
metrics at /metrics, on the configured backend, until interrupted (SIGINT
or SIGTERM: requests in flight finish, event streams end, then the process
exits).

The API, the dashboard and /metrics need a token when the server listens
beyond loopback: set OPENWORKFLOW_API_TOKEN (or server.token in
openworkflow.yaml), 16 bytes at least; the dashboard then asks for it once.
Read-only tokens and tokens limited to a namespace go in server.tokens.
Without a token the server answers only loopback names and refuses
cross-origin changes, so that web pages cannot use it (docs/security.md). With --worker,
the process also runs a worker for the OpenFlow flows of openflow.dirs, as
'ow worker' does, and /metrics includes its measurements; workflows
written in Go run in your own program's workers. With a retention section
in openworkflow.yaml (retention: {default: 30d, workflows: {name: 7d}}),
the server also deletes the finished runs older than their period, at
start and then every retention.interval (default 1h), a batch at a time;
see 'ow runs prune'. For development, 'ow dev' runs all of it with sample
workflows.

The schedules of openworkflow.yaml (schedules:) are put when it starts.
Their ticks are fired by the namespace's workers — this process's with
--worker, 'ow worker', or your program's — not by the API alone.

  OPENWORKFLOW_API_TOKEN=$(openssl rand -hex 32) ow server --addr 0.0.0.0:8080
  curl -H "Authorization: Bearer $OPENWORKFLOW_API_TOKEN" localhost:8080/v1/runs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("addr") {
				a.serverAddr = &addr
			}
			cfg, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			if err := checkServer(cfg); err != nil {
				return err
			}
			if err := a.applySchedules(cmd.Context(), cfg, b); err != nil {
				return err
			}
			client := ow.NewClient(b)
			opts, m, err := httpOptions(cfg, client, slog.New(slog.NewJSONHandler(a.stderr, nil)))
			if err != nil {
				return err
			}
			opts.Ready = func(addr string) {
				auth := "no token: loopback only"
				if n := len(opts.API.AllTokens()); n > 0 {
					auth = fmt.Sprintf("bearer token required, %d token(s)", n)
				}
				fmt.Fprintf(a.stderr, "serving the API on http://%s/v1 and metrics on http://%s/metrics (%s), backend %s %s\n", addr, addr, auth, cfg.Kind(), cfg.Location())
				if opts.Dashboard != nil {
					fmt.Fprintf(a.stderr, "dashboard: http://%s/\n", addr)
				}
				if opts.Pruner != nil {
					fmt.Fprintf(a.stderr, "pruning finished runs by retention: %s\n", cfg.Retention)
				}
			}
			if worker {
				if opts.Worker, err = a.flowWorker(cfg, b, m); err != nil {
					return err
				}
			}
			return server.Serve(cmd.Context(), client, opts)
		},
	}
	c.Flags().StringVar(&addr, "addr", config.DefaultServerAddr, "address to listen on [$"+config.EnvServerAddr+"]")
	c.Flags().BoolVar(&worker, "worker", false, "also run a worker for the OpenFlow flows of openflow.dirs")
	c.Flags().IntVar(&a.concurrency, "concurrency", 0, "runs the worker executes at once (default 10) [$"+config.EnvWorkerConcurrency+"]")
	return c
}

// httpOptions are the server options 'ow server' and 'ow dev' share: the
// API with the configured token, webhook and CORS settings, Prometheus
// metrics at /metrics (also given to the worker the caller adds, as
// returned), the dashboard when this build has one, and a pruner when the
// configuration has a retention period. logger receives the access log
// and the server's events.
func httpOptions(cfg *config.Config, c *ow.Client, logger *slog.Logger) (server.Options, *metrics.Exporter, error) {
	tokens, err := cfg.Server.AccessTokens()
	if err != nil {
		return server.Options{}, nil, err
	}
	proxies, err := cfg.Server.Proxies()
	if err != nil {
		return server.Options{}, nil, err
	}
	m, err := metrics.New(metrics.Options{Client: c, Logger: logger})
	if err != nil {
		return server.Options{}, nil, err
	}
	apiOpts := api.Options{
		Tokens: tokens, PublicWebhooks: cfg.Server.PublicWebhooks, CORSOrigins: cfg.Server.CORSOrigins, Metrics: m,
		Throttle: access.NewThrottle(access.ThrottleOptions{}), // one budget of wrong tokens for the API, /metrics and the dashboard
		Logger:   logger,                                       // Serve sets it too; here the dashboard gets it as well
	}
	opts := server.Options{
		Addr:      cfg.Server.Addr,
		API:       apiOpts,
		Dashboard: dashboard(c, apiOpts, proxies),
		Metrics:   m.Handler(),
		Logger:    logger,
	}
	if cfg.Retention.Enabled() {
		def, ws := cfg.Retention.Periods()
		opts.Pruner = ow.NewPruner(c, ow.PrunerOptions{
			Retention: ow.Retention{Default: def, Workflows: ws},
			Interval:  time.Duration(cfg.Retention.Interval),
			Duty:      cfg.Retention.Duty,
			Logger:    logger,
		})
	}
	return opts, m, nil
}

// checkServer checks the server configuration of cfg before anything
// starts: its tokens (server.token, OPENWORKFLOW_API_TOKEN and
// server.tokens: each at least access.MinTokenLength bytes, with a
// scope) and that an address beyond loopback has one.
func checkServer(cfg *config.Config) error {
	tokens, err := cfg.Server.AccessTokens()
	if err != nil {
		return err
	}
	return server.CheckExposure(cfg.Server.Addr, api.Options{Tokens: tokens})
}

// warnLogger logs warnings and errors as text to w: a worker's logger in
// a terminal.
func warnLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
