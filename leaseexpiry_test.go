package openworkflow_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// unrenewableBackend fails every lease renewal as an unreachable database
// does; every other call goes through.
type unrenewableBackend struct{ backend.Backend }

func (unrenewableBackend) ExtendWorkflowRunLease(context.Context, backend.ExtendWorkflowRunLeaseParams) error {
	return errors.New("failed to connect: connection refused")
}

// TestAPassWhoseLeaseRanOutUnrenewedStops: when the lease cannot be
// renewed (the database is failing over) and runs out, the pass's
// context ends, so the step stops before another worker, or this one,
// claims the run again and runs the step a second time: the step never
// runs in two places at once. Before, the pass went on while its run
// was claimed and executed again.
func TestAPassWhoseLeaseRanOutUnrenewedStops(t *testing.T) {
	eachBackend(t, func(t *testing.T, inner backend.Backend) {
		var executions, running, overlapped atomic.Int32
		firstCause := make(chan error, 1)
		wf := ow.Define(ow.Spec{Name: "unrenewable"}, func(ctx ow.Context, _ int) (string, error) {
			return ow.Run(ctx, "long", func(c context.Context) (string, error) {
				if running.Add(1) > 1 {
					overlapped.Add(1)
				}
				defer running.Add(-1)
				if executions.Add(1) > 1 {
					return "second", nil
				}
				<-c.Done() // the first execution waits for its context
				firstCause <- context.Cause(c)
				return "", c.Err()
			})
		})
		const lease = time.Second
		b := unrenewableBackend{inner}
		w := ow.NewWorker(b, ow.WorkerOptions{ID: "unrenewable", Concurrency: 2, LeaseDuration: lease})
		if err := w.Register(wf); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := w.Stop(context.Background()); err != nil {
				t.Errorf("stop: %v", err)
			}
		}()
		h, err := wf.Start(ctx, ow.NewClient(inner), 0)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case cause := <-firstCause:
			if cause == nil {
				t.Fatal("the first execution's context ended without a cause")
			}
		case <-ctx.Done():
			t.Fatalf("the first execution's context never ended although its lease (%v) could not be renewed", lease)
		}
		out, err := h.Result(ctx)
		if err != nil || out != "second" {
			t.Fatalf("Result = %q, %v; want the second execution's", out, err)
		}
		if n := overlapped.Load(); n != 0 {
			t.Fatalf("the step ran in two places at once %d times", n)
		}
	})
}
