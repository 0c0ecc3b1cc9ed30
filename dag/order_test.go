package dag_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/dag"
)

// Compensation undoes the steps in reverse order of completion, the order
// the run's history records, as pgshift's documentation says ("reverse
// execution order"): of two parallel steps that completed y then x, x is
// undone first, though y is declared later. The status's Compensations
// gives the same order.
func TestCompensationUndoesInReverseOrderOfCompletion(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		fx.handle("a", nil)
		fx.handle("y", nil)
		fx.handle("undo", nil)
		fx.handle("boom", failing("declined"))
		// x completes only once y's completion is recorded and the clock
		// has moved past it, so the history orders y before x.
		fx.handle("x", func(ctx context.Context, sc dag.StepContext) (any, error) {
			return "x", waitUntil(ctx, func() (bool, error) {
				st, err := fx.eng.Status(ctx, sc.RunID)
				if err != nil {
					return false, err
				}
				y := st.Steps["y"]
				return y.CompletedAt != nil && time.Now().After(y.CompletedAt.Add(2*time.Millisecond)), nil
			})
		})
		d := def("order", "a:a:undo", "x:x:undo<-a", "y:y:undo<-a", "z:boom<-x,y")
		for i := range d.Steps {
			d.Steps[i].Retries = dag.Retries(0)
		}
		fx.define(d)
		fx.startWorker(ow.WorkerOptions{}, "order")
		runID := fx.start("order", nil)
		st := fx.finish(runID)
		want := []string{"x", "y", "a"}
		if got := fx.rec.compensations(); !slices.Equal(got, want) {
			t.Fatalf("compensations ran %v, want %v (reverse order of completion)", got, want)
		}
		if st.Status != dag.StatusCompensated || !slices.Equal(st.Compensations, want) {
			t.Fatalf("run %s, chain %v; want compensated, chain %v", st.Status, st.Compensations, want)
		}
		x, y := st.Steps["x"], st.Steps["y"]
		if x.CompletedAt == nil || y.CompletedAt == nil || !x.CompletedAt.After(*y.CompletedAt) {
			t.Fatalf("x completed %v, y %v: the test meant y first", x.CompletedAt, y.CompletedAt)
		}
	})
}

// waitUntil polls cond every 5 ms until it holds, fails, or ctx ends (or
// a minute passes), for handlers that wait on the run's recorded state.
func waitUntil(ctx context.Context, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("condition never held: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
