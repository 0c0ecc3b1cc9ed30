package dag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// Status is the status of a DAG run or of one of its steps, as the status
// API reports it. The stored run status stays one of OpenWorkflow's
// (pending, running, completed, failed, canceled), so that TypeScript
// workers and clients sharing the database read DAG runs like any other;
// the DAG statuses are derived from it and from the step attempts:
//
//	run:  pending, running, compensating, completed, failed, compensated,
//	      compensation_failed, canceled
//	step: pending, running, completed, failed, skipped,
//	      compensating, compensated, compensation_failed
type Status string

// Statuses.
const (
	// StatusPending: a run not claimed yet; a step not started yet, or
	// waiting for its next attempt (NextAttemptAt).
	StatusPending Status = "pending"
	// StatusRunning: a run executing or parked; a step whose attempt has
	// executed for longer than the worker's RunningStepAfter (50 ms by
	// default: faster attempts record only their end).
	StatusRunning Status = "running"
	// StatusCompleted: a run whose every step completed; a completed step.
	StatusCompleted Status = "completed"
	// StatusFailed: a run that failed with nothing to compensate (or for a
	// reason other than a step: a deadline, the step limit); a step that
	// failed for good, or whose retries were abandoned when the run began
	// compensating — whether or not its own compensation then ran (see
	// StepStatus.Compensation): a step that never completed is never
	// compensated.
	StatusFailed Status = "failed"
	// StatusCompensating: a stored running run with a step failed for good:
	// its compensations execute; a completed step whose compensation
	// executes or waits for its next attempt.
	StatusCompensating Status = "compensating"
	// StatusCompensated: a run that failed and ran its compensations,
	// every one of which completed (stored failed with error code
	// COMPENSATED); a completed step whose compensation completed.
	StatusCompensated Status = "compensated"
	// StatusCompensationFailed: a run that failed and ran its
	// compensations, at least one of which failed for good, so its steps
	// were not all undone (stored failed with error code
	// COMPENSATION_FAILED, or COMPENSATED with a step whose compensation
	// failed, for runs that ended before that code existed); a completed
	// step whose compensation failed for good (its error is in
	// Compensation).
	StatusCompensationFailed Status = "compensation_failed"
	// StatusSkipped: a step that never started and never will, the run
	// being over or compensating.
	StatusSkipped Status = "skipped"
	// StatusCanceled: a canceled run.
	StatusCanceled Status = "canceled"
)

// RunStatus is a DAG run's status in the shape of pgshift's
// WorkflowRunStatus, derived from the stored run and step attempts (no
// second write per step), plus the definition the run started with and
// the run's stored error.
type RunStatus struct {
	// RunID and Workflow identify the run.
	RunID    string `json:"runId"`
	Workflow string `json:"workflow"`
	// Status is the run's DAG status.
	Status Status `json:"status"`
	// Input is the run's input as given to Start.
	Input json.RawMessage `json:"input"`
	// StartedAt is when the run was started (created); FinishedAt when it
	// ended.
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	// Error is the run's stored error once it failed: for a compensated
	// run, name CompensatedError and code COMPENSATED; for a run one of
	// whose compensations failed, CompensationFailedError and code
	// COMPENSATION_FAILED.
	Error *ow.Error `json:"error,omitempty"`
	// Steps holds every step of the definition, by name.
	Steps map[string]StepStatus `json:"steps"`
	// Compensations lists, once the run compensates, the steps whose
	// compensate handler runs, in the order the chain runs them: reverse
	// order of completion as the run's history records it (the step whose
	// last attempt — completed, or failed — ended last first; to the
	// millisecond, ties in reverse topological order, the later declared
	// first), so a step is undone before the steps it depends on. These
	// are the steps with a compensate handler that completed or had an
	// attempt. Empty for a run that never compensated.
	Compensations []string `json:"compensations,omitempty"`
	// Definition is the definition the run executes (declaration order
	// and dependencies, to draw the graph).
	Definition Definition `json:"definition"`
}

// StepStatus is one step's status within a [RunStatus].
type StepStatus struct {
	// Status is the step's DAG status. Only a completed step reads
	// compensating, compensated or compensation_failed; a failed step
	// stays failed when its own compensation runs (see Compensation).
	Status Status `json:"status"`
	// Attempts counts the step's execution attempts, the one executing
	// included.
	Attempts int `json:"attempts"`
	// Output is the completed attempt's JSON output.
	Output json.RawMessage `json:"output,omitempty"`
	// Error is the message of the last failed attempt.
	Error string `json:"error,omitempty"`
	// StartedAt is when the first attempt started; CompletedAt when the
	// step completed.
	StartedAt   *time.Time `json:"startedAt,omitempty"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	// NextAttemptAt is when a step waiting after a failed attempt may
	// start its next one (its durable backoff sleep is recorded).
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
	// Compensation describes the step's compensation, once it began.
	Compensation *AttemptsStatus `json:"compensation,omitempty"`
}

// AttemptsStatus is the state of a step's compensation: Status is
// running (executing or waiting for its next attempt), completed, failed
// (for good) or canceled (the run was canceled before it ended).
type AttemptsStatus struct {
	// Status is running, completed, failed or canceled.
	Status Status `json:"status"`
	// Attempts counts the compensation's attempts, the one executing
	// included.
	Attempts int `json:"attempts"`
	// Error is the message of the last failed attempt.
	Error string `json:"error,omitempty"`
	// StartedAt is when the first attempt started; CompletedAt when one
	// completed.
	StartedAt   *time.Time `json:"startedAt,omitempty"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	// NextAttemptAt is when the next attempt may start, while the
	// compensation waits for its backoff.
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
}

// ErrNotDAGRun is returned (wrapped) by [Engine.Status] and [StatusOf]
// for a run that is not a DAG run (its input holds no DAG definition).
var ErrNotDAGRun = errors.New("not a DAG workflow run")

// Status returns the status of the DAG run runID: an error wrapping
// ow.ErrRunNotFound for an unknown id, [ErrNotDAGRun] for a run of
// another kind of workflow.
func (e *Engine) Status(ctx context.Context, runID string) (*RunStatus, error) {
	run, err := e.c.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("dag: status of run %s: %w", runID, err)
	}
	var attempts []ow.StepAttempt
	p := ow.ListStepAttemptsParams{WorkflowRunID: runID, Limit: 1000}
	for {
		page, err := e.c.ListSteps(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("dag: status of run %s: %w", runID, err)
		}
		attempts = append(attempts, page.Data...)
		if page.Next == nil {
			break
		}
		p.After = *page.Next
	}
	return StatusOf(run, attempts)
}

// StatusOf derives a DAG run's status from its stored run and its step
// attempts (oldest first, as ListStepAttempts returns them), for callers
// that read them already (the CLI). It returns an error wrapping
// [ErrNotDAGRun] when the run's input holds no DAG definition.
func StatusOf(run *ow.WorkflowRun, attempts []ow.StepAttempt) (*RunStatus, error) {
	var in runInput
	if err := json.Unmarshal(run.Input, &in); err != nil || in.Definition == nil || in.Definition.Name != run.WorkflowName {
		return nil, fmt.Errorf("run %s of workflow %q: %w", run.ID, run.WorkflowName, ErrNotDAGRun)
	}
	d := in.Definition.normalized()
	keys := indexAttempts(attempts)
	st := &RunStatus{
		RunID: run.ID, Workflow: run.WorkflowName, Input: in.Input, StartedAt: run.CreatedAt,
		FinishedAt: run.FinishedAt, Steps: make(map[string]StepStatus, len(d.Steps)), Definition: d,
	}
	if run.Status.Normalize() == ow.RunFailed {
		st.Error = storedError(run.Error)
	}
	failing, undoFailed := false, false
	for _, s := range d.Steps {
		ss, final := keys.step(s)
		failing = failing || final || ss.Compensation != nil
		undoFailed = undoFailed || ss.Compensation != nil && ss.Compensation.Status == StatusFailed
		st.Steps[s.Name] = ss
	}
	st.Status = runStatus(run, st.Error, failing, undoFailed)
	compensated := false
	for _, s := range d.Steps {
		ss := st.Steps[s.Name]
		compensated = compensated || ss.Compensation != nil
		ss.Status = stepStatus(ss, st.Status)
		st.Steps[s.Name] = ss
	}
	if compensated || st.Status == StatusCompensating || st.Status == StatusCompensated || st.Status == StatusCompensationFailed {
		order := topologicalOrder(d.Steps)
		var names []string
		var ends []time.Time
		for i := len(order) - 1; i >= 0; i-- {
			s := d.Steps[order[i]]
			if ss := st.Steps[s.Name]; s.Compensate != "" && ss.Attempts > 0 {
				names = append(names, s.Name)
				ends = append(ends, keys.endedAt(s.Name, ss))
			}
		}
		st.Compensations = undoOrder(names, ends)
	}
	return st, nil
}

// runStatus derives the DAG status of the run. failing reports a step
// failed for good or a compensation begun; undoFailed a compensation
// failed for good.
func runStatus(run *ow.WorkflowRun, stored *ow.Error, failing, undoFailed bool) Status {
	switch run.Status.Normalize() {
	case ow.RunPending:
		return StatusPending
	case ow.RunCompleted:
		return StatusCompleted
	case ow.RunCanceled:
		return StatusCanceled
	case ow.RunFailed:
		switch {
		case stored == nil:
		case stored.Code == CodeCompensationFailed, stored.Code == CodeCompensated && undoFailed:
			return StatusCompensationFailed
		case stored.Code == CodeCompensated:
			return StatusCompensated
		}
		return StatusFailed
	}
	if failing {
		return StatusCompensating
	}
	return StatusRunning
}

// stepStatus settles a step's DAG status once the run's is known.
// ss.Status holds what its attempts say: completed, failed (for good),
// running, or pending (none started, or waiting to retry). Only a
// completed step reads compensating, compensated or compensation_failed;
// a failed one whose compensation ran stays failed.
func stepStatus(ss StepStatus, run Status) Status {
	forward := run == StatusPending || run == StatusRunning // steps may still start
	base := ss.Status
	switch {
	case base == StatusPending && !forward && ss.Attempts > 0:
		base = StatusFailed // its retries were abandoned
	case base == StatusPending && !forward:
		base = StatusSkipped
	case base == StatusRunning && !forward && run != StatusCompensating:
		base = StatusFailed // interrupted by the end of the run
		if run == StatusCanceled {
			base = StatusCanceled
		}
	}
	c := ss.Compensation
	if c == nil {
		return base
	}
	switch {
	case c.Status == StatusCompleted, c.Status == StatusFailed:
	case run == StatusCompensating: // running, or waiting for its next attempt
	case run == StatusCanceled:
		c.Status = StatusCanceled
	default:
		c.Status = StatusFailed // the run ended (deadline, step limit) first
	}
	if base != StatusCompleted {
		// A step that never completed was not done, so it is not undone:
		// it reads failed (its own compensation ran, as in pgshift, and
		// its state is in Compensation).
		return base
	}
	switch c.Status {
	case StatusCompleted:
		return StatusCompensated
	case StatusFailed:
		return StatusCompensationFailed
	case StatusRunning:
		return StatusCompensating
	}
	return base
}

// storedError decodes a stored error JSON; nil for none.
func storedError(raw json.RawMessage) *ow.Error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var e ow.Error
	if err := json.Unmarshal(raw, &e); err != nil {
		return &ow.Error{Name: "Error", Message: string(raw)}
	}
	return &e
}

// attemptIndex holds a run's attempts by durable key, as the interpreter
// reads them: per key the attempt that decides it (completed wins, else
// the latest).
type attemptIndex map[string]*ow.StepAttempt

func indexAttempts(attempts []ow.StepAttempt) attemptIndex {
	idx := attemptIndex{}
	for i := range attempts {
		a := &attempts[i]
		if prev, ok := idx[a.StepName]; ok && prev.Status.Normalize() == ow.StepCompleted {
			continue
		}
		idx[a.StepName] = a
	}
	return idx
}

// step derives a step's status from its attempts, as the interpreter's
// replay does: attempts in key order until one completes, one fails for
// good, or none is recorded. final reports a failure for good.
func (idx attemptIndex) step(s Step) (ss StepStatus, final bool) {
	ss.Status = StatusPending
	for k := 1; ; k++ {
		a, ok := idx[attemptKey(s.Name, k)]
		if !ok {
			ss.NextAttemptAt = idx.waitUntil(waitKey(attemptKey(s.Name, k)))
			break
		}
		ss.Attempts = k
		if k == 1 {
			ss.StartedAt = a.StartedAt
		}
		status := a.Status.Normalize()
		if status == ow.StepRunning {
			ss.Status = StatusRunning
			break
		}
		if status == ow.StepCompleted {
			ss.Status, ss.Output, ss.CompletedAt = StatusCompleted, a.Output, a.FinishedAt
			break
		}
		e := storedError(a.Error)
		if e == nil {
			e = &ow.Error{Message: "unknown error"}
		}
		ss.Error = e.Message
		if k > s.retries() || e.Code == CodeNonRetryable {
			ss.Status, final = StatusFailed, true
			break
		}
	}
	ss.Compensation = idx.compensation(s)
	return ss, final
}

// compensation derives the state of a step's compensation; nil when it
// has not begun.
func (idx attemptIndex) compensation(s Step) *AttemptsStatus {
	var c *AttemptsStatus
	for k := 1; k <= s.retries()+1; k++ {
		a, ok := idx[compensationKey(s.Name, k)]
		if !ok {
			if c != nil {
				c.NextAttemptAt = idx.waitUntil(waitKey(compensationKey(s.Name, k)))
			}
			return c
		}
		if c == nil {
			c = &AttemptsStatus{StartedAt: a.StartedAt}
		}
		c.Attempts = k
		switch a.Status.Normalize() {
		case ow.StepRunning:
			c.Status = StatusRunning
			return c
		case ow.StepCompleted:
			c.Status, c.CompletedAt = StatusCompleted, a.FinishedAt
			return c
		}
		e := storedError(a.Error)
		if e == nil {
			e = &ow.Error{Message: "unknown error"}
		}
		c.Status, c.Error = StatusRunning, e.Message
		if e.Code == CodeNonRetryable {
			break
		}
	}
	c.Status = StatusFailed
	return c
}

// endedAt is when the last attempt of the step ended (its completion, or
// its last failure), as the interpreter's compensation order reads it;
// zero when not recorded.
func (idx attemptIndex) endedAt(step string, ss StepStatus) time.Time {
	if ss.CompletedAt != nil {
		return *ss.CompletedAt
	}
	// The latest attempt that ended: one interrupted by a crash (still
	// recorded running) is not, as the interpreter's replay reads it.
	for k := ss.Attempts; k >= 1; k-- {
		if a, ok := idx[attemptKey(step, k)]; ok && a.FinishedAt != nil {
			return *a.FinishedAt
		}
	}
	return time.Time{}
}

// waitUntil is the wake-up of the running backoff sleep key, if any.
func (idx attemptIndex) waitUntil(key string) *time.Time {
	a, ok := idx[key]
	if !ok || a.Status.Normalize() != ow.StepRunning {
		return nil
	}
	var c struct {
		ResumeAt string `json:"resumeAt"`
	}
	if json.Unmarshal(a.Context, &c) != nil {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, c.ResumeAt)
	if err != nil {
		return nil
	}
	t = t.UTC()
	return &t
}
