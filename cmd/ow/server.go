package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/config"
	"github.com/openworkflow-go/openworkflow/server"
)

func (a *app) serverCommand() *cobra.Command {
	var addr string
	var worker bool
	c := &cobra.Command{
		Use:   "server",
		Short: "Serve the web dashboard and the HTTP API (and a worker for OpenFlow flows) on the configured backend",
		Long: `Serve the web dashboard at /, the HTTP API under /v1 (GET
/v1/openapi.json describes it) and a health check at /healthz, on the
configured backend, until interrupted (SIGINT or SIGTERM: requests in
flight finish, event streams end, then the process exits).

The API and the dashboard need a token when the server listens beyond
loopback: set OPENWORKFLOW_API_TOKEN (or server.token in
openworkflow.yaml); the dashboard then asks for it once. With
--worker, the process also runs a worker for the OpenFlow flows of
openflow.dirs, as 'ow worker' does; workflows written in Go run in your
own program's workers.

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
			if err := server.CheckExposure(cfg.Server.Addr, cfg.Server.Token); err != nil {
				return err
			}
			client := ow.NewClient(b)
			opts := server.Options{
				Addr: cfg.Server.Addr,
				API: api.Options{
					Token: cfg.Server.Token, PublicWebhooks: cfg.Server.PublicWebhooks, CORSOrigins: cfg.Server.CORSOrigins,
				},
				Logger: slog.New(slog.NewJSONHandler(a.stderr, nil)),
				Ready: func(addr string) {
					auth := "no token: loopback only"
					if cfg.Server.Token != "" {
						auth = "bearer token required"
					}
					fmt.Fprintf(a.stderr, "serving the API on http://%s/v1 (%s), backend %s %s\n", addr, auth, cfg.Kind(), cfg.Location())
					fmt.Fprintf(a.stderr, "dashboard: http://%s/\n", addr)
				},
			}
			if worker {
				if opts.Worker, err = a.flowWorker(cfg, b); err != nil {
					return err
				}
			}
			opts.API.Logger = opts.Logger // Serve sets it too; here the dashboard gets it for its failures
			opts.Dashboard = dashboard(client, opts.API)
			return server.Serve(cmd.Context(), client, opts)
		},
	}
	c.Flags().StringVar(&addr, "addr", config.DefaultServerAddr, "address to listen on [$"+config.EnvServerAddr+"]")
	c.Flags().BoolVar(&worker, "worker", false, "also run a worker for the OpenFlow flows of openflow.dirs")
	c.Flags().IntVar(&a.concurrency, "concurrency", 0, "runs the worker executes at once (default 10) [$"+config.EnvWorkerConcurrency+"]")
	return c
}
