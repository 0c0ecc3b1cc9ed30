package openworkflow_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

func TestStopReleasesRunsStillExecutingAfterTheGracePeriod(t *testing.T) {
	e := newRealTimeEnv(t)
	started := make(chan struct{})
	var passes atomic.Int32
	wf := ow.Define(ow.Spec{Name: "long"}, func(ctx ow.Context, _ int) (string, error) {
		passes.Add(1)
		return ow.Run(ctx, "work", func(ctx context.Context) (string, error) {
			if passes.Load() == 1 {
				close(started)
				<-ctx.Done() // the first worker's pass is stopped mid-step
				return "", ctx.Err()
			}
			return "finished by the second worker", nil
		})
	})
	first := ow.NewWorker(e.b, ow.WorkerOptions{ShutdownGracePeriod: 50 * time.Millisecond, LeaseDuration: time.Hour})
	if err := first.Register(wf); err != nil {
		t.Fatal(err)
	}
	h, err := wf.Start(e.ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := first.Stop(e.ctx); err != nil {
		t.Fatal(err)
	}
	r := e.run(h.ID)
	if r.Status != backend.RunRunning || r.WorkerID != nil || r.AvailableAt == nil || r.AvailableAt.After(time.Now()) {
		t.Fatalf("after Stop the run is %s, worker %v, available at %v: want released for immediate claim (the lease was an hour)", r.Status, r.WorkerID, r.AvailableAt)
	}
	second := ow.NewWorker(e.b, ow.WorkerOptions{})
	if err := second.Register(wf); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if err := second.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer second.Stop(ctx)
	got, err := h.Result(ctx)
	if err != nil || got != "finished by the second worker" {
		t.Fatalf("Result = %q, %v", got, err)
	}
}

func TestWorkerExecutesAtMostConcurrencyRunsAtOnce(t *testing.T) {
	e := newRealTimeEnv(t)
	const slots = 3
	var running, peak atomic.Int32
	full := make(chan struct{}) // closed once all slots were busy at once
	var fullOnce sync.Once
	wf := ow.Define(ow.Spec{Name: "slot"}, func(ctx ow.Context, _ int) (int, error) {
		return ow.Run(ctx, "hold", func(context.Context) (int, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			if n == slots {
				fullOnce.Do(func() { close(full) })
			}
			select { // hold the slot until every slot was busy at once
			case <-full:
			case <-time.After(5 * time.Second):
			}
			return 1, nil
		})
	})
	var hs []*ow.Handle[int]
	for range 4 * slots {
		h, err := wf.Start(e.ctx, e.client, 0)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	ctx := startWorker(t, e.b, ow.WorkerOptions{Concurrency: slots}, wf)
	for _, h := range hs {
		if _, err := h.Result(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if p := peak.Load(); p != slots {
		t.Fatalf("peak concurrency %d, want exactly %d (all slots used, never more)", p, slots)
	}
}
