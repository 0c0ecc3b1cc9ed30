package dag_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/dag"
)

// failing is a handler that always fails.
func failing(msg string) dag.Handler {
	return func(context.Context, dag.StepContext) (any, error) { return nil, errors.New(msg) }
}

// compensations lists the compensations executed, in order.
func (r *recorder) compensations() []string {
	var out []string
	for _, s := range r.starts() {
		if strings.HasPrefix(s, "compensate:") {
			out = append(out, strings.TrimPrefix(s, "compensate:"))
		}
	}
	return out
}

// Compensations run dependents first: a step is undone before the steps
// it depends on (see also TestCompensationUndoesInReverseOrderOfCompletion
// for parallel steps).
func TestCompensationRunsInReverseTopologicalOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		def  dag.Definition
		want []string
	}{
		{
			// a → b → c, c fails: c's own compensation first, then b, a.
			name: "a chain whose last step fails",
			def:  def("chain", "a:a:undo", "b:b:undo<-a", "c:boom:undo<-b"),
			want: []string{"c", "b", "a"},
		},
		{
			// a → (b ∥ c) → d, d fails: c, which completes after b (its
			// handler waits for b's), is compensated before b.
			name: "a diamond whose join fails",
			def:  def("diamond", "a:a:undo", "b:b:undo<-a", "c:c:undo<-a", "d:boom:undo<-b,c"),
			want: []string{"d", "c", "b", "a"},
		},
		{
			// Steps without a compensate handler (b) and steps that never
			// ran (e) are not compensated.
			name: "only steps that ran and have a compensate handler",
			def:  def("partial", "a:a:undo", "b<-a", "c:boom:undo<-b", "e:e:undo<-c"),
			want: []string{"c", "a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachTarget(t, func(t *testing.T, fx *fixture) {
				for _, h := range []string{"a", "b", "e", "undo"} {
					fx.handle(h, nil)
				}
				fx.handle("c", func(ctx context.Context, sc dag.StepContext) (any, error) {
					return "c", waitUntil(ctx, func() (bool, error) {
						st, err := fx.eng.Status(ctx, sc.RunID)
						if err != nil {
							return false, err
						}
						b := st.Steps["b"]
						return b.CompletedAt != nil && time.Now().After(b.CompletedAt.Add(2*time.Millisecond)), nil
					})
				})
				fx.handle("boom", failing("out of stock"))
				d := dag.Definition{Name: tc.def.Name, Steps: slices.Clone(tc.def.Steps)}
				for i := range d.Steps {
					d.Steps[i].Retries = dag.Retries(0)
				}
				fx.define(d)
				fx.startWorker(ow.WorkerOptions{}, d.Name)
				runID := fx.start(d.Name, nil)
				st := fx.finish(runID)
				if got := fx.rec.compensations(); !slices.Equal(got, tc.want) {
					t.Fatalf("compensations %v, want %v", got, tc.want)
				}
				if st.Status != dag.StatusCompensated {
					t.Fatalf("run %s, want compensated (%v)", st.Status, st.Error)
				}
				if !slices.Equal(st.Compensations, tc.want) {
					t.Errorf("the status gives the compensation chain %v, want %v", st.Compensations, tc.want)
				}
				for _, s := range d.Steps {
					got := st.Steps[s.Name]
					want := dag.StatusCompensated
					switch {
					case s.Handler == "boom":
						// The failed step's own compensation ran, but it
						// never completed: it reads failed.
						want = dag.StatusFailed
					case !slices.Contains(tc.want, s.Name) && got.Attempts == 0:
						want = dag.StatusSkipped
					case !slices.Contains(tc.want, s.Name):
						want = dag.StatusCompleted
					}
					if got.Status != want {
						t.Errorf("step %s is %s, want %s", s.Name, got.Status, want)
					}
					if slices.Contains(tc.want, s.Name) && (got.Compensation == nil || got.Compensation.Status != dag.StatusCompleted || got.Compensation.Attempts != 1 || got.Compensation.CompletedAt == nil) {
						t.Errorf("step %s compensation %+v", s.Name, got.Compensation)
					}
				}
				e := resultError(t, fx.c, runID)
				if e.Name != "CompensatedError" || e.Code != dag.CodeCompensated || !strings.Contains(e.Message, "out of stock") ||
					!strings.Contains(e.Message, "compensated: "+strings.Join(tc.want, ", ")) {
					t.Fatalf("stored error %+v", e)
				}
				run, err := fx.c.GetRun(fx.ctx, runID)
				if err != nil || run.Status != "failed" {
					t.Fatalf("stored run status %v (%v), want failed: OpenWorkflow's statuses only", run.Status, err)
				}
			})
		})
	}
}

func TestCompensateHandlersReceiveTheFailure(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		fx.handle("a", func(context.Context, dag.StepContext) (any, error) { return "charged", nil })
		fx.handle("boom", failing("declined"))
		fx.handle("undo", nil)
		fx.define(dag.Definition{Name: "ctx", Steps: []dag.Step{
			{Name: "a", Handler: "a", Compensate: "undo"},
			{Name: "b", Handler: "boom", Retries: dag.Retries(0), DependsOn: []string{"a"}},
		}})
		fx.startWorker(ow.WorkerOptions{}, "ctx")
		runID := fx.start("ctx", "in")
		fx.finish(runID)
		var sc *dag.StepContext
		for _, e := range fx.rec.all() {
			if e.comp && !e.end {
				sc = &e.sc
			}
		}
		if sc == nil {
			t.Fatal("no compensation ran")
		}
		var out string
		if sc.Step != "a" || !sc.Compensation || sc.Attempt != 1 || sc.RunID != runID || sc.FailedStep != "b" ||
			sc.Failure == nil || sc.Failure.Message != "declined" || sc.DecodeOutput("a", &out) != nil || out != "charged" {
			t.Fatalf("compensation context %+v", sc)
		}
	})
}

// A failing compensation is recorded and the chain goes on; the run, not
// all of whose steps were undone, ends compensation_failed (stored failed
// with code COMPENSATION_FAILED), never compensated.
func TestAFailingCompensationIsRecordedAndTheChainGoesOn(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		for _, h := range []string{"a", "b", "undo"} {
			fx.handle(h, nil)
		}
		fx.handle("boom", failing("payment failed"))
		fx.handle("undo-fails", failing("refund service down"))
		fx.define(dag.Definition{Name: "chain", Steps: []dag.Step{
			{Name: "a", Handler: "a", Compensate: "undo"},
			{Name: "b", Handler: "b", Compensate: "undo-fails", Retries: dag.Retries(1), DependsOn: []string{"a"}},
			{Name: "c", Handler: "boom", Retries: dag.Retries(0), DependsOn: []string{"b"}},
		}})
		fx.startWorker(ow.WorkerOptions{}, "chain")
		runID := fx.start("chain", nil)
		st := fx.finish(runID)
		// b's compensation fails, is retried once (its retries: 1) after
		// a 1 s backoff, fails for good; a's compensation still runs.
		if got, want := fx.rec.compensations(), []string{"b", "b#2", "a"}; !slices.Equal(got, want) {
			t.Fatalf("compensations %v, want %v", got, want)
		}
		b := st.Steps["b"]
		if st.Status != dag.StatusCompensationFailed || b.Status != dag.StatusCompensationFailed || b.Compensation == nil ||
			b.Compensation.Status != dag.StatusFailed || b.Compensation.Attempts != 2 || b.Compensation.Error != "refund service down" {
			t.Fatalf("run %s, b %+v (compensation %+v)", st.Status, b, b.Compensation)
		}
		if a := st.Steps["a"]; a.Status != dag.StatusCompensated {
			t.Fatalf("a is %s, want compensated", a.Status)
		}
		if c := st.Steps["c"]; c.Status != dag.StatusFailed || c.Attempts != 1 || c.Error != "payment failed" {
			t.Fatalf("c %+v", c)
		}
		e := resultError(t, fx.c, runID)
		if e.Name != "CompensationFailedError" || e.Code != dag.CodeCompensationFailed || !strings.Contains(e.Message, `compensation failed: b (after 2 attempts: refund service down)`) {
			t.Fatalf("stored error %+v", e)
		}
		if !slices.Equal(st.Compensations, []string{"b", "a"}) {
			t.Fatalf("compensation chain %v, want [b a]", st.Compensations)
		}
	})
}

func TestCancelStopsADAGRun(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		started := make(chan struct{})
		stopped := make(chan error, 1)
		fx.handle("a", nil)
		fx.handle("block", func(ctx context.Context, _ dag.StepContext) (any, error) {
			close(started)
			<-ctx.Done()
			stopped <- ctx.Err()
			return nil, ctx.Err()
		})
		fx.handle("after", nil)
		fx.handle("undo", nil)
		fx.define(dag.Definition{Name: "cancel", Steps: []dag.Step{
			{Name: "a", Handler: "a", Compensate: "undo"},
			{Name: "block", Handler: "block", DependsOn: []string{"a"}},
			{Name: "after", Handler: "after", DependsOn: []string{"block"}},
		}})
		fx.startWorker(ow.WorkerOptions{}, "cancel")
		runID := fx.start("cancel", nil)
		<-started
		if _, err := fx.c.CancelRun(fx.ctx, runID); err != nil {
			t.Fatal(err)
		}
		if err := <-stopped; !errors.Is(err, context.Canceled) {
			t.Fatalf("the executing handler's context ended with %v, want canceled", err)
		}
		st := fx.finish(runID)
		if st.Status != dag.StatusCanceled || st.Steps["a"].Status != dag.StatusCompleted || st.Steps["after"].Status != dag.StatusSkipped {
			t.Fatalf("run %s, steps %+v", st.Status, st.Steps)
		}
		if s := st.Steps["block"].Status; s != dag.StatusCanceled && s != dag.StatusSkipped {
			t.Fatalf("the interrupted step is %s, want canceled (or skipped if it never recorded its start)", s)
		}
		if n := fx.rec.count("after", false) + fx.rec.count("a", true); n != 0 {
			t.Fatalf("%d executions after the cancel, want none", n)
		}
	})
}
