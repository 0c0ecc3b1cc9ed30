package openflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	ow "github.com/openworkflow-go/openworkflow"
)

// This file derives what a run of a flow looks like — its modules by id
// and summary, its branches and loop iterations, each with its state —
// from the stored run alone (its input, or its "@definition" step, gives
// the flow) and its step attempts, named as interp.go says. The API
// serves it (GET /v1/runs/{id}/flow) and the dashboard draws it, so
// neither needs to know how the interpreter names its steps.

// DefinitionStep is the first step of a run of a directory flow: it
// records the flow's definition, read once.
const DefinitionStep = definitionStep

// ErrNotFlowRun is returned by [ViewOf] for a run that is not a flow run
// (its input holds no flow, and it has no "@definition" step).
var ErrNotFlowRun = errors.New("not an OpenFlow run")

// Module states in a [RunView].
const (
	StatePending   = "pending"   // not begun
	StateRunning   = "running"   // executing (or retrying)
	StateWaiting   = "waiting"   // suspended: waiting for resume events
	StateCompleted = "completed" // succeeded
	StateFailed    = "failed"    // failed (continue_on_error may go on)
	StateSkipped   = "skipped"   // skip_if was true
	// StateNotRun: the run ended (completed, failed or canceled) before
	// the module began — a branch not taken, what followed a failure.
	StateNotRun = "not_run"
	// StateStopped: the module was running or waiting when its run ended
	// (canceled, failed at its deadline): it will not go on.
	StateStopped = "stopped"
)

// RunView is a flow run as a tree of modules with their states.
type RunView struct {
	// Title is the flow's summary, else its path (a directory flow's), else
	// the file it came from, else "OpenFlow run".
	Title string `json:"title"`
	// Summary and Path are the flow's summary and a directory flow's
	// path ("" for an inline flow); Source names the file an inline
	// flow came from, when known.
	Summary string `json:"summary,omitempty"`
	Path    string `json:"path,omitempty"`
	Source  string `json:"source,omitempty"`
	// Modules are the top-level modules in order; FailureModule the
	// failure handler, if the flow has one.
	Modules       []ModuleView `json:"modules"`
	FailureModule *ModuleView  `json:"failureModule,omitempty"`
}

// ModuleView is one module of a run, in the context it ran in (a loop's
// iteration, a branch).
type ModuleView struct {
	// ID and Summary are the module's; Type its value's type (rawscript,
	// script, flow, forloopflow, whileloopflow, branchone, branchall,
	// identity); Detail its language or path.
	ID      string `json:"id"`
	Summary string `json:"summary,omitempty"`
	Type    string `json:"type"`
	Detail  string `json:"detail,omitempty"`
	// Key is the durable key of the module's step here, e.g. "b[3]/c".
	Key string `json:"key"`
	// State is pending, running, waiting, completed, failed or skipped
	// while the run goes on; once it ended, a module never begun reads
	// not_run and one still running or waiting reads stopped.
	State string `json:"state"`
	// Attempts counts its attempts (retries included); 0 while pending.
	Attempts int `json:"attempts"`
	// Suspend is set for a module that waits for approvals after it runs:
	// the events received and required.
	Suspend *SuspendView `json:"suspend,omitempty"`
	// Iterations are a loop's iterations begun, in order; IterationCount
	// how many there are to run (a for loop's items, once evaluated; the
	// iterations begun for a while loop).
	Iterations     []IterationView `json:"iterations,omitempty"`
	IterationCount int             `json:"iterationCount,omitempty"`
	// Branches are a branchone's branches (its default last) or a
	// branchall's; SubFlow the modules of a flow module's flow, once
	// read.
	Branches []BranchView `json:"branches,omitempty"`
	SubFlow  []ModuleView `json:"subFlow,omitempty"`
}

// SuspendView counts a suspended module's resume events.
type SuspendView struct {
	Events   int `json:"events"`
	Required int `json:"required"`
}

// IterationView is one iteration of a loop.
type IterationView struct {
	Index   int          `json:"index"`
	State   string       `json:"state"`
	Modules []ModuleView `json:"modules"`
}

// BranchView is one branch of a branchone or branchall.
type BranchView struct {
	// Label is the branch's summary, else its expression, else
	// "branch N" ("default" for branchone's default).
	Label string `json:"label"`
	// Chosen is true for the branch a branchone took (false for all of a
	// branchall's, which all run).
	Chosen  bool         `json:"chosen,omitempty"`
	State   string       `json:"state"`
	Modules []ModuleView `json:"modules"`
}

// ViewOf derives the view of run from its step attempts (all of them, in
// the order they were created). It fails with [ErrNotFlowRun] for a run of
// another workflow, and when the flow it recorded does not parse.
func ViewOf(run *ow.WorkflowRun, attempts []ow.StepAttempt) (*RunView, error) {
	var in RunInput
	var doc json.RawMessage
	if json.Unmarshal(run.Input, &in) == nil && len(in.Flow) > 0 && !isNull(in.Flow) {
		doc = in.Flow
	}
	steps := map[string]*ow.StepAttempt{}
	for i := range attempts {
		steps[attempts[i].StepName] = &attempts[i] // the latest attempt of each key
	}
	path := ""
	if doc == nil {
		a, ok := steps[definitionStep]
		if !ok || a.Status != ow.StepCompleted {
			return nil, fmt.Errorf("run %s of workflow %q: %w", run.ID, run.WorkflowName, ErrNotFlowRun)
		}
		doc, path = a.Output, run.WorkflowName
	}
	f, err := Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("run %s: the flow it recorded: %w", run.ID, err)
	}
	v := &RunView{Summary: f.Summary, Path: path, Source: in.Source}
	switch {
	case f.Summary != "":
		v.Title = f.Summary
	case path != "":
		v.Title = path
	case in.Source != "":
		v.Title = in.Source
	default:
		v.Title = "OpenFlow run"
	}
	b := viewBuilder{steps: steps, attempts: attempts}
	v.Modules = b.list("", f.Value.Modules)
	if fm := f.Value.FailureModule; fm != nil {
		mv := b.module("", fm)
		v.FailureModule = &mv
	}
	if run.Status.Normalize().Terminal() {
		endModules(v.Modules)
		if v.FailureModule != nil {
			endModule(v.FailureModule)
		}
	}
	return v, nil
}

// endModules settles the states of a run that ended: nothing is pending,
// running or waiting any more (see [StateNotRun], [StateStopped]).
func endModules(ms []ModuleView) {
	for i := range ms {
		endModule(&ms[i])
	}
}

func endModule(m *ModuleView) {
	m.State = endedState(m.State)
	for i := range m.Iterations {
		m.Iterations[i].State = endedState(m.Iterations[i].State)
		endModules(m.Iterations[i].Modules)
	}
	for i := range m.Branches {
		m.Branches[i].State = endedState(m.Branches[i].State)
		endModules(m.Branches[i].Modules)
	}
	endModules(m.SubFlow)
}

func endedState(state string) string {
	switch state {
	case StatePending:
		return StateNotRun
	case StateRunning, StateWaiting:
		return StateStopped
	}
	return state
}

type viewBuilder struct {
	steps    map[string]*ow.StepAttempt
	attempts []ow.StepAttempt
}

func (b viewBuilder) list(prefix string, mods []*Module) []ModuleView {
	out := make([]ModuleView, 0, len(mods))
	for _, m := range mods {
		out = append(out, b.module(prefix, m))
	}
	// A module followed by one that began has ended.
	for i := len(out) - 2; i >= 0; i-- {
		if out[i].State == StateRunning && out[i+1].State != StatePending {
			out[i].State = StateCompleted
		}
	}
	return out
}

// bodyState is the state of a container whose end is not recorded, from
// its body: a loop whose iterations all ended, the branch taken or every
// branch ended, the sub-flow ended.
func bodyState(mv ModuleView) string {
	var parts []string
	switch {
	case mv.Type == "forloopflow" || mv.Type == "whileloopflow":
		for _, it := range mv.Iterations {
			parts = append(parts, it.State)
		}
		if mv.Type == "forloopflow" && len(mv.Iterations) < mv.IterationCount {
			parts = append(parts, StatePending)
		}
	case mv.Type == "branchone":
		for _, br := range mv.Branches {
			if br.Chosen && len(br.Modules) > 0 {
				parts = append(parts, br.State)
			}
		}
	case mv.Type == "branchall":
		for _, br := range mv.Branches {
			parts = append(parts, br.State)
		}
	case mv.SubFlow != nil:
		parts = append(parts, combined(mv.SubFlow))
	default:
		return StateRunning
	}
	st := StateCompleted
	for _, p := range parts {
		switch p {
		case StateFailed:
			return StateFailed
		case StateWaiting:
			st = StateWaiting
		case StateRunning, StatePending:
			if st != StateWaiting {
				st = StateRunning
			}
		}
	}
	if mv.Type == "whileloopflow" && st == StateCompleted {
		return StateRunning // a while loop's end shows only by what follows it
	}
	return st
}

// module derives the view of m, whose key is prefix+m.ID.
func (b viewBuilder) module(prefix string, m *Module) ModuleView {
	key := prefix + m.ID
	mv := ModuleView{ID: m.ID, Summary: m.Summary, Type: m.Value.Type(), Key: key, State: StatePending}
	switch v := m.Value.(type) {
	case RawScript:
		mv.Detail = v.Language
	case PathScript:
		mv.Detail = v.Path
	case PathFlow:
		mv.Detail = v.Path
	}
	// The latest attempt: key, key#1, key#2…
	akey := ""
	for n := 0; ; n++ {
		k := key
		if n > 0 {
			k = fmt.Sprintf("%s#%d", key, n)
		}
		if _, leaf := b.steps[k]; !leaf {
			if _, pre := b.steps[k+"@pre"]; !pre {
				break
			}
		}
		akey, mv.Attempts = k, n+1
	}
	if akey == "" {
		return b.children(mv, m, key, nil)
	}
	_, leaf := b.steps[akey]
	if leaf {
		mv.State = leafState(b.steps[akey])
	} else {
		mv.State = b.containerState(akey)
	}
	mv = b.children(mv, m, akey, b.pre(akey))
	if !leaf && mv.State == StateRunning {
		// A container records its end only when it has a stop_after_if
		// or a sleep: else its body tells.
		mv.State = bodyState(mv)
	}
	if sp := m.Suspend; sp != nil && sp.RequiredEvents > 0 && mv.State == StateCompleted {
		s := &SuspendView{Required: sp.RequiredEvents}
		for i := 0; i < sp.RequiredEvents; i++ {
			a, ok := b.steps[fmt.Sprintf("%s@resume.%d", key, i)]
			if !ok || a.Status != ow.StepCompleted {
				if _, started := b.steps[key+"@suspend"]; started {
					mv.State = StateWaiting
				}
				break
			}
			s.Events++
		}
		mv.Suspend = s
	}
	return mv
}

// pre reads a container's "@pre" record, nil when it has none yet.
func (b viewBuilder) pre(akey string) *preRecord {
	a, ok := b.steps[akey+"@pre"]
	if !ok || a.Status != ow.StepCompleted {
		return nil
	}
	var p preRecord
	if json.Unmarshal(a.Output, &p) != nil {
		return nil
	}
	return &p
}

// leafState is the state of a script or identity module's attempt.
func leafState(a *ow.StepAttempt) string {
	switch a.Status {
	case ow.StepRunning:
		return StateRunning
	case ow.StepFailed:
		return StateFailed
	}
	var rec leafRecord
	if json.Unmarshal(a.Output, &rec) != nil {
		return StateCompleted
	}
	switch rec.Status {
	case statusFailure:
		return StateFailed
	case statusSkipped:
		return StateSkipped
	}
	return StateCompleted
}

// containerState is the state of a loop's, branch's or flow module's
// attempt akey, from its "@pre" and "@post" records.
func (b viewBuilder) containerState(akey string) string {
	pre, ok := b.steps[akey+"@pre"]
	switch {
	case !ok:
		return StatePending
	case pre.Status == ow.StepRunning:
		return StateRunning
	case pre.Status == ow.StepFailed:
		return StateFailed
	}
	var p preRecord
	if json.Unmarshal(pre.Output, &p) == nil {
		if p.Skipped {
			return StateSkipped
		}
		if p.Failure != nil {
			return StateFailed
		}
	}
	post, ok := b.steps[akey+"@post"]
	switch {
	case !ok || post.Status == ow.StepRunning:
		return StateRunning
	case post.Status == ow.StepFailed:
		return StateFailed
	}
	var rec postRecord
	if json.Unmarshal(post.Output, &rec) == nil && rec.Failure != nil {
		return StateFailed
	}
	return StateCompleted
}

// children fills a container's iterations, branches or sub-flow, under
// its attempt's key akey; pre is its "@pre" record (nil: not read yet).
func (b viewBuilder) children(mv ModuleView, m *Module, akey string, pre *preRecord) ModuleView {
	switch v := m.Value.(type) {
	case ForLoop:
		mv.Iterations = b.iterations(akey, v.Modules)
		mv.IterationCount = len(mv.Iterations)
		if pre != nil {
			mv.IterationCount = len(pre.Items)
		}
	case WhileLoop:
		mv.Iterations = b.iterations(akey, v.Modules)
		mv.IterationCount = len(mv.Iterations)
	case BranchOne:
		for i, br := range v.Branches {
			bv := b.branch(fmt.Sprintf("%s/%d/", akey, i), branchLabel(br, i), br.Modules)
			bv.Chosen = pre != nil && pre.Branch == i
			mv.Branches = append(mv.Branches, bv)
		}
		bv := b.branch(akey+"/default/", "default", v.Default)
		bv.Chosen = pre != nil && (pre.Branch < 0 || pre.Branch >= len(v.Branches))
		mv.Branches = append(mv.Branches, bv)
	case BranchAll:
		for i, br := range v.Branches {
			mv.Branches = append(mv.Branches, b.branch(fmt.Sprintf("%s/%d/", akey, i), branchLabel(br, i), br.Modules))
		}
	case PathFlow:
		if pre != nil && len(pre.Flow) > 0 {
			if f, err := Parse(pre.Flow); err == nil {
				mv.SubFlow = b.list(akey+"/", f.Value.Modules)
			}
		}
	}
	return mv
}

func branchLabel(br Branch, i int) string {
	switch {
	case br.Summary != "":
		return br.Summary
	case br.Expr != "":
		return br.Expr
	}
	return "branch " + strconv.Itoa(i)
}

func (b viewBuilder) branch(prefix, label string, mods []*Module) BranchView {
	bv := BranchView{Label: label, Modules: b.list(prefix, mods)}
	bv.State = combined(bv.Modules)
	return bv
}

// iterations lists the iterations of loop attempt akey begun, from the
// step names that hold "akey[i]/" or "akey[i]@".
func (b viewBuilder) iterations(akey string, body []*Module) []IterationView {
	seen := map[int]bool{}
	last := -1
	for _, a := range b.attempts {
		rest, ok := strings.CutPrefix(a.StepName, akey+"[")
		if !ok {
			continue
		}
		num, _, ok := strings.Cut(rest, "]")
		i, err := strconv.Atoi(num)
		if !ok || err != nil || i < 0 {
			continue
		}
		seen[i] = true
		last = max(last, i)
	}
	var out []IterationView
	for i := 0; i <= last; i++ {
		if !seen[i] {
			continue
		}
		mods := b.list(fmt.Sprintf("%s[%d]/", akey, i), body)
		out = append(out, IterationView{Index: i, State: combined(mods), Modules: mods})
	}
	return out
}

// combined is the state of a sequence of modules: failed if one failed,
// waiting or running if one is, completed when all are done, pending
// when none began.
func combined(mods []ModuleView) string {
	begun, done := false, true
	state := StatePending
	for _, m := range mods {
		switch m.State {
		case StateFailed:
			return StateFailed
		case StateWaiting:
			state = StateWaiting
		case StateRunning:
			if state != StateWaiting {
				state = StateRunning
			}
		}
		if m.State != StatePending {
			begun = true
		}
		if m.State != StateCompleted && m.State != StateSkipped {
			done = false
		}
	}
	switch {
	case state != StatePending:
		return state
	case begun && done:
		return StateCompleted
	case begun:
		return StateRunning
	}
	return StatePending
}
