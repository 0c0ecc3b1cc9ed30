package main

import (
	"context"
	"errors"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/dag"
)

func TestRunsGetShowsTheDAGStatusOfADAGRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, err := e.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := ow.NewClient(b)
	ok := func(context.Context, dag.StepContext) (any, error) { return "done", nil }
	eng := dag.New(c, dag.Options{Handlers: map[string]dag.Handler{
		"reserve": ok, "release": ok,
		"charge": func(context.Context, dag.StepContext) (any, error) { return nil, errors.New("card declined") },
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := eng.Define(ctx, dag.Definition{Name: "order", Steps: []dag.Step{
		{Name: "reserve-stock", Handler: "reserve", Compensate: "release"},
		{Name: "charge-card", Handler: "charge", Retries: dag.Retries(0), DependsOn: []string{"reserve-stock"}},
	}}); err != nil {
		t.Fatal(err)
	}
	h, err := eng.Start(ctx, "order", map[string]int{"id": 1})
	if err != nil {
		t.Fatal(err)
	}
	w := ow.NewWorker(b, ow.WorkerOptions{})
	if err := w.Register(eng.Workflow("order")); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = h.Result(ctx)
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var failed *ow.RunFailedError
	if !errors.As(err, &failed) {
		t.Fatalf("Result: %v, want the run failed (compensated)", err)
	}
	out := e.ok("runs", "get", h.ID).stdout
	mustContain(t, "runs get", out, "DAG status: compensated", "Compensation chain: reserve-stock\n",
		"reserve-stock", "compensated", "release completed ×1",
		"charge-card", "reserve-stock", "failed", "error: card declined")

	d := decode[runDetail](t, e.ok("runs", "get", h.ID, "--json"))
	if d.DAG == nil || d.DAG.Status != dag.StatusCompensated || d.DAG.Steps["charge-card"].Error != "card declined" {
		t.Fatalf("runs get --json: dag %+v", d.DAG)
	}
}

// TestRunsRetryRefusesACompensatedDAGRun: `ow runs retry` on a
// compensated DAG run fails, says why and what to do instead, and leaves
// the run failed.
func TestRunsRetryRefusesACompensatedDAGRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, err := e.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := ow.NewClient(b)
	ok := func(context.Context, dag.StepContext) (any, error) { return "done", nil }
	eng := dag.New(c, dag.Options{Handlers: map[string]dag.Handler{
		"reserve": ok, "release": ok,
		"charge": func(context.Context, dag.StepContext) (any, error) { return nil, errors.New("card declined") },
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := eng.Define(ctx, dag.Definition{Name: "order", Steps: []dag.Step{
		{Name: "reserve-stock", Handler: "reserve", Compensate: "release"},
		{Name: "charge-card", Handler: "charge", Retries: dag.Retries(0), DependsOn: []string{"reserve-stock"}},
	}}); err != nil {
		t.Fatal(err)
	}
	h, err := eng.Start(ctx, "order", nil)
	if err != nil {
		t.Fatal(err)
	}
	w := ow.NewWorker(b, ow.WorkerOptions{})
	if err := w.Register(eng.Workflow("order")); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = h.Result(ctx)
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var failed *ow.RunFailedError
	if !errors.As(err, &failed) {
		t.Fatalf("Result: %v, want the run failed (compensated)", err)
	}
	r := e.run("runs", "retry", h.ID)
	if r.code == 0 {
		t.Fatalf("ow runs retry of a compensated run succeeded:\n%s", r.stdout)
	}
	mustContain(t, "runs retry", r.stderr, "may not be retried", "compensate", "ow runs start", "ow runs fork "+h.ID)
	run, err := c.GetRun(ctx, h.ID)
	if err != nil || run.Status != "failed" {
		t.Fatalf("after the refused retry the run is %v (%v), want failed", run.Status, err)
	}
}
