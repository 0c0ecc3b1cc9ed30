package openflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	ow "github.com/openworkflow-go/openworkflow"
)

// flowOutcome is the output of the "@outcome" step, recorded when a flow
// failed or was skipped (a failed run stores only an error, and a
// completed run's output is the flow's result alone).
type flowOutcome struct {
	Success bool            `json:"success"`
	Skipped bool            `json:"skipped,omitempty"`
	Result  json.RawMessage `json:"result"`
}

// runInput is the body of the WorkflowName workflow.
func (e *Engine) runInput(ctx ow.Context, in RunInput) (json.RawMessage, error) {
	f, err := e.parse(in.Flow)
	if err != nil {
		return nil, ow.NonRetryable(err)
	}
	return e.execute(ctx, f, in.Args)
}

// runPath is the body of a directory flow's workflow: the flow's
// definition is read once, in the run's first step.
func (e *Engine) runPath(ctx ow.Context, path string, args json.RawMessage) (json.RawMessage, error) {
	def, err := ow.Run(ctx, definitionStep, func(context.Context) (json.RawMessage, error) {
		raw, err := e.dirs.flowJSON(path)
		if err != nil {
			return nil, ow.NonRetryable(err)
		}
		return raw, nil
	})
	if err != nil {
		return nil, err
	}
	f, err := e.parse(def)
	if err != nil {
		return nil, ow.NonRetryable(err)
	}
	return e.execute(ctx, f, args)
}

// execute interprets f with args: it validates args against the flow's
// schema, runs skip_expr, the modules and the failure module, and turns
// the outcome into the run's output (a successful flow's result) or
// failure (after recording the failed flow's result in "@outcome").
func (e *Engine) execute(ctx ow.Context, f *Flow, args json.RawMessage) (json.RawMessage, error) {
	if isNull(args) {
		args = json.RawMessage("{}")
	}
	args = compact(args)
	if err := f.ValidateArgs(args); err != nil {
		return nil, ow.NonRetryable(err)
	}
	info := ctx.RunInfo()
	r := &flowRun{e: e, ctx: ctx, runID: info.ID, started: info.StartedAt,
		workRoot: filepath.Join(e.opts.WorkDir, unsafeKeyChars.ReplaceAllString(info.ID, "_"))}
	top := &frame{flowInput: args, env: f.Value.FlowEnv, res: newResultsScope(nil), shared: f.Value.SameWorker, doc: f.JSON()}
	o, err := r.top(top, f)
	if err != nil {
		return nil, err
	}
	r.cleanup()
	if !o.failed && (o.stop == nil || !o.stop.skipped) {
		return o.result, nil
	}
	rec := flowOutcome{Success: !o.failed, Skipped: o.stop != nil && o.stop.skipped, Result: o.result}
	if _, err := ow.Run(ctx, outcomeStep, func(context.Context) (flowOutcome, error) { return rec, nil }); err != nil {
		return nil, err
	}
	if rec.Success {
		return o.result, nil
	}
	return nil, ow.NonRetryable(runError(o.result))
}

// top runs skip_expr, then the flow's body.
func (r *flowRun) top(f *frame, fl *Flow) (outcome, error) {
	if fl.Value.SkipExpr != "" {
		skip, err := ow.Run(r.ctx, skipExprStep, func(context.Context) (bool, error) {
			ok, err := r.predicate(fl.Value.SkipExpr, exprScope{vars: map[string]json.RawMessage{
				"flow_input": f.flowInput, "WM_SCHEDULED_FOR": json.RawMessage("null"), "flow_env": envOf(f)}})
			return err == nil && ok, nil
		})
		if err != nil {
			return outcome{}, err
		}
		if skip {
			res := jsonString("stopped early")
			return outcome{result: res, stop: &stopSignal{result: res, skipped: true}}, nil
		}
	}
	return r.body(f, fl)
}

// runError is the error a failed flow's run stores: the error object of
// its result ({"error": {name, message}}), the combined errors of an
// array result, or a generic FlowFailed.
func runError(result json.RawMessage) *ow.Error {
	e := errorOf(result)
	var obj struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Stack   string `json:"stack"`
	}
	if json.Unmarshal(e, &obj) == nil && obj.Message != "" {
		if obj.Name == "" {
			obj.Name = "Error"
		}
		return &ow.Error{Name: obj.Name, Message: obj.Message, Stack: obj.Stack}
	}
	return &ow.Error{Name: "FlowFailed", Message: "the flow failed; its result is the output of step " + outcomeStep}
}

// Result is a finished flow run's outcome as Windmill defines it.
type Result struct {
	// RunID is the run.
	RunID string `json:"runId"`
	// Success is true when the flow completed (a failure module whose
	// result has recover: true counts as success).
	Success bool `json:"success"`
	// Skipped is true when the flow stopped early with skip_if_stopped,
	// or skip_expr was true.
	Skipped bool `json:"skipped,omitempty"`
	// Result is the flow's result: the last module's result, the stopping
	// module's, the failure module's, or the failed module's (for a failed
	// loop or branchall the array of results so far); for a run that
	// failed before its flow ran (invalid args), {"error": …} of the run.
	Result json.RawMessage `json:"result"`
}

// Start validates args against f's schema, checks the flow's runners and
// paths ([Engine.Check]), and only then starts a run of the
// [WorkflowName] workflow with the flow's priority; nothing is stored
// when a check fails (a *[ValidationError]), or when the flow sets a
// concurrent_limit (only a flow's own workflow can hold one: see
// [Engine.DirWorkflows]). source names the flow's file for display.
func (e *Engine) Start(ctx context.Context, c *ow.Client, f *Flow, args json.RawMessage, source string) (*ow.RunHandle, error) {
	if isNull(args) {
		args = json.RawMessage("{}")
	}
	if err := f.ValidateArgs(args); err != nil {
		return nil, err
	}
	if err := e.Check(f); err != nil {
		return nil, err
	}
	if f.Value.ConcurrentLimit > 0 {
		return nil, &ValidationError{What: "flow", Problems: []Problem{{Path: "value.concurrent_limit", Message: fmt.Sprintf(
			"a concurrency limit holds for the runs of one workflow, and this starts a run of the generic %q workflow, which runs any flow; put the flow in openflow.dirs and start it by its path (ow worker registers it as a workflow with the limit), or remove the limit", WorkflowName)}}}
	}
	h, err := e.wf.Start(ctx, c, RunInput{Flow: f.JSON(), Args: compact(args), Source: source}, ow.WithPriority(f.Value.Priority))
	if err != nil {
		return nil, err
	}
	return h.RunHandle, nil
}

// Wait waits for run runID to finish and returns its [Result]. A failed
// run's result is read from its "@outcome" step; a run that failed
// before (invalid args, an invalid flow) gives {"error": <run error>}. It
// returns an error wrapping ow.ErrRunCanceled for a canceled run, and
// ctx's error if ctx ends first.
func Wait(ctx context.Context, c *ow.Client, runID string) (*Result, error) {
	out, err := c.Handle(runID).Result(ctx)
	var rf *ow.RunFailedError
	switch {
	case err == nil:
		res := &Result{RunID: runID, Success: true, Result: out}
		if o, ok, err := recordedOutcome(ctx, c, runID); err != nil {
			return nil, err
		} else if ok {
			res.Skipped = o.Skipped
		}
		return res, nil
	case errors.As(err, &rf):
		o, ok, err := recordedOutcome(ctx, c, runID)
		if err != nil {
			return nil, err
		}
		if ok {
			return &Result{RunID: runID, Success: o.Success, Skipped: o.Skipped, Result: o.Result}, nil
		}
		return &Result{RunID: runID, Result: failure(mustJSON(rf.Err))}, nil
	}
	return nil, err
}

// recordedOutcome reads the "@outcome" step of a run, if it has one.
func recordedOutcome(ctx context.Context, c *ow.Client, runID string) (flowOutcome, bool, error) {
	steps, err := runSteps(ctx, c, runID)
	if err != nil {
		return flowOutcome{}, false, fmt.Errorf("read the steps of run %s: %w", runID, err)
	}
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		if s.StepName == outcomeStep && s.Status.Normalize() == "completed" {
			var o flowOutcome
			if err := json.Unmarshal(s.Output, &o); err != nil {
				return flowOutcome{}, false, fmt.Errorf("decode the outcome of run %s: %w", runID, err)
			}
			return o, true, nil
		}
	}
	return flowOutcome{}, false, nil
}
