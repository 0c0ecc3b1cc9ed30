package openworkflow_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

func TestReplayReturnsMemoizedResultsWithoutReexecuting(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "memo"}, func(ctx ow.Context, in int) (int, error) {
		a, err := ow.Run(ctx, "double", func(context.Context) (int, error) {
			calls.inc("double")
			return in * 2, nil
		})
		if err != nil {
			return 0, err
		}
		if err := ow.Sleep(ctx, "nap", time.Minute); err != nil {
			return 0, err
		}
		b, err := ow.Run(ctx, "add", func(context.Context) (int, error) {
			calls.inc("add")
			return a + 1, nil
		})
		return b, err
	})
	e.register(wf)
	id := start(e, wf, 20)

	if n := e.tick(); n != 1 {
		t.Fatalf("first tick claimed %d runs, want 1", n)
	}
	r := e.requireStatus(id, backend.RunRunning)
	if r.WorkerID != nil {
		t.Fatalf("parked run still owned by %s", *r.WorkerID)
	}
	if want := e.clock.Now().Add(time.Minute); r.AvailableAt == nil || !r.AvailableAt.Equal(want) {
		t.Fatalf("parked until %v, want %v", r.AvailableAt, want)
	}
	if e.tick() != 0 {
		t.Fatal("a run parked for a minute was claimed before its time")
	}
	e.clock.Advance(time.Minute)
	e.drain()

	if got := output[int](e, id); got != 41 {
		t.Fatalf("output %d, want 41", got)
	}
	if calls.get("double") != 1 || calls.get("add") != 1 {
		t.Fatalf("executions: double=%d add=%d, want 1 each", calls.get("double"), calls.get("add"))
	}
}

func TestReplayGivesTheSameJSONRoundTripOnFirstPassAndReplay(t *testing.T) {
	e := newEnv(t)
	type rec struct {
		Big  uint64            `json:"big"`
		Nul  *string           `json:"nul"`
		Text string            `json:"text"`
		Map  map[string]string `json:"map"`
	}
	var seen []rec
	wf := ow.Define(ow.Spec{Name: "roundtrip"}, func(ctx ow.Context, _ struct{}) (rec, error) {
		v, err := ow.Run(ctx, "make", func(context.Context) (rec, error) {
			return rec{Big: 12345678901234567890, Text: "a\u0000b", Map: map[string]string{"": "empty"}}, nil
		})
		if err != nil {
			return rec{}, err
		}
		seen = append(seen, v)
		if err := ow.Sleep(ctx, "nap", time.Second); err != nil {
			return rec{}, err
		}
		return v, nil
	})
	e.register(wf)
	id := start(e, wf, struct{}{})
	e.tick()
	e.clock.Advance(time.Second)
	e.drain()
	got := output[rec](e, id)
	if len(seen) != 2 || !reflect.DeepEqual(seen[0], seen[1]) || !reflect.DeepEqual(seen[0], got) {
		t.Fatalf("first pass %+v, replay %+v, output %+v: want all equal", seen[0], seen[1], got)
	}
	if got.Big != 12345678901234567890 || got.Text != "a\u0000b" || got.Map[""] != "empty" {
		t.Fatalf("value changed in storage: %+v", got)
	}
}

func TestDurableKeysCollideAsNameThenIndexAcrossAllStepKinds(t *testing.T) {
	e := newEnv(t)
	noop := func(context.Context) (int, error) { return 1, nil }
	wf := ow.Define(ow.Spec{Name: "keys"}, func(ctx ow.Context, _ int) (int, error) {
		for _, name := range []string{"foo", "foo:1", "foo", "foo"} {
			if _, err := ow.Run(ctx, name, noop); err != nil {
				return 0, err
			}
		}
		if err := ow.Sleep(ctx, "foo", 0); err != nil {
			return 0, err
		}
		if _, err := ow.SendSignal(ctx, "foo", "nobody-listens", nil); err != nil {
			return 0, err
		}
		return 0, nil
	})
	e.register(wf)
	id := start(e, wf, 0)
	e.drain()
	e.requireStatus(id, backend.RunCompleted)
	want := []string{"foo", "foo:1", "foo:2", "foo:3", "foo:4", "foo:5"}
	if got := e.stepNames(id); !reflect.DeepEqual(got, want) {
		t.Fatalf("durable keys %v, want %v", got, want)
	}
}

func TestParallelStepsRunConcurrentlyWithKeysAssignedAtTheCallSite(t *testing.T) {
	e := newEnv(t)
	var calls counter
	const n = 3
	barrier := make(chan struct{})
	arrived := make(chan struct{}, n)
	wf := ow.Define(ow.Spec{Name: "fanout"}, func(ctx ow.Context, _ int) ([]int, error) {
		var fs []*ow.Future[int]
		for i := range n {
			fs = append(fs, ow.Go(ctx, "part", func(context.Context) (int, error) {
				calls.inc("part")
				arrived <- struct{}{}
				select { // all three must be running at once to pass
				case <-barrier:
				case <-time.After(10 * time.Second):
					return 0, ow.NonRetryable(context.DeadlineExceeded)
				}
				return i * 10, nil
			}))
		}
		out := make([]int, n)
		for i, f := range fs {
			v, err := f.Get()
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		if err := ow.Sleep(ctx, "after", time.Second); err != nil {
			return nil, err
		}
		return out, nil
	})
	e.register(wf)
	id := start(e, wf, 0)
	go func() {
		for range n {
			<-arrived
		}
		close(barrier)
	}()
	e.tick()
	e.clock.Advance(time.Second)
	e.drain()
	if got := output[[]int](e, id); !reflect.DeepEqual(got, []int{0, 10, 20}) {
		t.Fatalf("output %v, want [0 10 20]", got)
	}
	if calls.get("part") != n {
		t.Fatalf("parallel steps executed %d times, want %d (replay must not re-run them)", calls.get("part"), n)
	}
	want := map[string]bool{"part": true, "part:1": true, "part:2": true, "after": true}
	for _, s := range e.steps(id) {
		if !want[s.StepName] {
			t.Fatalf("unexpected durable key %q", s.StepName)
		}
	}
}

func TestBranchesStartedBeforeThePassParksOrReturnsStillRun(t *testing.T) {
	e := newEnv(t)
	var calls counter
	wf := ow.Define(ow.Spec{Name: "fire-and-park"}, func(ctx ow.Context, _ int) (int, error) {
		// Neither future is awaited before the pass parks: both branches
		// were started first, so both run in this pass.
		ow.Go(ctx, "bg-a", func(context.Context) (int, error) { calls.inc("a"); return 1, nil })
		ow.Go(ctx, "bg-b", func(context.Context) (int, error) { calls.inc("b"); return 2, nil })
		return 0, ow.Sleep(ctx, "park", time.Second)
	})
	e.register(wf)
	var ids []string
	for range 10 {
		ids = append(ids, start(e, wf, 0))
	}
	e.drain()
	for _, id := range ids {
		got := map[string]backend.StepStatus{}
		for _, s := range e.steps(id) {
			got[s.StepName] = s.Status
		}
		if got["bg-a"] != backend.StepCompleted || got["bg-b"] != backend.StepCompleted {
			t.Fatalf("run %s steps %v: branches started before the park must complete in the pass", id, got)
		}
	}
	if calls.get("a") != 10 || calls.get("b") != 10 {
		t.Fatalf("branches ran a=%d b=%d times, want 10 each", calls.get("a"), calls.get("b"))
	}
}
