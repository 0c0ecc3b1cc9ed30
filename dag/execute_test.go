package dag_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/dag"
)

func TestIndependentStepsRunInParallel(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		// Each root step waits until the other one has started too: run
		// one after the other, they would wait for each other in vain.
		var both sync.WaitGroup
		both.Add(2)
		meet := func(ctx context.Context, sc dag.StepContext) (any, error) {
			both.Done()
			done := make(chan struct{})
			go func() { both.Wait(); close(done) }()
			select {
			case <-done:
				return sc.Step, nil
			case <-time.After(30 * time.Second):
				return nil, ow.NonRetryable(errors.New("the other root step never started while this one ran"))
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		fx.handle("left", meet)
		fx.handle("right", meet)
		fx.handle("join", nil)
		fx.define(def("par", "left", "right", "join<-left,right"))
		fx.startWorker(ow.WorkerOptions{}, "par")
		st := fx.finish(fx.start("par", nil))
		if st.Status != dag.StatusCompleted {
			t.Fatalf("run %s (%v)", st.Status, st.Error)
		}
		// The two executions overlap in time.
		var starts, ends = map[string]int{}, map[string]int{}
		for _, e := range fx.rec.all() {
			if e.end {
				ends[e.step] = e.seq
			} else {
				starts[e.step] = e.seq
			}
		}
		if !(starts["left"] < ends["right"] && starts["right"] < ends["left"]) {
			t.Fatalf("left [%d, %d] and right [%d, %d] did not overlap", starts["left"], ends["left"], starts["right"], ends["right"])
		}
	})
}

func TestAStepNeverStartsBeforeItsDependenciesComplete(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		// A diamond feeding a chain, with uneven step durations so that
		// a wrong order would show.
		d := def("order", "a", "b<-a", "c<-a", "d<-b,c", "e<-d", "f", "g<-f,e")
		for i, s := range d.Steps {
			pause := time.Duration(len(d.Steps)-i) * 3 * time.Millisecond
			fx.handle(s.Name, func(ctx context.Context, sc dag.StepContext) (any, error) {
				time.Sleep(pause) // unequal step durations, to shake the order
				return sc.Step, nil
			})
		}
		fx.define(d)
		fx.startWorker(ow.WorkerOptions{}, "order")
		st := fx.finish(fx.start("order", nil))
		if st.Status != dag.StatusCompleted {
			t.Fatalf("run %s (%v)", st.Status, st.Error)
		}
		startSeq, endSeq := map[string]int{}, map[string]int{}
		for _, e := range fx.rec.all() {
			if e.end {
				endSeq[e.step] = e.seq
			} else {
				startSeq[e.step] = e.seq
			}
		}
		for _, s := range d.Steps {
			if fx.rec.count(s.Name, false) != 1 {
				t.Errorf("step %s executed %d times, want 1", s.Name, fx.rec.count(s.Name, false))
			}
			for _, dep := range s.DependsOn {
				if startSeq[s.Name] < endSeq[dep] {
					t.Errorf("step %s started (event %d) before its dependency %s ended (event %d)", s.Name, startSeq[s.Name], dep, endSeq[dep])
				}
			}
		}
	})
}

func TestHandlersReceiveTheirContext(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		type order struct {
			ID    int    `json:"id"`
			Email string `json:"email"`
		}
		var mu sync.Mutex
		seen := map[string]dag.StepContext{}
		keep := func(out any, err error) dag.Handler {
			return func(_ context.Context, sc dag.StepContext) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				seen[sc.Step+"#"+string(rune('0'+sc.Attempt))] = sc
				if sc.Step == "join" && sc.Attempt == 1 {
					return nil, errors.New("first attempt fails")
				}
				return out, err
			}
		}
		fx.handle("price", keep(map[string]int{"cents": 1250}, nil))
		fx.handle("address", keep("10 Downing St", nil))
		fx.handle("join", keep(true, nil))
		fx.define(dag.Definition{Name: "ctx", Steps: []dag.Step{
			{Name: "price", Handler: "price"},
			{Name: "address", Handler: "address"},
			{Name: "join", Handler: "join", Retries: dag.Retries(1), DependsOn: []string{"price", "address"}},
		}})
		fx.startWorker(ow.WorkerOptions{}, "ctx")
		runID := fx.start("ctx", order{ID: 7, Email: "ada@example.com"})
		st := fx.finish(runID)
		if st.Status != dag.StatusCompleted {
			t.Fatalf("run %s (%v)", st.Status, st.Error)
		}
		mu.Lock()
		defer mu.Unlock()
		for key, sc := range seen {
			var in order
			if err := sc.DecodeInput(&in); err != nil || in != (order{7, "ada@example.com"}) {
				t.Errorf("%s: input %s (%v)", key, sc.Input, err)
			}
			if sc.RunID != runID || sc.Workflow != "ctx" || sc.Compensation {
				t.Errorf("%s: run %q workflow %q compensation %v", key, sc.RunID, sc.Workflow, sc.Compensation)
			}
		}
		if sc := seen["price#1"]; sc.Step != "price" || sc.Attempt != 1 || len(sc.PreviousSteps) != 0 {
			t.Errorf("root step context: %+v", sc)
		}
		for _, key := range []string{"join#1", "join#2"} {
			sc, ok := seen[key]
			if !ok {
				t.Fatalf("no execution %s; saw %v", key, slices.Sorted(func(yield func(string) bool) {
					for k := range seen {
						if !yield(k) {
							return
						}
					}
				}))
			}
			var price map[string]int
			var address string
			if err := sc.DecodeOutput("price", &price); err != nil || price["cents"] != 1250 {
				t.Errorf("%s: price output %v (%v)", key, price, err)
			}
			if err := sc.DecodeOutput("address", &address); err != nil || address != "10 Downing St" {
				t.Errorf("%s: address output %q (%v)", key, address, err)
			}
			if err := sc.DecodeOutput("join", new(bool)); err == nil {
				t.Errorf("%s: DecodeOutput of a step not completed succeeded", key)
			}
		}
		if seen["join#2"].Attempt != 2 {
			t.Errorf("the retry was told attempt %d, want 2", seen["join#2"].Attempt)
		}
		// The run's output is every step's output by name.
		out, err := fx.c.Handle(runID).Result(fx.ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil || len(got) != 3 || string(got["join"]) != "true" {
			t.Fatalf("run output %s (%v), want the three outputs", out, err)
		}
	})
}

func TestStatusOfACompletedRun(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		fx.handle("a", nil)
		fx.handle("b", func(context.Context, dag.StepContext) (any, error) { return map[string]int{"n": 2}, nil })
		fx.define(def("st", "a", "b<-a"))
		fx.startWorker(ow.WorkerOptions{}, "st")
		runID := fx.start("st", map[string]string{"k": "v"})
		st := fx.finish(runID)
		if st.RunID != runID || st.Workflow != "st" || st.Status != dag.StatusCompleted || st.FinishedAt == nil ||
			st.StartedAt.IsZero() || string(st.Input) != `{"k":"v"}` && string(st.Input) != `{"k": "v"}` || st.Error != nil {
			t.Fatalf("status %+v", st)
		}
		for name, wantOut := range map[string]string{"a": `"a"`, "b": `{"n":2}`} {
			s := st.Steps[name]
			if s.Status != dag.StatusCompleted || s.Attempts != 1 || s.StartedAt == nil || s.CompletedAt == nil ||
				s.CompletedAt.Before(*s.StartedAt) || s.Error != "" || s.Compensation != nil {
				t.Errorf("step %s: %+v", name, s)
			}
			var got, want any
			_ = json.Unmarshal(s.Output, &got)
			_ = json.Unmarshal([]byte(wantOut), &want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("step %s output %s, want %s", name, s.Output, wantOut)
			}
		}
		if !st.Steps["b"].StartedAt.After(*st.Steps["a"].CompletedAt) && !st.Steps["b"].StartedAt.Equal(*st.Steps["a"].CompletedAt) {
			t.Errorf("b started at %v, before a completed at %v", st.Steps["b"].StartedAt, st.Steps["a"].CompletedAt)
		}
		if _, err := fx.eng.Status(fx.ctx, "wrun_unknown"); !errors.Is(err, backend.ErrRunNotFound) {
			t.Errorf("Status of an unknown run: %v, want ErrRunNotFound", err)
		}
		plain := ow.Define(ow.Spec{Name: "plain"}, func(ow.Context, int) (int, error) { return 1, nil })
		h, err := plain.Start(fx.ctx, fx.c, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fx.eng.Status(fx.ctx, h.ID); !errors.Is(err, dag.ErrNotDAGRun) {
			t.Errorf("Status of a run of a Go workflow: %v, want ErrNotDAGRun", err)
		}
	})
}

func TestARunStartedWithoutADefinitionFailsWithAClearError(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		fx.handle("a", nil)
		fx.define(def("snap", "a"))
		// Pending, not claimed yet: every step pending.
		runID := fx.start("snap", nil)
		st, err := fx.eng.Status(fx.ctx, runID)
		if err != nil || st.Status != dag.StatusPending || st.Steps["a"].Status != dag.StatusPending {
			t.Fatalf("status before any worker: %+v, %v", st, err)
		}
		// A run of the workflow's name started without the engine holds
		// no definition to execute.
		h, err := fx.c.StartByName(fx.ctx, "snap", "", map[string]int{"n": 1})
		if err != nil {
			t.Fatal(err)
		}
		fx.startWorker(ow.WorkerOptions{}, "snap")
		if st := fx.finish(runID); st.Status != dag.StatusCompleted {
			t.Fatalf("the run started with Engine.Start is %s", st.Status)
		}
		_, err = h.Result(fx.ctx)
		var rf *ow.RunFailedError
		if !errors.As(err, &rf) || !strings.Contains(rf.Err.Message, "holds no DAG definition") {
			t.Fatalf("Result of the run started without a definition: %v", err)
		}
	})
}

func TestRedefiningAWorkflowDoesNotChangeRunsInFlight(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		for _, h := range []string{"a", "b", "c"} {
			fx.handle(h, nil)
		}
		fx.define(def("redef", "a", "b<-a"))
		before := fx.start("redef", nil)
		fx.define(def("redef", "a", "c<-a"))
		after := fx.start("redef", nil)
		fx.startWorker(ow.WorkerOptions{}, "redef")
		for runID, want := range map[string]string{before: "b", after: "c"} {
			st := fx.finish(runID)
			if _, ok := st.Steps[want]; !ok || st.Status != dag.StatusCompleted || len(st.Steps) != 2 {
				t.Errorf("run %s: %s with steps %v; want a and %s", runID, st.Status, st.Steps, want)
			}
		}
		if fx.rec.count("b", false) != 1 || fx.rec.count("c", false) != 1 {
			t.Errorf("b ran %d times and c %d times, want once each", fx.rec.count("b", false), fx.rec.count("c", false))
		}
	})
}
