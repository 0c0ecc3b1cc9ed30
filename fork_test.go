package openworkflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

func TestAForkedRunReplaysTheStepsBeforeTheForkPointWithoutExecutingThem(t *testing.T) {
	e := newEnv(t)
	var calls counter
	var shipFails atomic.Bool
	shipFails.Store(true)
	wf := ow.Define(ow.Spec{Name: "fulfil"}, func(ctx ow.Context, order int) (string, error) {
		items := 0
		for i := range 3 {
			n, err := ow.Run(ctx, "item", func(context.Context) (int, error) { calls.inc(fmt.Sprintf("item %d", i)); return i + 1, nil })
			if err != nil {
				return "", err
			}
			items += n
		}
		charge, err := ow.Run(ctx, "charge", func(context.Context) (string, error) {
			return fmt.Sprintf("ch_%d_%d", order, calls.inc("charge")), nil
		})
		if err != nil {
			return "", err
		}
		if err := ow.Sleep(ctx, "cool-off", time.Hour); err != nil {
			return "", err
		}
		return ow.Run(ctx, "ship", func(context.Context) (string, error) {
			calls.inc("ship")
			if shipFails.Load() {
				return "", ow.NonRetryable(errors.New("the carrier is down"))
			}
			return fmt.Sprintf("%s shipped %d items", charge, items), nil
		})
	})
	e.register(wf)
	id := start(e, wf, 7)
	e.drain()
	e.clock.Advance(time.Hour)
	e.drain()
	e.requireStatus(id, backend.RunFailed)

	shipFails.Store(false)
	fork, err := e.client.ForkRun(e.ctx, id, "ship")
	if err != nil {
		t.Fatalf("ForkRun: %v", err)
	}
	if fork.ID == id || fork.WorkflowName != "fulfil" {
		t.Fatalf("fork = %+v, want a new run of fulfil", fork)
	}
	e.drain() // no clock move: the cool-off sleep is reused, not slept again
	if got := output[string](e, fork.ID); got != "ch_7_1 shipped 6 items" {
		t.Fatalf("the fork's output = %q, want the first charge's id and all 6 items", got)
	}
	for step, want := range map[string]int{"item 0": 1, "item 1": 1, "item 2": 1, "charge": 1, "ship": 2} {
		if got := calls.get(step); got != want {
			t.Errorf("%s executed %d times, want %d", step, got, want)
		}
	}
	e.requireStatus(id, backend.RunFailed) // the forked run is left as it was

	again, err := e.client.ForkRun(e.ctx, fork.ID, "item:2")
	if err != nil {
		t.Fatalf("ForkRun from item:2: %v", err)
	}
	e.drain()
	e.clock.Advance(time.Hour) // the cool-off comes after the fork point: slept again
	e.drain()
	if got := output[string](e, again.ID); got != "ch_7_2 shipped 6 items" {
		t.Fatalf("the second fork's output = %q, want a new charge", got)
	}
	if calls.get("item 0") != 1 || calls.get("item 1") != 1 || calls.get("item 2") != 2 || calls.get("charge") != 2 {
		t.Errorf("calls after a fork from item:2 = %v, want item 0 and item 1 reused, item 2 and charge executed again", calls.n)
	}

	_, err = e.client.ForkRun(e.ctx, id, "shpi")
	if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), `"shpi"`) || !strings.Contains(err.Error(), `"ship"`) {
		t.Fatalf("ForkRun from an unknown step = %v, want ErrInvalidArgument naming it and the run's steps", err)
	}
	if _, err := e.client.ForkRun(e.ctx, "wrun_nope", "ship"); !errors.Is(err, backend.ErrRunNotFound) {
		t.Fatalf("ForkRun of a missing run = %v, want ErrRunNotFound", err)
	}
}
