package openworkflow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

const day = 24 * time.Hour

// finishRuns starts n runs of wf and drains them to completion.
func finishRuns[I, O any](e *env, wf *ow.Workflow[I, O], in I, n int) []string {
	e.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = start(e, wf, in)
	}
	e.drain()
	for _, id := range ids {
		e.requireStatus(id, backend.RunCompleted)
	}
	return ids
}

// requirePruned fails unless every run of ids is gone (want true) or
// still there (want false).
func requirePruned(e *env, want bool, ids ...string) {
	e.t.Helper()
	for _, id := range ids {
		_, err := e.client.GetRun(e.ctx, id)
		if gone := errors.Is(err, backend.ErrRunNotFound); gone != want || (err != nil && !gone) {
			e.t.Fatalf("run %s: GetRun = %v, want pruned %v", id, err, want)
		}
	}
}

func TestPruneRunsKeepsEachWorkflowsRunsForItsOwnPeriod(t *testing.T) {
	e := newEnv(t)
	echo := func(ctx ow.Context, in string) (string, error) {
		return ow.Run(ctx, "echo", func(context.Context) (string, error) { return in, nil })
	}
	short := ow.Define(ow.Spec{Name: "short"}, echo)
	long := ow.Define(ow.Spec{Name: "long"}, echo)
	forever := ow.Define(ow.Spec{Name: "forever"}, echo)
	e.register(short, long, forever)
	shortIDs := finishRuns(e, short, "s", 5)
	longIDs := finishRuns(e, long, "l", 2)
	foreverIDs := finishRuns(e, forever, "f", 1)
	r := ow.Retention{Default: 30 * day, Workflows: map[string]time.Duration{"short": 7 * day, "forever": 0}}

	e.clock.Advance(10 * day)
	var progress []ow.PruneProgress
	dry, err := e.client.PruneRuns(e.ctx, r, ow.PruneOptions{DryRun: true, BatchSize: 2, Now: e.clock.Now,
		Progress: func(p ow.PruneProgress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Deleted.Completed != 5 || dry.ByWorkflow["short"] != 5 || !dry.DryRun {
		t.Fatalf("dry run at 10 days = %+v, want the 5 runs of short counted", dry)
	}
	if len(progress) != dry.Batches || progress[len(progress)-1].Deleted.Completed != 5 || progress[0].Workflow != "short" {
		t.Fatalf("progress = %+v, want one report per batch (%d), ending at 5 runs of short", progress, dry.Batches)
	}
	requirePruned(e, false, shortIDs...)

	before, err := e.client.CountRuns(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.client.PruneRuns(e.ctx, r, ow.PruneOptions{BatchSize: 2, Now: e.clock.Now})
	if err != nil || rep.Deleted.Completed != 5 || rep.Batches != 3+1 {
		t.Fatalf("prune at 10 days = %+v, %v; want 5 runs of short in 3 batches, and one empty batch of the default", rep, err)
	}
	requirePruned(e, true, shortIDs...)
	requirePruned(e, false, append(longIDs, foreverIDs...)...)
	after, err := e.client.CountRuns(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after != before.Sub(rep.Deleted) {
		t.Fatalf("CountRuns after the prune = %+v, want %+v less %+v", after, before, rep.Deleted)
	}

	e.clock.Advance(21 * day)
	if rep, err := e.client.PruneRuns(e.ctx, r, ow.PruneOptions{Now: e.clock.Now}); err != nil || rep.ByWorkflow[""] != 2 {
		t.Fatalf("prune at 31 days = %+v, %v; want the 2 runs of long, under the default period", rep, err)
	}
	requirePruned(e, true, longIDs...)
	requirePruned(e, false, foreverIDs...)
}

func TestPruneRunsKeepsAFinishedChildWhoseParentHasNotReadItYet(t *testing.T) {
	e := newEnv(t)
	child := ow.Define(ow.Spec{Name: "pruned-child"}, func(ctx ow.Context, in int) (int, error) { return in * 3, nil })
	parent := ow.Define(ow.Spec{Name: "pruned-parent"}, func(ctx ow.Context, in int) (int, error) {
		return ow.RunWorkflow(ctx, child, in)
	})
	e.register(child, parent)
	id := start(e, parent, 14)
	// Tick until the child has finished: its parent, woken by it, has not
	// run again yet, so its workflow step still waits for the child's row.
	var c *backend.WorkflowRun
	for i := 0; ; i++ {
		if i > 20 {
			t.Fatal("the child did not finish in 20 ticks")
		}
		e.tick()
		if c = childOf(e, id); c.Status == backend.RunCompleted {
			break
		}
	}
	if p := e.run(id); p.Status.Terminal() {
		t.Fatalf("the parent is %s already; the test needs it to still wait", p.Status)
	}
	e.clock.Advance(60 * day)
	rep, err := e.client.PruneRuns(e.ctx, ow.Retention{Default: 30 * day}, ow.PruneOptions{Now: e.clock.Now})
	if err != nil || rep.Deleted.Total() != 0 {
		t.Fatalf("PruneRuns = %+v, %v; want nothing deleted: the parent still reads the child", rep, err)
	}
	e.drain()
	if got := output[int](e, id); got != 42 {
		t.Fatalf("the parent's output is %d, want 42 from the child kept for it", got)
	}
}

func TestPrunerPrunesAtStartAndAgainEveryInterval(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "pruned"}, func(ctx ow.Context, in int) (int, error) { return in, nil })
	e.register(wf)
	first := finishRuns(e, wf, 1, 3)
	e.clock.Advance(2 * day)
	p := ow.NewPruner(e.client, ow.PrunerOptions{Retention: ow.Retention{Default: day}, Interval: 20 * time.Millisecond, Now: e.clock.Now})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = p.Stop(context.Background())
		}
	}()
	waitPruned := func(ids []string) {
		t.Helper()
		for _, id := range ids {
			for {
				_, err := e.client.GetRun(ctx, id)
				if errors.Is(err, backend.ErrRunNotFound) {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("run %s not pruned within 10 s (GetRun: %v)", id, err)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	waitPruned(first)
	second := finishRuns(e, wf, 2, 2)
	e.clock.Advance(2 * day)
	waitPruned(second)
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if _, err := p.Last(); err != nil {
		t.Fatalf("the last prune failed: %v", err)
	}
	if err := ow.NewPruner(e.client, ow.PrunerOptions{Retention: ow.Retention{Default: -day}}).Start(ctx); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("Start with a negative period = %v, want ErrInvalidArgument", err)
	}
	if err := ow.NewPruner(e.client, ow.PrunerOptions{Retention: ow.Retention{Default: day}, Duty: 1.5}).Start(ctx); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("Start with a duty of 1.5 = %v, want ErrInvalidArgument", err)
	}
	if _, err := e.client.PruneRuns(ctx, ow.Retention{Default: day}, ow.PruneOptions{Duty: -0.1}); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("PruneRuns with a negative duty = %v, want ErrInvalidArgument", err)
	}
}
