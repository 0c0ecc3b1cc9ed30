package api

import (
	"errors"
	"net/http"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/dag"
)

// DAGRun is the answer of GET /v1/runs/{id}/dag: a DAG run's status in
// the shape of pgshift's WorkflowRunStatus — [dag.RunStatus], derived by
// [dag.StatusOf] from the stored run and its step attempts, exactly as
// `ow runs get` and dag.Engine.Status derive it — and its graph, ready to
// draw.
//
// Status is pending, running, compensating, completed, failed,
// compensated, compensation_failed (a compensation failed for good: the
// steps were not all undone) or canceled; each step's is pending, running, completed,
// failed, skipped, compensating, compensated or compensation_failed (see
// dag.Status). With resolveData=none the run's input and the steps'
// outputs are left out (input null).
type DAGRun struct {
	dag.RunStatus
	// Graph is the definition the run executes, as nodes in layers and
	// edges.
	Graph DAGGraph `json:"graph"`
}

// DAGGraph is a DAG definition as a graph: Nodes in declaration order,
// Edges from each dependency to the step that depends on it, in the
// order of the steps and of their dependsOn lists.
type DAGGraph struct {
	Nodes []DAGNode `json:"nodes"`
	Edges []DAGEdge `json:"edges"`
	// Layers counts the layers: every node's Layer is below it.
	Layers int `json:"layers"`
}

// DAGNode is one step of a [DAGGraph].
type DAGNode struct {
	// Step is the step's name, the key of its status in DAGRun.Steps.
	Step string `json:"step"`
	// Handler and Compensate are the names of the handlers that execute
	// and undo the step (Compensate "" when it has none).
	Handler    string `json:"handler"`
	Compensate string `json:"compensate,omitempty"`
	// Retries is how many times a failed execution (or compensation) is
	// retried, the default (3) applied.
	Retries int `json:"retries"`
	// Layer is the longest dependency path from a root step (0) to this
	// one ([dag.Definition.Layers]).
	Layer int `json:"layer"`
}

// DAGEdge is a dependency: step To starts only after step From completed.
type DAGEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// GraphOf lays out d as a [DAGGraph].
func GraphOf(d dag.Definition) DAGGraph {
	layers := d.Layers()
	g := DAGGraph{Nodes: make([]DAGNode, 0, len(d.Steps)), Edges: []DAGEdge{}}
	for _, s := range d.Steps {
		retries := dag.DefaultRetries
		if s.Retries != nil {
			retries = *s.Retries
		}
		l := layers[s.Name]
		g.Nodes = append(g.Nodes, DAGNode{Step: s.Name, Handler: s.Handler, Compensate: s.Compensate, Retries: retries, Layer: l})
		g.Layers = max(g.Layers, l+1)
		for _, dep := range s.DependsOn {
			g.Edges = append(g.Edges, DAGEdge{From: dep, To: s.Name})
		}
	}
	return g
}

// maxDAGAttempts bounds the attempts read for a DAG run's status: a run
// has at most 1000 (the engine's step limit), so this is a guard.
const maxDAGAttempts = 2000

// getDAG answers a DAG run's status: 404 not_found for an unknown run,
// 404 not_a_dag_run for a run of another kind of workflow.
func (h *Handler) getDAG(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q, err := parseQuery(r, "resolveData")
	if err != nil {
		return err
	}
	run, err := h.c.GetRun(r.Context(), id)
	if err != nil {
		return asAPIError(err, "id")
	}
	// Whether it is a DAG run is in its input: ask before reading steps.
	if _, err := dag.StatusOf(run, nil); errors.Is(err, dag.ErrNotDAGRun) {
		return errorf(http.StatusNotFound, CodeNotDAGRun, "id",
			"run %s of workflow %q is not a DAG workflow run (its input holds no DAG definition); GET /v1/runs/%s shows it", run.ID, run.WorkflowName, run.ID)
	}
	var attempts []backend.StepAttempt
	// The status reads no output but to show it: without resolveData,
	// none is read.
	p := backend.ListStepAttemptsParams{WorkflowRunID: id, Limit: 1000, OmitPayloads: q.resolveNone()}
	for len(attempts) < maxDAGAttempts {
		page, err := h.c.ListSteps(r.Context(), p)
		if err != nil {
			return asAPIError(err, "")
		}
		attempts = append(attempts, page.Data...)
		if page.Next == nil {
			break
		}
		p.After = *page.Next
	}
	st, err := dag.StatusOf(run, attempts)
	if err != nil {
		return asAPIError(err, "")
	}
	if q.resolveNone() {
		st.Input = nil
		for name, s := range st.Steps {
			s.Output = nil
			st.Steps[name] = s
		}
	}
	writeJSON(w, http.StatusOK, DAGRun{RunStatus: *st, Graph: GraphOf(st.Definition)})
	return nil
}
