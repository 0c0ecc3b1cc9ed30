// Command orderfulfillment runs the order-fulfillment DAG workflow once
// with an in-process worker and prints each handler's work and the run's
// final DAG status. -fail makes a step fail, to watch compensation.
//
//	go run ./examples/orderfulfillment/cmd/orderfulfillment [-fail send-email] [-fail-attempts 0] [-retries 0]
//	      [-db .openworkflow/orderfulfillment.db | -postgres-url postgres://…]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/examples/orderfulfillment"
)

func main() {
	db := flag.String("db", ".openworkflow/orderfulfillment.db", "SQLite database file")
	pgURL := flag.String("postgres-url", "", "PostgreSQL URL (instead of -db)")
	fail := flag.String("fail", "", "name of a step whose handler fails, e.g. charge-card, emit-invoice, send-email")
	failAttempts := flag.Int("fail-attempts", 0, "attempts of -fail that fail before one succeeds; 0: all (the step fails for good)")
	retries := flag.Int("retries", -1, "retries of every step (-1: the definition's, 3, with backoff 1 s, 2 s, 4 s)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := orderfulfillment.Options{Fail: *fail, FailAttempts: *failAttempts, Out: os.Stdout}
	if *retries >= 0 {
		opts.Retries = retries
	}
	if err := run(ctx, *db, *pgURL, opts); err != nil {
		fmt.Fprintln(os.Stderr, "orderfulfillment:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, db, pgURL string, opts orderfulfillment.Options) error {
	var b backend.Backend
	var err error
	if pgURL != "" {
		b, err = postgres.Open(ctx, pgURL, postgres.Options{})
	} else {
		b, err = sqlite.Open(ctx, db, sqlite.Options{})
	}
	if err != nil {
		return err
	}
	defer b.Close()
	res, err := orderfulfillment.Run(ctx, b, opts)
	if err != nil {
		return err
	}
	fmt.Println()
	return orderfulfillment.WriteStatus(os.Stdout, res.Status)
}
