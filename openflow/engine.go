package openflow

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// WorkflowName is the name of the workflow that runs any flow given in its
// input ([RunInput]): what [Engine.Start] and `ow flow run` start.
const WorkflowName = "openflow"

// DefaultMaxLoopIterations caps a while loop's iterations (Windmill has
// no cap; reference §7.7): 100,000. A while loop longer than a run's
// [ow.StepLimit] steps allow runs in chunk runs (see [LoopWorkflowName]).
const DefaultMaxLoopIterations = 100_000

// maxSubflowDepth bounds flows calling flows by path.
const maxSubflowDepth = 16

// Options configure an [Engine]. The zero value is usable.
type Options struct {
	// Dirs are the directories scripts (type "script") and flows (type
	// "flow", and the workflows of [Engine.DirWorkflows]) are found in by
	// path; see docs/openflow.md for the layout. Default none.
	Dirs []string
	// WorkDir holds the per-step working directories of scripts (removed
	// after each step) and the ./shared directory of same_worker runs.
	// Default <os.TempDir()>/openworkflow-openflow.
	WorkDir string
	// RunnersDir is the npm prefix bun and deno are looked for in when
	// they are not on PATH (<RunnersDir>/node_modules/.bin). Default
	// [DefaultRunnersDir]() ($HOME/.cache/openworkflow-runners).
	RunnersDir string
	// ScriptTimeout bounds a script whose module sets no timeout. Default
	// [DefaultScriptTimeout] (900 s).
	ScriptTimeout time.Duration
	// ExprTimeout bounds one expression evaluation. Default
	// [DefaultExprTimeout] (10 s).
	ExprTimeout time.Duration
	// MaxLoopIterations caps a while loop. Default
	// [DefaultMaxLoopIterations] (100,000).
	MaxLoopIterations int
	// Now is the clock of suspend timeouts. Default time.Now.
	Now func() time.Time
	// Logger receives warnings (a work directory that could not be
	// removed). Default slog.Default().
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.WorkDir == "" {
		o.WorkDir = filepath.Join(os.TempDir(), "openworkflow-openflow")
	}
	if o.RunnersDir == "" {
		o.RunnersDir = DefaultRunnersDir()
	}
	if o.ScriptTimeout <= 0 {
		o.ScriptTimeout = DefaultScriptTimeout
	}
	if o.ExprTimeout <= 0 {
		o.ExprTimeout = DefaultExprTimeout
	}
	if o.MaxLoopIterations <= 0 {
		o.MaxLoopIterations = DefaultMaxLoopIterations
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Engine runs OpenFlow flows as workflows: its interpreter is an ordinary
// workflow function, and every module execution is a durable step. It is
// safe for concurrent use by a worker's runs.
type Engine struct {
	opts    Options
	ev      *evaluator
	runners *runners
	dirs    *registry
	wf      *ow.Workflow[RunInput, json.RawMessage]
	loopWF  *ow.Workflow[chunkInput, chunkOutput]

	mu     sync.Mutex
	parsed map[[32]byte]*Flow // flows parsed by a pass, by their JSON's hash
}

// maxParsedFlows bounds the cache of parsed flows; it is emptied when
// full.
const maxParsedFlows = 256

// parse parses a flow document of a run, from the cache when a pass of
// any run parsed the same document before (a Flow is immutable).
func (e *Engine) parse(raw json.RawMessage) (*Flow, error) {
	k := sha256.Sum256(raw)
	e.mu.Lock()
	f, ok := e.parsed[k]
	e.mu.Unlock()
	if ok {
		return f, nil
	}
	f, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if len(e.parsed) >= maxParsedFlows {
		e.parsed = map[[32]byte]*Flow{}
	}
	e.parsed[k] = f
	e.mu.Unlock()
	return f, nil
}

// RunInput is the input of the [WorkflowName] workflow: the flow itself
// (so any worker with the engine registered can run or resume it) and its
// args.
type RunInput struct {
	// Flow is the OpenFlow document as JSON ([Flow.JSON]).
	Flow json.RawMessage `json:"flow"`
	// Args is the flow's input, a JSON object (null means {}).
	Args json.RawMessage `json:"args"`
	// Source names where the flow came from (a file), for display.
	Source string `json:"source,omitempty"`
}

// New returns an engine configured by opts.
func New(opts Options) *Engine {
	opts = opts.withDefaults()
	e := &Engine{opts: opts, ev: newEvaluator(opts.ExprTimeout), runners: newRunners(opts.RunnersDir), dirs: newRegistry(opts.Dirs),
		parsed: map[[32]byte]*Flow{}}
	e.wf = ow.Define(ow.Spec{Name: WorkflowName}, e.runInput)
	e.loopWF = ow.Define(ow.Spec{Name: LoopWorkflowName}, e.runLoopChunk)
	return e
}

// Workflow returns the workflow that runs the flow of its input. A worker
// running it must also run the chunks of long loops: register
// [Engine.Workflows], or use [Engine.Register].
func (e *Engine) Workflow() *ow.Workflow[RunInput, json.RawMessage] { return e.wf }

// Workflows returns the engine's own workflows, which a worker running
// flows must register: [Engine.Workflow] and the [LoopWorkflowName]
// workflow that runs the chunks of long loops.
func (e *Engine) Workflows() []ow.Definition { return []ow.Definition{e.wf, e.loopWF} }

// DirWorkflows returns one workflow per flow found in [Options].Dirs,
// named by the flow's path (e.g. "f/team/etl" for f/team/etl.flow.yaml);
// its input is the flow's args, and its ow.Limits are the flow's
// concurrent_limit (and concurrency_time_window_s), which workers store
// and enforce when they start. A run records the flow's definition in
// its first step, so editing the file does not change runs in flight. It
// fails with the problems of every invalid flow file, naming each file,
// for a flow that sets a priority (its runs take their starter's), and
// for a flow module calling a flow with a priority or a concurrent_limit
// (a sub-flow runs inside its caller's run).
func (e *Engine) DirWorkflows() ([]ow.Definition, error) {
	flows, err := e.dirs.flows()
	if err != nil {
		return nil, err
	}
	defs := make([]ow.Definition, 0, len(flows))
	for _, ff := range flows {
		if ff.path == WorkflowName || ff.path == LoopWorkflowName {
			return nil, fmt.Errorf("flow %s: the path %q is the name of one of the engine's own workflows; rename the file", ff.file, ff.path)
		}
		f, err := ParseFile(ff.file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ff.file, err)
		}
		if f.Value.Priority != 0 {
			return nil, fmt.Errorf("flow %s: value.priority: a flow of the directories runs as the workflow %q, whose runs take the priority their starter gives (ow runs start --priority, ow.WithPriority, a schedule's priority); remove it", ff.file, ff.path)
		}
		var problems []Problem
		walkModules(f, func(m *Module) {
			if v, ok := m.Value.(PathFlow); ok {
				if sub, err := e.dirs.flow(v.Path); err == nil { // a missing flow fails its module when it runs
					if p := subflowSettings(m, v.Path, sub); p != nil {
						problems = append(problems, *p)
					}
				}
			}
		})
		if len(problems) > 0 {
			return nil, fmt.Errorf("%s: %w", ff.file, &ValidationError{What: "flow", Problems: problems})
		}
		path := ff.path
		defs = append(defs, ow.Define(ow.Spec{Name: path, Limits: f.limits()}, func(ctx ow.Context, args json.RawMessage) (json.RawMessage, error) {
			return e.runPath(ctx, path, args)
		}))
	}
	return defs, nil
}

// Register registers the engine's workflows ([Engine.Workflows]) and, when includeDirs is true, the
// workflows of its directories ([Engine.DirWorkflows]) on w. It returns
// DirWorkflows' error for an invalid flow file, or w.Register's (one
// wrapping ow.ErrAlreadyRegistered for a name registered twice).
func (e *Engine) Register(w *ow.Worker, includeDirs bool) error {
	defs := e.Workflows()
	if includeDirs {
		more, err := e.DirWorkflows()
		if err != nil {
			return err
		}
		defs = append(defs, more...)
	}
	return w.Register(defs...)
}

// Check verifies what parsing cannot: that the runner of every language
// the flow uses is installed, and that every script and flow it names by
// path exists in the configured directories (recursively, for flows).
// It returns a *[ValidationError] whose problems name the module and
// what to install or create.
func (e *Engine) Check(f *Flow) error {
	var problems []Problem
	e.check(f, map[string]bool{}, &problems, 0)
	if len(problems) > 0 {
		return &ValidationError{What: "flow", Problems: problems}
	}
	return nil
}

func (e *Engine) check(f *Flow, seen map[string]bool, problems *[]Problem, depth int) {
	walkModules(f, func(m *Module) {
		switch v := m.Value.(type) {
		case RawScript:
			if _, err := e.runners.lookup(v.Language); err != nil {
				*problems = append(*problems, Problem{Path: join(m.path, "value.language"), Message: err.Error()})
			}
		case PathScript:
			s, err := e.dirs.script(v.Path)
			if err != nil {
				*problems = append(*problems, Problem{Path: join(m.path, "value.path"), Message: err.Error()})
			} else if _, err := e.runners.lookup(s.lang); err != nil {
				*problems = append(*problems, Problem{Path: join(m.path, "value.path"), Message: fmt.Sprintf("script %s: %v", v.Path, err)})
			}
		case PathFlow:
			if seen[v.Path] || depth >= maxSubflowDepth {
				return // a recursive flow: its depth is bounded when it runs
			}
			sub, err := e.dirs.flow(v.Path)
			if err != nil {
				*problems = append(*problems, Problem{Path: join(m.path, "value.path"), Message: err.Error()})
				return
			}
			if p := subflowSettings(m, v.Path, sub); p != nil {
				*problems = append(*problems, *p)
			}
			seen[v.Path] = true
			e.check(sub, seen, problems, depth+1)
		}
	})
}

// walkModules calls fn on every module of f, containers before their
// bodies, the failure module last.
func walkModules(f *Flow, fn func(*Module)) {
	var walk func([]*Module)
	walk = func(ms []*Module) {
		for _, m := range ms {
			fn(m)
			switch v := m.Value.(type) {
			case ForLoop:
				walk(v.Modules)
			case WhileLoop:
				walk(v.Modules)
			case BranchOne:
				for _, b := range v.Branches {
					walk(b.Modules)
				}
				walk(v.Default)
			case BranchAll:
				for _, b := range v.Branches {
					walk(b.Modules)
				}
			}
		}
	}
	walk(f.Value.Modules)
	if f.Value.FailureModule != nil {
		walk([]*Module{f.Value.FailureModule})
	}
}

// Languages lists the rawscript languages the flow uses, sorted (scripts
// by path are not included: their language comes from their file).
func (f *Flow) Languages() []string {
	var out []string
	walkModules(f, func(m *Module) {
		if v, ok := m.Value.(RawScript); ok && !slices.Contains(out, v.Language) {
			out = append(out, v.Language)
		}
	})
	slices.Sort(out)
	return out
}

// limits are the ow.Limits of the flow's own workflow: concurrent_limit
// runs at once (and, with concurrency_time_window_s, started within any
// such window). Without a concurrency key, every run counts under one
// key, as in Windmill, where the default key is the flow's path.
func (f *Flow) limits() ow.Limits {
	v := f.Value
	if v.ConcurrentLimit <= 0 {
		return ow.Limits{}
	}
	l := ow.Limits{ConcurrencyPerKey: v.ConcurrentLimit}
	if v.ConcurrencyTimeWindowS > 0 {
		l.RateLimit = v.ConcurrentLimit
		l.RatePeriod = max(time.Duration(v.ConcurrencyTimeWindowS*float64(time.Second)), time.Millisecond)
	}
	return l
}

// subflowSettings is the problem of flow module m calling the flow sub
// (at path) when sub sets what only a run of its own can honour; nil
// when it sets nothing of the kind.
func subflowSettings(m *Module, path string, sub *Flow) *Problem {
	msg := sub.runSettings()
	if msg == "" {
		return nil
	}
	return &Problem{Path: join(m.path, "value.path"), Message: fmt.Sprintf("flow %s %s, which a flow module cannot honour: it runs inside its caller's run; remove it from that flow, or run it as a workflow of its own", path, msg)}
}

// runSettings names the settings of f that hold for its runs (priority,
// concurrent_limit), which only a run of its own can honour; "" when it
// has none.
func (f *Flow) runSettings() string {
	switch v := f.Value; {
	case v.ConcurrentLimit > 0 && v.Priority != 0:
		return "sets a priority and a concurrent_limit"
	case v.ConcurrentLimit > 0:
		return "sets a concurrent_limit"
	case v.Priority != 0:
		return "sets a priority"
	}
	return ""
}
