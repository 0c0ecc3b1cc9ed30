package interop

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// A run the TypeScript worker begins (steps "a" and "a:1" completed, then a
// durable sleep) is finished by a Go worker after the sleep: the Go worker
// replays the TypeScript-recorded steps as memoized, without running their
// Go functions, completes the TS-written sleep and runs only step "b".
func TestRunBegunByTSWorkerIsFinishedByGoWorker(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	ts.startWorker(1, tsWorkflow{Name: "handoff", Kind: "steps-sleep"})

	var run tsRun
	ts.call("start", map[string]any{"name": "handoff", "input": stepsIn{N: 1, SleepMs: 2500}}, &run)
	e.waitParked(run.ID, backend.StepSleep, 20*time.Second)
	ts.stopWorker()
	if got := ts.stepEvents(run.ID); !reflect.DeepEqual(got, []string{"a", "a:1"}) {
		t.Fatalf("TS executed steps %v before parking, want [a a:1]", got)
	}

	rec := &recorder{}
	e.goWorker(goStepsSleep("handoff", rec))
	ctx := contextWithTimeout(t, 30*time.Second)
	raw, err := e.client.Handle(run.ID).Result(ctx)
	must(t, err)
	var out stepsOut
	must(t, json.Unmarshal(raw, &out))
	want := stepsOut{A: aOut{N: 2}, A1: "second-a", B: "b-go", By: "go"}
	if out != want {
		t.Errorf("output %+v, want %+v", out, want)
	}
	if got := rec.of(run.ID); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("Go ran step functions %v, want only [b] (a and a:1 are memoized from TS)", got)
	}
	if got := ts.stepEvents(run.ID); !reflect.DeepEqual(got, []string{"a", "a:1"}) {
		t.Errorf("TS step functions ran %v in total, want [a a:1]", got)
	}
	assertHistory(t, e.steps(run.ID), []wantStep{
		{"a", backend.StepFunction, "uuid"},
		{"a:1", backend.StepFunction, "uuid"},
		{"nap", backend.StepSleep, "uuid"},
		{"b", backend.StepFunction, "step"},
	})
}

// The reverse: a Go worker begins the run, parks it on the sleep, and a
// TypeScript worker finishes it, replaying the Go-recorded steps.
func TestRunBegunByGoWorkerIsFinishedByTSWorker(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	rec := &recorder{}
	stopGo := e.goWorker(goStepsSleep("handoff", rec))

	h, err := goStepsSleep("handoff", nil).Start(context.Background(), e.client, stepsIn{N: 10, SleepMs: 2500})
	must(t, err)
	e.waitParked(h.ID, backend.StepSleep, 20*time.Second)
	stopGo()
	if got := rec.of(h.ID); !reflect.DeepEqual(got, []string{"a", "a:1"}) {
		t.Fatalf("Go executed steps %v before parking, want [a a:1]", got)
	}

	ts.startWorker(1, tsWorkflow{Name: "handoff", Kind: "steps-sleep"})
	out := result(t, h, 30*time.Second)
	want := stepsOut{A: aOut{N: 11}, A1: "second-a", B: "b-ts", By: "ts"}
	if out != want {
		t.Errorf("output %+v, want %+v", out, want)
	}
	if got := ts.stepEvents(h.ID); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("TS ran step functions %v, want only [b] (a and a:1 are memoized from Go)", got)
	}
	if got := rec.of(h.ID); !reflect.DeepEqual(got, []string{"a", "a:1"}) {
		t.Errorf("Go step functions ran %v in total, want [a a:1]", got)
	}
	assertHistory(t, e.steps(h.ID), []wantStep{
		{"a", backend.StepFunction, "step"},
		{"a:1", backend.StepFunction, "step"},
		{"nap", backend.StepSleep, "step"},
		{"b", backend.StepFunction, "uuid"},
	})
}

type wantStep struct {
	name string
	kind backend.StepKind
	ids  string // "uuid" (written by TS) or "step" (step_<ULID>, by Go)
}

// assertHistory checks a run's attempts, all completed, in order.
func assertHistory(t *testing.T, got []backend.StepAttempt, want []wantStep) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("history has %d attempts, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		a := got[i]
		idOK := uuidPattern.MatchString(a.ID)
		if w.ids == "step" {
			idOK = ulidPattern("step").MatchString(a.ID)
		}
		if a.StepName != w.name || a.Kind != w.kind || a.Status != backend.StepCompleted || !idOK {
			t.Errorf("attempt %d = %s %s %s id %s; want %s %s completed with a %s id", i, a.StepName, a.Kind, a.Status, a.ID, w.name, w.kind, w.ids)
		}
	}
}
