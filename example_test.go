package openworkflow_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
)

// exampleBackend opens a SQLite database in a temporary directory, as a
// program would open its own file (or postgres.Open).
func exampleBackend() (*sqlite.Backend, func()) {
	dir, err := os.MkdirTemp("", "openworkflow-example")
	if err != nil {
		log.Fatal(err)
	}
	b, err := sqlite.Open(context.Background(), filepath.Join(dir, "openworkflow.db"), sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	return b, func() { b.Close(); os.RemoveAll(dir) }
}

// A workflow of one step and a durable sleep, run to its result by an
// in-process worker.
func Example() {
	greet := ow.Define(ow.Spec{Name: "greet"}, func(ctx ow.Context, name string) (string, error) {
		upper, err := ow.Run(ctx, "shout", func(context.Context) (string, error) {
			return strings.ToUpper(name), nil // runs once; replays return the recorded result
		})
		if err != nil {
			return "", err
		}
		if err := ow.Sleep(ctx, "pause", 10*time.Millisecond); err != nil {
			return "", err // ErrSuspended: the run parks, holding no slot; return it
		}
		return "hello, " + upper, nil
	})

	ctx := context.Background()
	b, closeBackend := exampleBackend()
	defer closeBackend()
	w := ow.NewWorker(b, ow.WorkerOptions{})
	if err := w.Register(greet); err != nil {
		log.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(ctx)

	h, err := greet.Start(ctx, ow.NewClient(b), "ada")
	if err != nil {
		log.Fatal(err)
	}
	out, err := h.Result(ctx)
	fmt.Println(out, err)
	// Output: hello, ADA <nil>
}

// Steps started with Go run in parallel; each is recorded on its own, so a
// replay after a crash re-runs only those that had not finished.
func ExampleGo() {
	sum := ow.Define(ow.Spec{Name: "sum-of-squares"}, func(ctx ow.Context, n int) (int, error) {
		var futures []*ow.Future[int]
		for i := 1; i <= n; i++ {
			futures = append(futures, ow.Go(ctx, fmt.Sprintf("square-%d", i), func(context.Context) (int, error) {
				return i * i, nil
			}))
		}
		total := 0
		for _, f := range futures {
			v, err := f.Get()
			if err != nil {
				return 0, err
			}
			total += v
		}
		return total, nil
	})

	ctx := context.Background()
	b, closeBackend := exampleBackend()
	defer closeBackend()
	w := ow.NewWorker(b, ow.WorkerOptions{})
	if err := w.Register(sum); err != nil {
		log.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(ctx)

	h, err := sum.Start(ctx, ow.NewClient(b), 4)
	if err != nil {
		log.Fatal(err)
	}
	out, err := h.Result(ctx)
	fmt.Println(out, err)
	// Output: 30 <nil>
}

// A child workflow runs as a run of its own; the parent parks until it
// finishes and is woken by its completion.
func ExampleRunWorkflow() {
	double := ow.Define(ow.Spec{Name: "double"}, func(ctx ow.Context, n int) (int, error) { return 2 * n, nil })
	parent := ow.Define(ow.Spec{Name: "parent"}, func(ctx ow.Context, n int) (int, error) {
		d, err := ow.RunWorkflow(ctx, double, n, ow.WithTimeout(time.Minute))
		if err != nil {
			return 0, err // ErrSuspended while the child runs
		}
		return d + 1, nil
	})

	ctx := context.Background()
	b, closeBackend := exampleBackend()
	defer closeBackend()
	w := ow.NewWorker(b, ow.WorkerOptions{})
	if err := w.Register(double, parent); err != nil {
		log.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(ctx)

	h, err := parent.Start(ctx, ow.NewClient(b), 20)
	if err != nil {
		log.Fatal(err)
	}
	out, err := h.Result(ctx)
	fmt.Println(out, err)
	// Output: 41 <nil>
}

// A workflow that loops forever keeps its history bounded by continuing
// as new: each run adds a few numbers, then hands its state to a fresh
// run. Result follows the chain to its last run.
func ExampleContinueAsNew() {
	type sum struct{ Next, Total int }
	adder := ow.Define(ow.Spec{Name: "adder"}, func(ctx ow.Context, s sum) (int, error) {
		for ow.HistoryLength(ctx) < 3 { // three steps per run
			n, err := ow.Run(ctx, "add", func(context.Context) (int, error) { return s.Next, nil })
			if err != nil {
				return 0, err
			}
			s.Next, s.Total = s.Next+1, s.Total+n
		}
		if s.Next < 9 {
			return 0, ow.ContinueAsNew(s) // a fresh run, with no history, from s
		}
		return s.Total, nil
	})

	ctx := context.Background()
	b, closeBackend := exampleBackend()
	defer closeBackend()
	w := ow.NewWorker(b, ow.WorkerOptions{})
	if err := w.Register(adder); err != nil {
		log.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(ctx)

	h, err := adder.Start(ctx, ow.NewClient(b), sum{})
	if err != nil {
		log.Fatal(err)
	}
	out, err := h.Result(ctx) // the third run's result: 0+1+…+8
	fmt.Println(out, err)
	_, err = h.Result(ctx, ow.DisableFollowingRuns())
	fmt.Println(errors.Is(err, ow.ErrContinuedAsNew))
	// Output:
	// 36 <nil>
	// true
}
