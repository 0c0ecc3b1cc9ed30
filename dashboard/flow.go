package dashboard

import (
	"github.com/openworkflow-go/openworkflow/api"
)

// The states of a flow's modules (openflow.State*).
const (
	statePending   = "pending"
	stateRunning   = "running"
	stateWaiting   = "waiting"
	stateCompleted = "completed"
	stateFailed    = "failed"
	stateSkipped   = "skipped"
	stateNotRun    = "not_run"
	stateStopped   = "stopped"
)

// flowView is an OpenFlow run's section of the run page: the flow's title
// and a graph of its modules (GET /v1/runs/{id}/flow), drawn as nested
// lists — a module's box, a loop's iterations as chips with the body of
// the one shown, a branch module's branches side by side — coloured by
// state with CSS, no script.
type flowView struct {
	Title, Summary, Path, Source string
	Modules                      []flowModule
	Failure                      *flowModule
	// Counts sums the modules (all levels) by state, for the summary line.
	Counts []flowCount
}

// flowCount is how many modules are in one state.
type flowCount struct {
	State string
	N     int
}

// flowModule is one module's box.
type flowModule struct {
	api.FlowModule
	// Class is the badge's state class.
	Class string
	// Chips are a loop's iterations (at most maxChips); MoreChips counts
	// those left out. Shown is the iteration whose body is drawn (the
	// first failed, else the first waiting or running, else the last);
	// Body its modules.
	Chips     []flowChip
	MoreChips int
	Shown     int
	Body      []flowModule
	// Branches are a branch module's; Sub a flow module's modules.
	Branches []flowBranch
	Sub      []flowModule
}

// flowChip is one iteration of a loop.
type flowChip struct {
	Index int
	State string
	Class string
	Shown bool
}

// flowBranch is one branch, its modules drawn in a column.
type flowBranch struct {
	Label, State, Class string
	Chosen              bool
	Modules             []flowModule
}

// maxChips bounds the iterations drawn as chips (a loop may have 1000).
const maxChips = 200

// buildFlow makes the section of the view v.
func buildFlow(v *api.FlowRun) *flowView {
	fv := &flowView{Title: v.Title, Summary: v.Summary, Path: v.Path, Source: v.Source}
	counts := map[string]int{}
	fv.Modules = flowModules(v.Modules, counts)
	if v.FailureModule != nil {
		m := flowModuleOf(*v.FailureModule, counts)
		fv.Failure = &m
	}
	for _, s := range []string{stateFailed, stateStopped, stateWaiting, stateRunning, stateCompleted, stateSkipped, stateNotRun, statePending} {
		if counts[s] > 0 {
			fv.Counts = append(fv.Counts, flowCount{State: s, N: counts[s]})
		}
	}
	return fv
}

func flowModules(mods []api.FlowModule, counts map[string]int) []flowModule {
	out := make([]flowModule, 0, len(mods))
	for _, m := range mods {
		out = append(out, flowModuleOf(m, counts))
	}
	return out
}

func flowModuleOf(m api.FlowModule, counts map[string]int) flowModule {
	counts[m.State]++
	fm := flowModule{FlowModule: m, Class: flowClass(m.State), Shown: -1}
	if len(m.Iterations) > 0 {
		shown := len(m.Iterations) - 1
		for _, want := range []string{stateFailed, stateWaiting, stateRunning} {
			if i := firstIteration(m.Iterations, want); i >= 0 {
				shown = i
				break
			}
		}
		fm.Shown = m.Iterations[shown].Index
		for i, it := range m.Iterations {
			if i >= maxChips && i != shown {
				fm.MoreChips++
				continue
			}
			fm.Chips = append(fm.Chips, flowChip{Index: it.Index, State: it.State, Class: flowClass(it.State), Shown: i == shown})
		}
		// The body's modules are counted once, as drawn.
		fm.Body = flowModules(m.Iterations[shown].Modules, counts)
	}
	for _, b := range m.Branches {
		fm.Branches = append(fm.Branches, flowBranch{Label: b.Label, State: b.State, Class: flowClass(b.State), Chosen: b.Chosen, Modules: flowModules(b.Modules, counts)})
	}
	fm.Sub = flowModules(m.SubFlow, counts)
	return fm
}

func firstIteration(its []api.FlowIteration, state string) int {
	for i, it := range its {
		if it.State == state {
			return i
		}
	}
	return -1
}

// flowClass maps a module's state to a badge class of app.css.
func flowClass(state string) string {
	switch state {
	case stateSkipped, stateNotRun:
		return "s-canceled"
	case stateStopped:
		return "s-abandoned"
	}
	return "s-" + state
}
