package openworkflow_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestDeadlinesAreKeptWhileTheWorkerIsSaturated runs a worker with one
// slot, held by a step that ignores its context, past the deadline of its
// own run and of a run waiting for the slot: both runs fail with the
// deadline error about a second after their deadline at most, without
// waiting for the step to return or for a free slot; the step's context
// carries the deadline; and when the step finally returns, nothing more
// is committed.
func TestDeadlinesAreKeptWhileTheWorkerIsSaturated(t *testing.T) {
	// Deadlines are kept "within a second"; the bound leaves room for a
	// loaded machine, and is far below the 4–15 s late a run used to be.
	const late = 2500 * time.Millisecond
	eachBackend(t, func(t *testing.T, b backend.Backend) {
		release := make(chan struct{})
		var once sync.Once
		unblock := func() { once.Do(func() { close(release) }) }
		t.Cleanup(unblock)
		stepDeadline := make(chan time.Time, 1)
		var after counter
		wf := ow.Define(ow.Spec{Name: "stubborn"}, func(ctx ow.Context, _ int) (int, error) {
			n, err := ow.Run(ctx, "ignore-context", func(ctx context.Context) (int, error) {
				d, _ := ctx.Deadline()
				select {
				case stepDeadline <- d:
				default:
				}
				<-release // ignores ctx
				return 1, nil
			})
			if err != nil {
				return 0, err
			}
			after.inc("after")
			return ow.Run(ctx, "after", func(context.Context) (int, error) { return n + 1, nil })
		})
		w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: 1})
		if err := w.Register(wf); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		c := ow.NewClient(b)
		deadline := time.Now().Add(time.Second).Truncate(time.Millisecond)
		executing, err := wf.Start(ctx, c, 0, ow.WithDeadline(deadline))
		if err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-stepDeadline:
			if d.Sub(deadline).Abs() > 50*time.Millisecond {
				t.Errorf("the step's context deadline is %v, want the run's %v", d, deadline)
			}
		case <-ctx.Done():
			t.Fatal("the step never started")
		}
		waiting, err := wf.Start(ctx, c, 0, ow.WithDeadline(deadline)) // no slot until the step returns
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{executing.ID, waiting.ID} {
			r := waitTerminal(t, b, id)
			if r.Status != backend.RunFailed || !jsonEq(r.Error, backend.DeadlineExceededError()) {
				t.Fatalf("run %s is %s with error %s, want failed with %s", id, r.Status, r.Error, backend.DeadlineExceededError())
			}
			if r.FinishedAt == nil || r.FinishedAt.Sub(deadline) > late {
				t.Errorf("run %s failed at %v, %v after its deadline; want within %v", id, r.FinishedAt, r.FinishedAt.Sub(deadline), late)
			}
		}
		unblock()                           // the step returns; its pass must commit nothing more
		if err := w.Stop(ctx); err != nil { // waits for the pass to end
			t.Fatal(err)
		}
		if r := waitTerminal(t, b, executing.ID); r.Status != backend.RunFailed {
			t.Fatalf("after its step returned, the expired run is %s, want still failed", r.Status)
		}
		page, err := c.ListSteps(ctx, backend.ListStepAttemptsParams{WorkflowRunID: executing.ID})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Data {
			if s.StepName == "after" || s.Status == backend.StepCompleted {
				t.Errorf("step %s %s was recorded after the run's deadline failed it", s.StepName, s.Status)
			}
		}
		if n := after.get("after"); n != 0 {
			t.Errorf("the workflow went on past the expired step %d times", n)
		}
	})
}

// jsonEq reports whether two JSON texts hold the same value.
func jsonEq(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
