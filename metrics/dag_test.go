package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/dag"
	"github.com/openworkflow-go/openworkflow/metrics"
)

var _ dag.Metrics = (*metrics.Exporter)(nil)

// TestDAGRunsAreCountedByFinalDAGStatus: a DAG engine given the Exporter
// counts its runs by final DAG status, so a run whose compensation failed
// for good is counted compensation_failed, not compensated.
func TestDAGRunsAreCountedByFinalDAGStatus(t *testing.T) {
	m, err := metrics.New(metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := openSQLite(t)
	c := ow.NewClient(b)
	type input struct{ Fail, FailUndo bool }
	eng := dag.New(c, dag.Options{Metrics: m, Handlers: map[string]dag.Handler{
		"charge": func(context.Context, dag.StepContext) (any, error) { return "charged", nil },
		"email": func(_ context.Context, sc dag.StepContext) (any, error) {
			var in input
			if err := sc.DecodeInput(&in); err != nil || in.Fail {
				return nil, ow.NonRetryable(errors.New("smtp down"))
			}
			return "sent", nil
		},
		"refund": func(_ context.Context, sc dag.StepContext) (any, error) {
			var in input
			if err := sc.DecodeInput(&in); err != nil || in.FailUndo {
				return nil, ow.NonRetryable(errors.New("refund refused"))
			}
			return "refunded", nil
		},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := eng.Define(ctx, dag.Definition{Name: "order", Steps: []dag.Step{
		{Name: "charge", Handler: "charge", Compensate: "refund"},
		{Name: "email", Handler: "email", DependsOn: []string{"charge"}},
	}}); err != nil {
		t.Fatal(err)
	}
	w := ow.NewWorker(b, ow.WorkerOptions{})
	if err := w.Register(eng.Workflow("order")); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Errorf("stop worker: %v", err)
		}
	}()
	for _, in := range []input{{}, {Fail: true}, {Fail: true, FailUndo: true}, {Fail: true, FailUndo: true}} {
		h, err := eng.Start(ctx, "order", in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Result(ctx); (err == nil) != !in.Fail {
			t.Fatalf("run %+v ended with %v", in, err)
		}
	}
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	for status, want := range map[string]float64{"completed": 1, "compensated": 1, "compensation_failed": 2, "failed": -1} {
		if got := value(byName, "openworkflow_dag_runs_finished_total", "workflow", "order", "status", status); got != want {
			t.Errorf("openworkflow_dag_runs_finished_total{status=%q} = %v, want %v (-1: absent)", status, got, want)
		}
	}
}
