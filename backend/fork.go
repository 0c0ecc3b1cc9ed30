package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// RunForker is an optional capability of a [Backend]: forking a run, as
// DBOS's fork does. The fork is a new pending run of the same workflow,
// version and input whose history starts with copies of the completed
// step attempts the given run recorded before a named step, so that its
// workers replay those steps from their recorded results (their functions
// are not called again) and execute the named step and everything after
// it anew. Both built-in backends implement it.
//
// The copies keep every column but their ids and run (their times
// included, so the history keeps its order). After them comes a mark: a
// completed attempt of kind [StepRetry] named "__fork:<its id>" with
// output {"attempts":1}, and the fork's attempts start at 1 rather than
// 0. A worker reads the history of a run claimed before (its attempts
// above 1 once claimed) and skips that read on a first claim, so the
// fork must look claimed once; the mark, as after a manual retry
// (RetryWorkflowRun), makes the fork's retry budgets count only its own
// claims.
type RunForker interface {
	// ForkWorkflowRun creates the fork of p.WorkflowRunID from step
	// p.FromStep (see [PlanFork] for what is copied) in one transaction,
	// and returns it as stored; subscribers get EventWorkAvailable. A
	// missing run fails with [ErrRunNotFound]; a step the run never
	// recorded, or a fork point after a hook's creation, with
	// [ErrInvalidArgument] (see [PlanFork]); bad params
	// ([ForkWorkflowRunParams.Validate]) too. On any error nothing is
	// created.
	ForkWorkflowRun(ctx context.Context, p ForkWorkflowRunParams) (*WorkflowRun, error)
}

// Lineage. A fork's context column records the run it was forked from
// and the step ({"forkOf": {"runId", "fromStep"}}, beside the trace
// context; [ForkOfRun] reads it), and the forked run's context lists its
// forks, oldest first ({"forks": [ids]}, at most [MaxListedForks]; [ForksOfRun]),
// both written in the fork's transaction. So each side shows the link
// without a lookup.

// ForkOf is what a fork records of the run it was forked from.
type ForkOf struct {
	RunID    string `json:"runId"`
	FromStep string `json:"fromStep"`
}

// MaxListedForks bounds the forks a run's context lists: a run forked
// more often lists its first forks only (each later fork still records
// its origin), so that the context, read at every claim, stays small.
const MaxListedForks = 100

// ForkContext is the context column of a fork of of: runContext (the
// trace context the SDK stores, or nil) with "forkOf" set. A runContext
// that is not a JSON object is replaced.
func ForkContext(runContext json.RawMessage, of ForkOf) json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(runContext) > 0 && json.Unmarshal(runContext, &m) != nil {
		m = map[string]json.RawMessage{}
	}
	if m == nil { // the context was JSON null
		m = map[string]json.RawMessage{}
	}
	m["forkOf"], _ = json.Marshal(of)
	out, _ := json.Marshal(m)
	return out
}

// ForkOfRun reads the origin a fork's context records; ok is false for a
// run that is not a fork (or a context it cannot read).
func ForkOfRun(runContext json.RawMessage) (of ForkOf, ok bool) {
	if !strings.Contains(string(runContext), `"forkOf"`) {
		return of, false
	}
	var c struct {
		ForkOf *ForkOf `json:"forkOf"`
	}
	if json.Unmarshal(runContext, &c) != nil || c.ForkOf == nil || c.ForkOf.RunID == "" {
		return of, false
	}
	return *c.ForkOf, true
}

// ForksOfRun reads the forks a run's context lists, oldest first (nil for
// none).
func ForksOfRun(runContext json.RawMessage) []string {
	if !strings.Contains(string(runContext), `"forks"`) {
		return nil
	}
	var c struct {
		Forks []string `json:"forks"`
	}
	if json.Unmarshal(runContext, &c) != nil {
		return nil
	}
	return c.Forks
}

// ForkWorkflowRunParams are the inputs of [RunForker.ForkWorkflowRun].
type ForkWorkflowRunParams struct {
	// WorkflowRunID is the run forked (of any status).
	WorkflowRunID string
	// FromStep is the durable key ("charge", "charge:1", …) of the first
	// step the fork executes again; the steps recorded before it are
	// reused.
	FromStep string
	// Context is the fork's reserved context column (the SDK stores the
	// creating trace span there); nil is NULL.
	Context json.RawMessage
}

// Validate checks p as every backend does, with errors wrapping
// [ErrInvalidArgument] that name the field: a run id and a step name of
// valid text ([ValidText]), a storable context ([ValidateJSON]).
func (p ForkWorkflowRunParams) Validate() error {
	if p.WorkflowRunID == "" {
		return fmt.Errorf("%w: a fork needs the id of the run to fork", ErrInvalidArgument)
	}
	if err := checkText("workflow run id", p.WorkflowRunID); err != nil {
		return err
	}
	if p.FromStep == "" {
		return fmt.Errorf("%w: a fork needs the name of the step to execute again (FromStep)", ErrInvalidArgument)
	}
	if err := checkText("step name", p.FromStep); err != nil {
		return err
	}
	return checkJSONField("context", p.Context)
}

// PlanFork chooses, from the attempts of the run forked (in
// ListStepAttempts order: created_at, then id), those a fork from step
// fromStep reuses: every completed attempt recorded before the first
// attempt of fromStep (manual-retry marks aside). Both backends call it,
// so they copy the same attempts.
//
// It fails with an error wrapping [ErrInvalidArgument] when the run has
// no attempt of fromStep (naming the steps it has), or when a reused
// attempt created a hook: a hook belongs to its run (its token resumes
// that run, its payloads are that run's), so a fork could neither
// receive on it nor hand out its token; fork from that step or before.
func PlanFork(runID string, attempts []StepAttempt, fromStep string) ([]StepAttempt, error) {
	at := slices.IndexFunc(attempts, func(a StepAttempt) bool { return a.StepName == fromStep })
	if at < 0 {
		var names []string
		for _, a := range attempts {
			if !slices.Contains(names, a.StepName) {
				names = append(names, a.StepName)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("%w: run %s recorded no step, so there is no step %q to fork from", ErrInvalidArgument, runID, fromStep)
		}
		return nil, fmt.Errorf("%w: run %s has no step %q; its steps are %s", ErrInvalidArgument, runID, fromStep, quoteList(names))
	}
	var reused []StepAttempt
	for _, a := range attempts[:at] {
		if a.Status.Normalize() != StepCompleted || a.Kind == StepRetry {
			continue
		}
		if a.Kind == StepHook {
			return nil, fmt.Errorf("%w: step %q of run %s created a hook, which belongs to that run and cannot be reused by a fork: fork from step %q or before",
				ErrInvalidArgument, a.StepName, runID, a.StepName)
		}
		reused = append(reused, a)
	}
	return reused, nil
}

// quoteList renders names as "a", "b" and "c", at most 20 of them.
func quoteList(names []string) string {
	more := ""
	if len(names) > 20 {
		more = fmt.Sprintf(" and %d more", len(names)-20)
		names = names[:20]
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ") + more
}
