package openworkflow_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/runquery"
)

func runAttrs(t *testing.T, e *env, id string) backend.SearchAttributes {
	t.Helper()
	m, err := e.client.SearchAttributes(e.ctx, id)
	if err != nil {
		t.Fatalf("SearchAttributes(%s): %v", id, err)
	}
	return m[id]
}

func TestSetSearchAttributesIsMemoisedOnReplay(t *testing.T) {
	e := newEnv(t)
	var upserts counter
	wf := ow.Define(ow.Spec{Name: "attrs"}, func(ctx ow.Context, _ struct{}) (string, error) {
		if err := ow.SetSearchAttributes(ctx, map[string]any{"stage": "charged", "amount": 12}); err != nil {
			return "", err
		}
		upserts.inc("set") // counts passes that got past the call, first or replayed
		if err := ow.Sleep(ctx, "nap", time.Minute); err != nil {
			return "", err
		}
		return "done", nil
	})
	e.register(wf)
	id := start(e, wf, struct{}{}, ow.WithSearchAttributes(map[string]any{"customer": "c-42", "stage": "new"}))
	if got, want := runAttrs(t, e, id), (backend.SearchAttributes{"customer": "c-42", "stage": "new"}); !reflect.DeepEqual(got, want) {
		t.Fatalf("attributes at start = %v, want %v", got, want)
	}

	if n := e.tick(); n != 1 {
		t.Fatalf("first tick claimed %d runs, want 1", n)
	}
	e.requireStatus(id, backend.RunRunning) // parked in the sleep
	if got, want := runAttrs(t, e, id), (backend.SearchAttributes{"customer": "c-42", "stage": "charged", "amount": int64(12)}); !reflect.DeepEqual(got, want) {
		t.Fatalf("attributes after the first pass = %v, want %v", got, want)
	}
	// Someone else moves the stage on while the run sleeps: a replay of
	// the step must not write "charged" back.
	store := e.b.(backend.SearchAttributeStore)
	if err := store.UpsertSearchAttributes(e.ctx, backend.UpsertSearchAttributesParams{WorkflowRunID: id, Attributes: backend.SearchAttributes{"stage": "refunded"}}); err != nil {
		t.Fatalf("upsert from outside: %v", err)
	}

	e.clock.Advance(time.Minute)
	e.drain()
	e.requireStatus(id, backend.RunCompleted)
	if upserts.get("set") != 2 {
		t.Fatalf("passes past SetSearchAttributes = %d, want 2 (the first and the replay)", upserts.get("set"))
	}
	if got, want := runAttrs(t, e, id), (backend.SearchAttributes{"customer": "c-42", "stage": "refunded", "amount": int64(12)}); !reflect.DeepEqual(got, want) {
		t.Fatalf("attributes after the replay = %v, want %v (the replay wrote again)", got, want)
	}
	var recorded int
	for _, s := range e.steps(id) {
		if s.StepName == ow.SearchAttributesStep {
			recorded++
		}
	}
	if recorded != 1 {
		t.Fatalf("%s attempts = %d, want 1 (steps %v)", ow.SearchAttributesStep, recorded, e.stepNames(id))
	}

	page, err := e.client.ListRuns(e.ctx, backend.ListWorkflowRunsParams{Query: mustQuery(t, `attrs.stage = "refunded" AND status = "completed"`)})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != id {
		t.Fatalf("ListRuns by attribute = %v, %v; want run %s", page, err, id)
	}
}

func TestSetSearchAttributesOfAnotherTypeFailsTheRunAtOnce(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "badattrs"}, func(ctx ow.Context, _ struct{}) (string, error) {
		return "", ow.SetSearchAttributes(ctx, map[string]any{"amount": "twelve"})
	})
	e.register(wf)
	start(e, wf, struct{}{}, ow.WithSearchAttributes(map[string]any{"amount": 1}))
	id := start(e, wf, struct{}{})
	e.drain()
	r := e.requireStatus(id, backend.RunFailed)
	if !slices.Contains(e.stepNames(id), ow.SearchAttributesStep) || r.Attempts != 1 {
		t.Fatalf("run failed after %d attempts with steps %v; want one attempt of %s", r.Attempts, e.stepNames(id), ow.SearchAttributesStep)
	}
}

func TestWithSearchAttributesRefusesABadAttributeAtStart(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "startattrs"}, func(ctx ow.Context, _ struct{}) (string, error) { return "", nil })
	e.register(wf)
	_, err := wf.Start(e.ctx, e.client, struct{}{}, ow.WithSearchAttributes(map[string]any{"bad-name": 1}))
	if !errors.Is(err, backend.ErrInvalidSearchAttribute) {
		t.Fatalf("start with a bad name: %v, want ErrInvalidSearchAttribute", err)
	}
	if err := ow.SetSearchAttributes(nil, map[string]any{"a": 1}); !errors.Is(err, ow.ErrNotInWorkflow) {
		t.Fatalf("SetSearchAttributes outside a workflow: %v, want ErrNotInWorkflow", err)
	}
}

func mustQuery(t *testing.T, src string) *runquery.Query {
	t.Helper()
	q, err := runquery.Parse(src)
	if err != nil {
		t.Fatalf("runquery.Parse(%q): %v", src, err)
	}
	return q
}
