// Command ow is the OpenWorkflow command line: it migrates the database,
// lists, inspects and cancels runs, sends signals, checks the set-up
// (doctor), runs a demo workflow end to end, serves the HTTP API and
// Prometheus metrics (ow server, and ow dev with a worker for sample
// workflows), scaffolds a new module (ow init), and validates, runs and
// resumes OpenFlow flows (ow flow, ow worker).
//
// The backend comes from openworkflow.yaml (searched upward from the
// working directory), OPENWORKFLOW_* environment variables and the global
// flags, in increasing precedence; with no configuration it is the SQLite
// file .openworkflow/openworkflow.db. See package config.
//
// Errors are printed to stderr and exit with status 1.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr, "")
	stop()
	os.Exit(code)
}
