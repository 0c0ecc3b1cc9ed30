package main

import (
	"context"
	"errors"
	"strings"
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
	runID := e.compensatedDAGRun(func(context.Context, dag.StepContext) (any, error) { return "released", nil })
	r := e.run("runs", "retry", runID)
	if r.code == 0 {
		t.Fatalf("ow runs retry of a compensated run succeeded:\n%s", r.stdout)
	}
	mustContain(t, "runs retry", r.stderr, "may not be retried", "compensate", "ow runs start", "ow runs fork "+runID)
	d := decode[runDetail](t, e.ok("runs", "get", runID, "--json"))
	if d.Run.Status != "failed" || d.DAG == nil || d.DAG.Status != dag.StatusCompensated {
		t.Fatalf("after the refused retry the run is %s, DAG %+v; want failed, compensated", d.Run.Status, d.DAG)
	}
}

// TestRunsGetShowsACompensationThatFailed: a run whose compensation
// failed for good reads compensation_failed, not compensated.
func TestRunsGetShowsACompensationThatFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	runID := e.compensatedDAGRun(func(context.Context, dag.StepContext) (any, error) {
		return nil, ow.NonRetryable(errors.New("warehouse unreachable"))
	})
	out := e.ok("runs", "get", runID).stdout
	mustContain(t, "runs get", out, "DAG status: compensation_failed", "release failed ×1: warehouse unreachable")
	if strings.Contains(out, "DAG status: compensated") {
		t.Errorf("runs get says the run was compensated:\n%s", out)
	}
	d := decode[runDetail](t, e.ok("runs", "get", runID, "--json"))
	if d.DAG == nil || d.DAG.Status != dag.StatusCompensationFailed || d.DAG.Steps["reserve-stock"].Status != dag.StatusCompensationFailed {
		t.Fatalf("runs get --json: dag %+v", d.DAG)
	}
}

// compensatedDAGRun runs to its end a DAG run whose charge-card fails for
// good after reserve-stock completed, so that release (reserve-stock's
// compensate handler) runs, and returns the run's id.
func (e *env) compensatedDAGRun(release dag.Handler) string {
	t := e.t
	t.Helper()
	b, err := e.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := ow.NewClient(b)
	eng := dag.New(c, dag.Options{Handlers: map[string]dag.Handler{
		"reserve": func(context.Context, dag.StepContext) (any, error) { return "reserved", nil },
		"release": release,
		"charge":  func(context.Context, dag.StepContext) (any, error) { return nil, errors.New("card declined") },
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := eng.Define(ctx, dag.Definition{Name: "order", Steps: []dag.Step{
		{Name: "reserve-stock", Handler: "reserve", Compensate: "release", Retries: dag.Retries(0)},
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
	return h.ID
}
