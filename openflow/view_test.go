package openflow_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/openworkflow-go/openworkflow/openflow"
)

// viewFlow has a loop of three iterations, a branchone that takes its
// second branch, a module suspended for approval, and one after it.
const viewFlow = `{"summary":"Nightly report","value":{"modules":[
	{"id":"each","summary":"For each region","value":{"type":"forloopflow","iterator":{"type":"static","value":[1,2,3]},
	 "modules":[{"id":"x","summary":"count","value":{"type":"identity"}}]}},
	{"id":"pick","value":{"type":"branchone","branches":[
	  {"summary":"never","expr":"false","modules":[{"id":"n","value":{"type":"identity"}}]},
	  {"expr":"true","modules":[{"id":"y","value":{"type":"identity"}}]}],
	 "default":[{"id":"d","value":{"type":"identity"}}]}},
	{"id":"ask","summary":"Ask the editor","value":{"type":"identity"},"suspend":{"required_events":1,"timeout":600}},
	{"value":{"type":"identity"}}]}}`

// TestViewOfAFlowRun: a run's view names the flow and its modules by id
// and summary, with each module's state, the loop's iterations and the
// branch taken, derived from the run's input and steps alone.
func TestViewOfAFlowRun(t *testing.T) {
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			runID := env.start([]byte(viewFlow), `{}`)
			env.waitSuspended(runID)
			run, err := env.client.GetRun(env.ctx, runID)
			if err != nil {
				t.Fatal(err)
			}
			v, err := openflow.ViewOf(run, env.steps(runID))
			if err != nil {
				t.Fatal(err)
			}
			if v.Title != "Nightly report" || len(v.Modules) != 4 {
				t.Fatalf("view %+v: want the flow's summary as title and 4 modules", v)
			}
			type want struct{ id, summary, typ, state string }
			for i, w := range []want{{"each", "For each region", "forloopflow", "completed"}, {"pick", "", "branchone", "completed"},
				{"ask", "Ask the editor", "identity", "waiting"}, {"_1", "", "identity", "pending"}} {
				m := v.Modules[i]
				if m.ID != w.id || m.Summary != w.summary || m.Type != w.typ || m.State != w.state {
					t.Errorf("module %d: %s %q %s %s; want %+v", i, m.ID, m.Summary, m.Type, m.State, w)
				}
			}
			loop := v.Modules[0]
			if loop.IterationCount != 3 || len(loop.Iterations) != 3 {
				t.Fatalf("loop: %d iterations of %d; want 3 of 3", len(loop.Iterations), loop.IterationCount)
			}
			for i, it := range loop.Iterations {
				if it.Index != i || it.State != "completed" || len(it.Modules) != 1 || it.Modules[0].Key != "each["+string(rune('0'+i))+"]/x" || it.Modules[0].State != "completed" {
					t.Errorf("iteration %d: %+v", i, it)
				}
			}
			br := v.Modules[1].Branches
			if len(br) != 3 || br[0].Label != "never" || br[0].Chosen || br[0].State != "pending" ||
				br[1].Label != "true" || !br[1].Chosen || br[1].State != "completed" || br[1].Modules[0].Key != "pick/1/y" ||
				br[2].Label != "default" || br[2].Chosen || br[2].State != "pending" {
				t.Errorf("branches: %+v", br)
			}
			if s := v.Modules[2].Suspend; s == nil || s.Events != 0 || s.Required != 1 {
				t.Errorf("ask's suspend: %+v", s)
			}
			// Once the run ended (here canceled while ask waits), nothing
			// reads pending or waiting: ask was cut off, what follows and
			// the branches not taken never ran.
			ended := *run
			ended.Status = "canceled"
			e, err := openflow.ViewOf(&ended, env.steps(runID))
			if err != nil {
				t.Fatal(err)
			}
			if got := []string{e.Modules[0].State, e.Modules[2].State, e.Modules[3].State, e.Modules[1].Branches[0].State, e.Modules[1].Branches[0].Modules[0].State, e.Modules[1].Branches[2].State}; got[0] != "completed" ||
				got[1] != openflow.StateStopped || got[2] != openflow.StateNotRun || got[3] != openflow.StateNotRun || got[4] != openflow.StateNotRun || got[5] != openflow.StateNotRun {
				t.Errorf("states of the ended run (each, ask, _1, the branch not taken, its module, default): %v", got)
			}
			// Not a flow run.
			other := *run
			other.Input = []byte(`{"x":1}`)
			if _, err := openflow.ViewOf(&other, nil); !errors.Is(err, openflow.ErrNotFlowRun) {
				t.Errorf("ViewOf a run of another workflow: %v, want ErrNotFlowRun", err)
			}
		})
	}
}

// TestViewOfADirectoryFlowRun: a run of a flow found by path reads its
// flow from its @definition step, and keeps the path beside the title.
func TestViewOfADirectoryFlowRun(t *testing.T) {
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			f, err := openflow.ParseFile(filepath.Join(testdataDir(t), "f/examples/double.flow.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			requireRunners(t, f)
			h, err := env.client.StartByName(env.ctx, "f/examples/double", "", map[string]int{"n": 2})
			if err != nil {
				t.Fatal(err)
			}
			env.wait(h.ID)
			run, err := env.client.GetRun(env.ctx, h.ID)
			if err != nil {
				t.Fatal(err)
			}
			v, err := openflow.ViewOf(run, env.steps(h.ID))
			if err != nil {
				t.Fatal(err)
			}
			if v.Title != "Double a number (a flow found by path)" || v.Path != "f/examples/double" || len(v.Modules) == 0 || v.Modules[0].ID != "double" || v.Modules[0].State != "completed" {
				t.Errorf("view %+v", v)
			}
		})
	}
}
