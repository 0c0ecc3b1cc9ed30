// Command goindex runs the goindex example standalone: it indexes a few
// standard-library packages as a durable workflow stored in an SQLite file,
// with an in-process worker, and prints the report.
//
//	go run ./examples/goindex [-db path] [-sleep 2s] [-fresh] [package ...]
//
// Kill it midway and run it again: the same run resumes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/internal/demo/goindex"
)

func main() {
	db := flag.String("db", ".openworkflow/goindex.db", "SQLite database file")
	pause := flag.Duration("sleep", goindex.DefaultPause, "durable sleep between batches of packages")
	batch := flag.Int("batch", goindex.DefaultBatch, "packages indexed at once")
	fresh := flag.Bool("fresh", false, "start a new run instead of resuming the last one for these packages")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *db, goindex.DemoOptions{
		Packages: flag.Args(), Pause: *pause, Batch: *batch, Fresh: *fresh, Out: os.Stdout,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "goindex:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, db string, opts goindex.DemoOptions) error {
	b, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		return err
	}
	defer b.Close()
	res, err := goindex.Demo(ctx, b, opts)
	if err != nil {
		return err
	}
	fmt.Println()
	return res.Report.WriteText(os.Stdout)
}
