package dashboard

import (
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/dag"
)

func TestDAGLayoutOrdersColumnsToKeepEdgesFromCrossing(t *testing.T) {
	def := dag.Definition{Name: "x", Steps: []dag.Step{
		{Name: "a", Handler: "h"},
		{Name: "b", Handler: "h", Compensate: "undo-b"},
		// Declared in the order that would cross a→d and b→c.
		{Name: "c", Handler: "h", DependsOn: []string{"b"}},
		{Name: "d", Handler: "h", DependsOn: []string{"a"}},
		{Name: "a-step-with-a-name-much-longer-than-a-box", Handler: "h", DependsOn: []string{"c", "d"}},
	}}
	st := &api.DAGRun{
		RunStatus: dag.RunStatus{Status: dag.StatusCompensated, Definition: def, Compensations: []string{"b"}, Steps: map[string]dag.StepStatus{
			"a": {Status: dag.StatusCompleted, Attempts: 1},
			"b": {Status: dag.StatusCompensated, Attempts: 2, Compensation: &dag.AttemptsStatus{Status: dag.StatusCompleted, Attempts: 1}},
			"c": {Status: dag.StatusFailed, Attempts: 1, Error: "boom"},
			"d": {Status: dag.StatusCompleted, Attempts: 1},
			"a-step-with-a-name-much-longer-than-a-box": {Status: dag.StatusPending},
		}},
		Graph: api.GraphOf(def),
	}
	g := buildDAG(st, map[string]string{"c": "wstep_1"})
	at := map[string]dagNode{}
	for _, n := range g.Nodes {
		at[n.Step] = n
		if n.X < 0 || n.Y < 0 || n.X+n.W > g.Width || n.Y+n.H > g.Height {
			t.Errorf("node %s at (%d,%d) lies outside the %d×%d drawing", n.Step, n.X, n.Y, g.Width, g.Height)
		}
	}
	for _, m := range g.Nodes {
		for _, n := range g.Nodes {
			if m.Step < n.Step && m.X == n.X && abs(m.Y-n.Y) < m.H {
				t.Errorf("nodes %s and %s overlap", m.Step, n.Step)
			}
		}
	}
	if !(at["a"].Y < at["b"].Y && at["d"].Y < at["c"].Y) {
		t.Errorf("column 1 is c above d (%d, %d) under a above b (%d, %d): their edges cross", at["c"].Y, at["d"].Y, at["a"].Y, at["b"].Y)
	}
	if !(at["a"].X < at["c"].X && at["c"].X < at["a-step-with-a-name-much-longer-than-a-box"].X) {
		t.Errorf("columns are not in layer order")
	}
	long := at["a-step-with-a-name-much-longer-than-a-box"]
	if []rune(long.Name)[dagNameRunes-1] != '…' || long.Status != "pending" {
		t.Errorf("the long name is drawn %q (%s)", long.Name, long.Status)
	}
	if b := at["b"]; b.CompOrder != 1 || b.CompText != "↺1 undo-b · completed" || b.StateText != "compensated · 2 attempts" {
		t.Errorf("b: order %d, badge %q, state %q", b.CompOrder, b.CompText, b.StateText)
	}
	if c := at["c"]; c.Href != "#wstep_1" || c.CompText != "" || c.ErrorText != "boom" {
		t.Errorf("c: href %q, badge %q, error %q", c.Href, c.CompText, c.ErrorText)
	}
	if want := "DAG of 5 steps in 3 layers: 1 pending, 2 completed, 1 failed, 1 compensated; 1 compensation ran."; g.Summary != want {
		t.Errorf("summary %q, want %q", g.Summary, want)
	}
	if len(g.Edges) != 4 || len(g.Chain) != 1 || g.Chain[0].Handler != "undo-b" {
		t.Errorf("%d edges, chain %+v", len(g.Edges), g.Chain)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
