package dag

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	ow "github.com/openworkflow-go/openworkflow"
)

// Kind is the kind DAG definitions are stored under in the backend's
// definition store (the stored definition's kind).
const Kind = "dag"

// DefaultRetries is the number of retries of a step whose Retries is nil:
// 3, so a failing step executes up to 4 times, as in pgshift.
const DefaultRetries = 3

// MaxRetries is the most retries a step may have. Every execution is a
// step attempt of the run, and a run has at most ow.StepLimit (1000).
const MaxRetries = 100

// maxStepNameLength is the longest step name, in bytes.
const maxStepNameLength = 100

// Definition is a DAG workflow: a name and its steps, each naming the
// steps it depends on. The order of Steps is the declaration order, which
// breaks ties in the compensation order (see [Engine]).
type Definition struct {
	// Name is the workflow name runs are started and stored under;
	// required.
	Name string `json:"name"`
	// Steps are the steps in declaration order; at least one.
	Steps []Step `json:"steps"`
}

// Step is one step of a [Definition].
type Step struct {
	// Name identifies the step within the workflow: 1 to 100 bytes, none
	// of them '#', ':' or a control character, no leading or trailing
	// space. It names the step's durable keys (see [Engine]).
	Name string `json:"name"`
	// Handler is the name of the [Handler] that executes the step,
	// registered on the [Engine]; required.
	Handler string `json:"handler"`
	// Retries is how many times a failed execution is retried, with
	// backoff min(2^(k−1) s, 30 s) after the k-th failure: 0 to
	// [MaxRetries]. Nil means [DefaultRetries] (3: up to 4 executions).
	// The compensation of the step retries with the same policy.
	Retries *int `json:"retries,omitempty"`
	// Compensate, if set, is the name of the handler that undoes the step
	// when the run fails and is compensated.
	Compensate string `json:"compensate,omitempty"`
	// DependsOn lists the steps that must complete before this one
	// starts; none makes it a root step, started at once.
	DependsOn []string `json:"dependsOn,omitempty"`
}

// Retries returns a pointer to n, for [Step].Retries in Go literals.
func Retries(n int) *int { return &n }

// retries is the step's retry count, the default applied.
func (s Step) retries() int {
	if s.Retries == nil {
		return DefaultRetries
	}
	return *s.Retries
}

// Errors of definition validation, returned wrapped (joined when a
// definition has several problems) by [Engine.Define], [Definition.Validate]
// and [Parse]; test with errors.Is. The message names the workflow, the
// step and what is wrong.
var (
	// ErrInvalidDefinition: a missing name, no steps, a bad step name, a
	// missing handler name, retries out of range, or a malformed file.
	ErrInvalidDefinition = errors.New("invalid DAG definition")
	// ErrDuplicateStep: two steps share a name.
	ErrDuplicateStep = errors.New("duplicate step")
	// ErrUnknownDependency: a step depends on a name that is not a step.
	ErrUnknownDependency = errors.New("unknown dependency")
	// ErrUnknownHandler: a handler or compensate handler name is not
	// registered on the engine.
	ErrUnknownHandler = errors.New("unknown handler")
	// ErrCycle: the dependencies form a cycle (the message lists it).
	ErrCycle = errors.New("dependency cycle")
)

// Validate checks the definition's shape: a name, at least one and at
// most ow.StepLimit steps, valid and unique step names, a handler name
// per step, retries within 0..[MaxRetries], dependencies that name steps,
// and no cycle. hasHandler, if not nil, also checks that every handler
// and compensate handler name is registered. Every problem found is
// reported, joined; each wraps one of the sentinel errors above.
func (d Definition) Validate(hasHandler func(name string) bool) error {
	var problems []error
	add := func(sentinel error, format string, args ...any) {
		problems = append(problems, fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...))
	}
	if d.Name == "" {
		add(ErrInvalidDefinition, "the workflow has no name")
	}
	switch {
	case len(d.Steps) == 0:
		add(ErrInvalidDefinition, "the workflow has no steps")
	case len(d.Steps) > ow.StepLimit:
		add(ErrInvalidDefinition, "%d steps, more than a run's %d step attempts", len(d.Steps), ow.StepLimit)
	}
	first := map[string]int{}
	for i, s := range d.Steps {
		if err := checkStepName(s.Name); err != nil {
			add(ErrInvalidDefinition, "step %d: %v", i+1, err)
		}
		if j, dup := first[s.Name]; dup {
			add(ErrDuplicateStep, "step %q is declared twice (steps %d and %d)", s.Name, j+1, i+1)
		} else {
			first[s.Name] = i
		}
		if s.Handler == "" {
			add(ErrInvalidDefinition, "step %q has no handler", s.Name)
		} else if hasHandler != nil && !hasHandler(s.Handler) {
			add(ErrUnknownHandler, "step %q: handler %q is not registered", s.Name, s.Handler)
		}
		if s.Compensate != "" && hasHandler != nil && !hasHandler(s.Compensate) {
			add(ErrUnknownHandler, "step %q: compensate handler %q is not registered", s.Name, s.Compensate)
		}
		if r := s.retries(); r < 0 || r > MaxRetries {
			add(ErrInvalidDefinition, "step %q: retries %d, want 0 to %d", s.Name, r, MaxRetries)
		}
	}
	for _, s := range d.Steps {
		for _, dep := range s.DependsOn {
			if _, ok := first[dep]; !ok {
				add(ErrUnknownDependency, "step %q depends on %q, which is not a step of the workflow", s.Name, dep)
			}
		}
	}
	if len(problems) == 0 {
		if cycle := findCycle(d.Steps); cycle != nil {
			add(ErrCycle, "%s", strings.Join(cycle, " → "))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("DAG workflow %q: %w", d.Name, errors.Join(problems...))
}

// checkStepName says what is wrong with a step name, if anything.
func checkStepName(name string) error {
	switch {
	case name == "":
		return errors.New("empty step name")
	case len(name) > maxStepNameLength:
		return fmt.Errorf("step name %.20q… is longer than %d bytes", name, maxStepNameLength)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("step name %q has leading or trailing space", name)
	case strings.ContainsAny(name, "#:"):
		return fmt.Errorf("step name %q contains '#' or ':' (they separate the parts of durable keys)", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("step name %q contains a control character", name)
	}
	return nil
}

// normalized returns a copy of d as stored and executed: retries
// explicit, dependencies without duplicates (their first listing kept).
// d must be valid.
func (d Definition) normalized() Definition {
	out := Definition{Name: d.Name, Steps: make([]Step, len(d.Steps))}
	for i, s := range d.Steps {
		s.Retries = Retries(s.retries())
		var deps []string
		seen := map[string]bool{}
		for _, dep := range s.DependsOn {
			if !seen[dep] {
				seen[dep] = true
				deps = append(deps, dep)
			}
		}
		s.DependsOn = deps
		out.Steps[i] = s
	}
	return out
}

// findCycle returns the steps of a dependency cycle, the first repeated
// at the end ("a", "b", "a"), or nil. The search visits steps in
// declaration order and dependencies in listed order, so the cycle
// reported is the same every time. Unknown dependencies are ignored.
func findCycle(steps []Step) []string {
	idx := make(map[string]int, len(steps))
	for i, s := range steps {
		idx[s.Name] = i
	}
	const (
		unvisited = iota
		onStack
		done
	)
	color := make([]int, len(steps))
	var stack []int
	var cycle []string
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = onStack
		stack = append(stack, i)
		for _, dep := range steps[i].DependsOn {
			j, ok := idx[dep]
			if !ok {
				continue
			}
			switch color[j] {
			case onStack:
				start := len(stack) - 1
				for stack[start] != j {
					start--
				}
				for _, k := range stack[start:] {
					cycle = append(cycle, steps[k].Name)
				}
				cycle = append(cycle, steps[j].Name)
				return true
			case unvisited:
				if visit(j) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = done
		return false
	}
	for i := range steps {
		if color[i] == unvisited && visit(i) {
			return cycle
		}
	}
	return nil
}

// topologicalOrder is pgshift's order of the steps: a depth-first walk
// over the steps in declaration order, dependencies first (in listed
// order), each step after its dependencies (post-order). Reversed, it is
// the compensation order: a step is compensated before the steps it
// depends on, and of two independent steps the later declared first.
func topologicalOrder(steps []Step) []int {
	idx := make(map[string]int, len(steps))
	for i, s := range steps {
		idx[s.Name] = i
	}
	seen := make([]bool, len(steps))
	order := make([]int, 0, len(steps))
	var visit func(i int)
	visit = func(i int) {
		if seen[i] {
			return
		}
		seen[i] = true
		for _, dep := range steps[i].DependsOn {
			if j, ok := idx[dep]; ok {
				visit(j)
			}
		}
		order = append(order, i)
	}
	for i := range steps {
		visit(i)
	}
	return order
}
