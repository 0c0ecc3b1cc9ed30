package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/dag"
)

// orderWorkflow is the DAG workflow of these tests:
//
//	stock ─┐
//	       ├─> charge ─> invoice ─> email
//	fraud ─┘
//
// stock and charge have a compensate handler; a run's input names the
// step that fails (not retried), if any.
const orderWorkflow = "order"

var orderDefinition = dag.Definition{Name: orderWorkflow, Steps: []dag.Step{
	{Name: "stock", Handler: "work", Compensate: "undo"},
	{Name: "fraud", Handler: "work"},
	{Name: "charge", Handler: "work", Compensate: "undo", DependsOn: []string{"stock", "fraud"}},
	{Name: "invoice", Handler: "work", Retries: dag.Retries(0), DependsOn: []string{"charge"}},
	{Name: "email", Handler: "work", DependsOn: []string{"invoice"}},
}}

// orderInput is an order run's input.
type orderInput struct {
	Fail string `json:"fail,omitempty"`
	// FailUndo names the step whose compensation fails for good.
	FailUndo string `json:"failUndo,omitempty"`
}

// dagHandlers are the handlers of orderWorkflow: work answers its step's
// name, or fails for good on the step the input names; undo counts its
// compensations.
func dagHandlers(c *calls) map[string]dag.Handler {
	return map[string]dag.Handler{
		"work": func(_ context.Context, sc dag.StepContext) (any, error) {
			var in orderInput
			if err := sc.DecodeInput(&in); err != nil {
				return nil, err
			}
			c.add(sc.RunID + "/" + sc.Step)
			if sc.Step == in.Fail {
				return nil, ow.NonRetryable(errors.New("card declined"))
			}
			return map[string]string{"done": sc.Step}, nil
		},
		"undo": func(_ context.Context, sc dag.StepContext) (any, error) {
			var in orderInput
			if err := sc.DecodeInput(&in); err != nil {
				return nil, err
			}
			c.add(sc.RunID + "/undo " + sc.Step)
			if sc.Step == in.FailUndo {
				return nil, ow.NonRetryable(errors.New("refund service down"))
			}
			return map[string]string{"undone": sc.Step}, nil
		},
	}
}

// dagRun starts an order run through the API and waits until its stored
// status is want.
func (s *server) dagRun(in orderInput, want string) string {
	s.t.Helper()
	h, err := s.dag.Start(s.ctx, orderWorkflow, in)
	if err != nil {
		s.t.Fatal(err)
	}
	s.waitStatus(h.ID, want)
	return h.ID
}

func TestDAGStatusOfACompletedAndACompensatedRun(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		if _, err := s.dag.Define(s.ctx, orderDefinition); err != nil {
			t.Fatal(err)
		}

		t.Run("a completed run has every step completed, and the graph in layers", func(t *testing.T) {
			id := s.dagRun(orderInput{}, "completed")
			var st api.DAGRun
			s.must(http.StatusOK, "GET", "/v1/runs/"+id+"/dag", nil).decode(t, &st)
			if st.RunID != id || st.Workflow != orderWorkflow || st.Status != dag.StatusCompleted || st.FinishedAt == nil || st.Error != nil {
				t.Fatalf("run: %s %s %s finished %v error %v", st.RunID, st.Workflow, st.Status, st.FinishedAt, st.Error)
			}
			if len(st.Compensations) != 0 {
				t.Errorf("a completed run has a compensation chain %v", st.Compensations)
			}
			if string(st.Input) != `{}` {
				t.Errorf("input %s, want the caller's {}", st.Input)
			}
			for _, step := range orderDefinition.Steps {
				ss := st.Steps[step.Name]
				want := fmt.Sprintf(`{"done":%q}`, step.Name)
				if ss.Status != dag.StatusCompleted || ss.Attempts != 1 || string(ss.Output) != want || ss.StartedAt == nil || ss.CompletedAt == nil || ss.Compensation != nil {
					t.Errorf("step %s: %+v (output %s)", step.Name, ss, ss.Output)
				}
			}
			wantLayers := map[string]int{"stock": 0, "fraud": 0, "charge": 1, "invoice": 2, "email": 3}
			if len(st.Graph.Nodes) != 5 || st.Graph.Layers != 4 {
				t.Fatalf("graph: %d nodes in %d layers, want 5 in 4", len(st.Graph.Nodes), st.Graph.Layers)
			}
			for i, n := range st.Graph.Nodes {
				def := orderDefinition.Steps[i]
				if n.Step != def.Name || n.Handler != def.Handler || n.Compensate != def.Compensate || n.Layer != wantLayers[n.Step] {
					t.Errorf("node %d: %+v, want step %s in layer %d", i, n, def.Name, wantLayers[def.Name])
				}
			}
			if n := st.Graph.Nodes[3]; n.Retries != 0 || st.Graph.Nodes[0].Retries != dag.DefaultRetries {
				t.Errorf("retries: invoice %d, stock %d", n.Retries, st.Graph.Nodes[0].Retries)
			}
			wantEdges := []api.DAGEdge{{"stock", "charge"}, {"fraud", "charge"}, {"charge", "invoice"}, {"invoice", "email"}}
			if fmt.Sprint(st.Graph.Edges) != fmt.Sprint(wantEdges) {
				t.Errorf("edges %v, want %v", st.Graph.Edges, wantEdges)
			}
			// resolveData=none leaves out the input and the outputs.
			var blank struct {
				Input json.RawMessage
				Steps map[string]map[string]json.RawMessage
			}
			s.must(http.StatusOK, "GET", "/v1/runs/"+id+"/dag?resolveData=none", nil).decode(t, &blank)
			if string(blank.Input) != "null" {
				t.Errorf("resolveData=none kept the input %s", blank.Input)
			}
			for name, ss := range blank.Steps {
				if _, ok := ss["output"]; ok {
					t.Errorf("resolveData=none kept the output of %s: %s", name, ss["output"])
				}
			}
		})

		t.Run("a compensated run shows the failed step, the compensations and the skipped step", func(t *testing.T) {
			id := s.dagRun(orderInput{Fail: "invoice"}, "failed")
			var st api.DAGRun
			s.must(http.StatusOK, "GET", "/v1/runs/"+id+"/dag", nil).decode(t, &st)
			if st.Status != dag.StatusCompensated || st.Error == nil || st.Error.Code != dag.CodeCompensated {
				t.Fatalf("run status %s, error %+v; want compensated, code %s", st.Status, st.Error, dag.CodeCompensated)
			}
			want := map[string]dag.Status{
				"stock": dag.StatusCompensated, "fraud": dag.StatusCompleted, "charge": dag.StatusCompensated,
				"invoice": dag.StatusFailed, "email": dag.StatusSkipped,
			}
			for name, status := range want {
				if got := st.Steps[name].Status; got != status {
					t.Errorf("step %s is %s, want %s", name, got, status)
				}
			}
			if inv := st.Steps["invoice"]; inv.Attempts != 1 || inv.Error != "card declined" || inv.Output != nil {
				t.Errorf("invoice: %+v", inv)
			}
			if e := st.Steps["email"]; e.Attempts != 0 || e.StartedAt != nil {
				t.Errorf("email never ran, but shows %+v", e)
			}
			charge, stock := st.Steps["charge"].Compensation, st.Steps["stock"].Compensation
			if charge == nil || stock == nil || charge.Status != dag.StatusCompleted || stock.Status != dag.StatusCompleted || charge.Attempts != 1 {
				t.Fatalf("compensations: charge %+v, stock %+v", charge, stock)
			}
			if fmt.Sprint(st.Compensations) != "[charge stock]" {
				t.Errorf("compensation chain %v, want [charge stock]", st.Compensations)
			}
			// Reverse topological order: charge is undone before stock.
			if charge.CompletedAt == nil || stock.StartedAt == nil || stock.StartedAt.Before(*charge.CompletedAt) {
				t.Errorf("stock's compensation started %v, before charge's ended %v", stock.StartedAt, charge.CompletedAt)
			}
			if n := s.calls.get(id + "/undo charge"); n != 1 {
				t.Errorf("charge was undone %d times, want 1", n)
			}
			if s.calls.get(id+"/email") != 0 {
				t.Errorf("email ran after invoice failed")
			}
		})

		t.Run("a run of another workflow, an unknown run and a bad query are refused", func(t *testing.T) {
			plain := s.start("add", map[string]int{"A": 1, "B": 2})
			e := s.must(http.StatusNotFound, "GET", "/v1/runs/"+plain.ID+"/dag", nil).apiError(t)
			if e.Code != api.CodeNotDAGRun || e.Field != "id" {
				t.Errorf("a plain run's DAG answered %+v, want code %s on id", e, api.CodeNotDAGRun)
			}
			if e := s.must(http.StatusNotFound, "GET", "/v1/runs/wrun_nope/dag", nil).apiError(t); e.Code != api.CodeNotFound {
				t.Errorf("an unknown run's DAG answered %+v", e)
			}
			if e := s.must(http.StatusBadRequest, "GET", "/v1/runs/"+plain.ID+"/dag?limit=3", nil).apiError(t); e.Field != "limit" {
				t.Errorf("an unknown parameter answered %+v", e)
			}
			s.must(http.StatusMethodNotAllowed, "POST", "/v1/runs/"+plain.ID+"/dag", nil)
		})
	})
}

// TestRetryOfACompensatedDAGRunIsRefused: POST /v1/runs/{id}/retry on a
// compensated DAG run answers 409 run_not_retryable and leaves the run
// failed and compensated: retrying it forward would run the failed step
// again after its compensations undid the steps before it.
func TestRetryOfACompensatedDAGRunIsRefused(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		if _, err := s.dag.Define(s.ctx, orderDefinition); err != nil {
			t.Fatal(err)
		}
		id := s.dagRun(orderInput{Fail: "invoice"}, "failed")
		e := s.must(http.StatusConflict, "POST", "/v1/runs/"+id+"/retry", nil).apiError(t)
		if e.Code != api.CodeRunNotRetryable || !strings.Contains(e.Message, "compensate") || !strings.Contains(e.Message, "new run") {
			t.Fatalf("retry of a compensated run answered %+v, want 409 %s saying why and what to do", e, api.CodeRunNotRetryable)
		}
		var st api.DAGRun
		s.must(http.StatusOK, "GET", "/v1/runs/"+id+"/dag", nil).decode(t, &st)
		if st.Status != dag.StatusCompensated {
			t.Fatalf("after the refused retry the run reads %s, want compensated", st.Status)
		}
		var run api.Run
		s.must(http.StatusOK, "GET", "/v1/runs/"+id, nil).decode(t, &run)
		if run.Status != "failed" || run.FinishedAt == nil {
			t.Fatalf("after the refused retry the run is %s, want failed as it was", run.Status)
		}
		if n := s.calls.get(id + "/invoice"); n != 1 {
			t.Errorf("invoice ran %d times, want 1", n)
		}
	})
}

// TestDAGStatusOfARunWhoseCompensationFailed: a run one of whose
// compensations failed for good was not undone: /dag reads
// compensation_failed (documented in the schema), not compensated, with
// the stored code COMPENSATION_FAILED, and the chain still went on.
func TestDAGStatusOfARunWhoseCompensationFailed(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		if _, err := s.dag.Define(s.ctx, orderDefinition); err != nil {
			t.Fatal(err)
		}
		id := s.dagRun(orderInput{Fail: "invoice", FailUndo: "charge"}, "failed")
		var st api.DAGRun
		s.must(http.StatusOK, "GET", "/v1/runs/"+id+"/dag", nil).decode(t, &st)
		if st.Status != dag.StatusCompensationFailed || st.Error == nil || st.Error.Code != dag.CodeCompensationFailed {
			t.Fatalf("run status %s, error %+v; want compensation_failed, code %s", st.Status, st.Error, dag.CodeCompensationFailed)
		}
		if c := st.Steps["charge"]; c.Status != dag.StatusCompensationFailed || c.Compensation == nil || c.Compensation.Error != "refund service down" {
			t.Errorf("charge: %+v", c)
		}
		if got := st.Steps["stock"].Status; got != dag.StatusCompensated {
			t.Errorf("stock is %s, want compensated: the chain goes on", got)
		}
		// Not retryable either: its compensations began.
		if e := s.must(http.StatusConflict, "POST", "/v1/runs/"+id+"/retry", nil).apiError(t); e.Code != api.CodeRunNotRetryable {
			t.Errorf("retry answered %+v, want %s", e, api.CodeRunNotRetryable)
		}
	})
}
