package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/dag"
)

// runDetail is the JSON document of 'ow runs get'.
type runDetail struct {
	Run   *backend.WorkflowRun  `json:"run"`
	Steps []backend.StepAttempt `json:"steps"`
	// DAG is the DAG status of a DAG workflow's run (package dag).
	DAG *dag.RunStatus `json:"dag,omitempty"`
	// Unserved says that no live worker serves the active run's workflow
	// (ow.Client.UnservedReason); omitted when one does.
	Unserved string `json:"unserved,omitempty"`
	// SearchAttributes are the run's search attributes, if any.
	SearchAttributes backend.SearchAttributes `json:"searchAttributes,omitempty"`
}

// printRunDetail prints a run as "key: value" rows, then its step attempts
// as a table, oldest first.
func (a *app) printRunDetail(d runDetail) error {
	r, now := d.Run, time.Now()
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("id", r.ID)
	row("workflow", r.WorkflowName)
	row("version", orDash(r.Version))
	row("status", statusText(r))
	if r.Paused() {
		row("paused", formatTime(r.PausedAt)+pauseReasonText(r)+" (resume it with 'ow runs resume "+r.ID+"')")
	}
	row("attempts", fmt.Sprint(r.Attempts))
	row("idempotency key", orDash(r.IdempotencyKey))
	row("worker", orDash(r.WorkerID))
	if d.Unserved != "" {
		row("served by", d.Unserved)
	}
	row("created", formatTime(&r.CreatedAt))
	started, startedText := runStart(d)
	row("started", startedText)
	row("finished", formatTime(r.FinishedAt))
	row("duration", runDuration(started, r.FinishedAt, now))
	if r.Priority != 0 {
		row("priority", fmt.Sprint(r.Priority))
	}
	if r.ConcurrencyKey != nil {
		row("concurrency key", *r.ConcurrencyKey)
	}
	switch {
	case r.QueuedAt != nil && !r.Status.Terminal():
		row("waiting for admission", "admissible from "+formatTime(r.QueuedAt)+" (its workflow has limits: ow limits list)")
	case r.AdmittedAt != nil:
		row("admitted", formatTime(r.AdmittedAt))
	}
	if !r.Status.Terminal() && r.QueuedAt == nil && !r.Paused() {
		row("available at", formatTime(r.AvailableAt))
	}
	if r.ParentStepAttemptID != nil {
		row("parent step", *r.ParentStepAttemptID)
	}
	for _, name := range d.SearchAttributes.Names() {
		row("attrs."+name, formatAttr(d.SearchAttributes[name]))
	}
	if f, ok := backend.ForkOfRun(r.Context); ok {
		row("forked from", fmt.Sprintf("%s (runs again from step %q)", f.RunID, f.FromStep))
	}
	if forks := backend.ForksOfRun(r.Context); len(forks) > 0 {
		row("forks", strings.Join(forks, ", "))
	}
	if c, ok := backend.ContinuationOf(r.Context); ok {
		row("continued from", fmt.Sprintf("%s (continue-as-new; this run is link %d of its chain after the first)", c.RunID, c.Generation))
	}
	if next, ok := backend.ContinuedTo(r.Context); ok {
		row("continued as", next+" (continue-as-new: ow runs get "+next+")")
	}
	if sr, ok := backend.ScheduledRunOf(r.Context); ok {
		how := "tick"
		if sr.Triggered {
			how = "triggered"
		}
		row("schedule", fmt.Sprintf("%s (%s %s)", sr.Name, how, formatTime(&sr.ScheduledAt)))
	}
	row("input", clip(r.Input, 200))
	row("output", clip(r.Output, 200))
	if k, v := errorRow(d); k != "" {
		row(k, v)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\n%s\n", count(len(d.Steps), "step attempt"))
	if len(d.Steps) == 0 {
		return nil
	}
	tw = tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tKIND\tSTATUS\tSTARTED\tDURATION\tCHILD RUN / RESULT")
	states := attemptStates(r, d.Steps, now)
	for i, s := range d.Steps {
		detail := clip(s.Output, 60)
		if s.ChildWorkflowRunID != nil {
			detail = *s.ChildWorkflowRunID
		}
		if len(s.Error) > 0 {
			detail = "error: " + clip(s.Error, 60)
		}
		status, finished := states[i], stepEnd(r, s)
		name := s.StepName
		if s.Kind == backend.StepRetry { // a mark, named by its id: say what it marks
			name, detail = "(retried by hand)", "the steps before kept their results"
			if strings.HasPrefix(s.StepName, "__fork:") {
				name, detail = "(forked here)", "the steps before are the forked run's, reused"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, s.Kind, status,
			formatTime(s.StartedAt), runDuration(s.StartedAt, finished, now), detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if d.DAG != nil {
		return a.printDAGStatus(d.DAG)
	}
	return nil
}

// runStart returns when the run started and how to show it. The engine
// clears started_at when an attempt of the run fails, whether it is
// retried (the next claim sets it again) or the run fails for good (as
// OpenWorkflow does, whose schema we share), so a failed run has none and
// a retried one shows its latest attempt's. Then the start shown is the
// first step attempt's, labelled as such: the run started at most a few
// milliseconds before it (its claim). With no step attempt either, the
// start of a failed run is unknown, and said so.
func runStart(d runDetail) (*time.Time, string) {
	const why = "the engine clears a run's start time when an attempt fails"
	r := d.Run
	var first *time.Time
	for _, s := range d.Steps {
		if s.StartedAt == nil || s.Kind == backend.StepRetry || s.StartedAt.Before(r.CreatedAt) {
			continue // a mark, or an attempt a fork copied: it ran in the forked run, before this one
		}
		if first == nil || s.StartedAt.Before(*first) {
			first = s.StartedAt
		}
	}
	switch {
	case first != nil && (r.StartedAt == nil || first.Before(*r.StartedAt)):
		return first, formatTime(first) + " (its first step attempt's start: " + why + ")"
	case r.StartedAt == nil && r.Status.Normalize() == backend.RunFailed:
		return nil, "- (not kept: " + why + ")"
	}
	return r.StartedAt, formatTime(r.StartedAt)
}

// attemptStates returns the state to show for each attempt of run r, as
// the dashboard shows it (api.AttemptState): an attempt still running in
// a finished run (a wait left open when the run was canceled, or failed
// by its deadline) will never finish, and is "canceled" (when the run
// was) or "abandoned" instead of running; a wait in progress is
// "waiting"; an OpenFlow module that raised is "failed", though its step
// completed recording the failure.
func attemptStates(r *backend.WorkflowRun, steps []backend.StepAttempt, now time.Time) []string {
	run := api.RunOf(r, true)
	views := make([]api.Step, len(steps))
	for i := range steps {
		views[i] = api.StepOf(&steps[i], false)
	}
	api.MarkAbandoned(r, views, now)
	states := make([]string, len(views))
	for i := range views {
		states[i] = api.AttemptState(&run, &views[i])
	}
	return states
}

// stepEnd returns the end of step attempt s's duration: an attempt still
// running in a finished run ends when the run did, instead of running
// with a duration that grows forever.
func stepEnd(r *backend.WorkflowRun, s backend.StepAttempt) *time.Time {
	if s.Status.Normalize() != backend.StepRunning || !r.Status.Terminal() {
		return s.FinishedAt
	}
	return r.FinishedAt
}

// errorRow returns the label and value of the run's error row; "" when
// there is no error. Only a failed run's error is its outcome ("error").
// The engine also keeps the error of the attempt that rescheduled a run
// (a step being retried, as in OpenWorkflow) while the run goes on, and
// after a cancel: that one is shown as "last step error", naming the step
// whose latest failed attempt holds the same error, or else as "last
// error", with what became of it.
func errorRow(d runDetail) (string, string) {
	r := d.Run
	switch {
	case len(r.Error) == 0:
		return "", ""
	case r.Status.Normalize() == backend.RunFailed:
		return "error", clip(r.Error, 400)
	}
	then := "the run is being retried; this is not its outcome"
	if r.Status.Terminal() {
		then = "the run was then " + string(r.Status.Normalize())
	}
	for i := len(d.Steps) - 1; i >= 0; i-- {
		s := d.Steps[i]
		if s.Status.Normalize() == backend.StepFailed && sameJSON(s.Error, r.Error) {
			if !r.Status.Terminal() {
				then = "the step is being retried; this is not the run's outcome"
			}
			return "last step error", fmt.Sprintf("step %q failed at %s: %s (%s)", s.StepName, formatTime(s.FinishedAt), clip(r.Error, 400), then)
		}
	}
	return "last error", fmt.Sprintf("%s (%s)", clip(r.Error, 400), then)
}

// sameJSON reports whether a and b are the same JSON text once compacted
// (PostgreSQL's jsonb adds spaces).
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// clip renders raw JSON on one line, cut to n bytes; "-" for none.
func clip(raw json.RawMessage, n int) string {
	if len(raw) == 0 {
		return "-"
	}
	s := string(raw)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// formatAttr shows a search attribute's value: a time in RFC 3339, a list
// as JSON, anything else as Go prints it.
func formatAttr(v any) string {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case []string:
		raw, _ := json.Marshal(x)
		return string(raw)
	case string:
		return strconv.Quote(x)
	}
	return fmt.Sprint(v)
}
