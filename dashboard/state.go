package dashboard

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
)

// runState is what a run is doing, as the dashboard says it: a class for
// the badge (pending, scheduled, running, stalled, waiting, retrying,
// completed, failed, canceled), a short label, a detail for the list
// ("sleep until 14:03") and a sentence that explains it on the run's
// page. A parked run is never "running": it waits, and the state says for
// what and until when.
type runState struct {
	Class, Label string
	// Detail is a few words for the list; Until, when set, is the time the
	// detail is about (shown relative, live).
	Detail string
	Until  *time.Time
	// Explain is the sentence for the run's page.
	Explain string
	// Wait is the running wait attempt of a parked run, if any.
	Wait *api.Step
}

// waitContext is the context of a wait attempt: {"kind":"sleep",
// "resumeAt"}, {"kind":"workflow","timeoutAt"}, {"kind":"signal-wait",
// "signal","timeoutAt"}, {"kind":"hook-wait","hookId","afterSeq",
// "timeoutAt"}.
type waitContext struct {
	Kind      string `json:"kind"`
	ResumeAt  string `json:"resumeAt"`
	TimeoutAt string `json:"timeoutAt"`
	Signal    string `json:"signal"`
	HookID    string `json:"hookId"`
}

func readWait(s *api.Step) (waitContext, *time.Time) {
	var c waitContext
	_ = json.Unmarshal(s.Context, &c)
	at := c.ResumeAt
	if at == "" {
		at = c.TimeoutAt
	}
	if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
		return c, &t
	}
	return c, nil
}

// describe says what run is doing at now. steps are its attempts, oldest
// first; nil when they were not read (the list reads them only for
// parked runs), in which case a parked run is said to wait without
// saying for what.
func describe(run *api.Run, steps []api.Step, now time.Time) runState {
	if run.Paused {
		return describePaused(run)
	}
	switch run.Status {
	case "pending":
		if run.AvailableAt != nil && run.AvailableAt.After(now) {
			return runState{Class: "scheduled", Label: "scheduled", Detail: "starts", Until: run.AvailableAt,
				Explain: fmt.Sprintf("Scheduled: no worker may start it before %s.", absTime(*run.AvailableAt))}
		}
		if run.ForkedFrom != nil && run.Attempts <= 1 { // a fork's copied history counts as one claim
			return runState{Class: "pending", Label: "pending", Detail: "awaiting a worker",
				Explain: fmt.Sprintf("Pending: a fork of run %s, never claimed yet. It waits for a worker that has workflow %q registered, which replays the reused steps from their results and runs step %q and what follows.", run.ForkedFrom.RunID, run.WorkflowName, run.ForkedFrom.FromStep)}
		}
		if run.Attempts > 0 {
			return runState{Class: "pending", Label: "pending", Detail: "awaiting a worker",
				Explain: fmt.Sprintf("Pending again after %d claim(s): it was handed back or retried, and waits for a worker that has workflow %q registered.", claims(run), run.WorkflowName)}
		}
		return runState{Class: "pending", Label: "pending", Detail: "awaiting a worker",
			Explain: fmt.Sprintf("Pending: it waits for a worker that has workflow %q registered to claim it. If it stays pending, check that such a worker runs on this database.", run.WorkflowName)}
	case "running":
		if !run.Parked {
			worker := ""
			if run.WorkerID != nil {
				worker = *run.WorkerID
			}
			if run.AvailableAt != nil && run.AvailableAt.Before(now) {
				return runState{Class: "stalled", Label: "stalled", Detail: "lease expired", Until: run.AvailableAt,
					Explain: fmt.Sprintf("Stalled: worker %s stopped renewing its lease, which expired %s ago (the worker crashed, hangs or lost the database). Another worker claims the run at its next poll and runs the unfinished step again.", worker, fmtDuration(now.Sub(*run.AvailableAt)))}
			}
			st := runState{Class: "running", Label: "running", Detail: "on " + shortWorker(worker),
				Explain: fmt.Sprintf("Running on worker %s, whose lease is renewed by heartbeats", worker)}
			if run.AvailableAt != nil {
				st.Explain += fmt.Sprintf(" (it holds until %s)", absTime(*run.AvailableAt))
			}
			st.Explain += "."
			return st
		}
		return describeParked(run, steps, now)
	case "completed":
		return runState{Class: "completed", Label: "completed",
			Explain: fmt.Sprintf("Completed after %d claim(s) by workers.", claims(run))}
	case "failed":
		st := runState{Class: "failed", Label: "failed",
			Explain: fmt.Sprintf("Failed after %d claim(s) by workers. Retry it from the failed step: completed steps keep their results.", claims(run))}
		if e := viewError(run.Error); e != nil && e.Message != "" {
			st.Detail = e.Message
			if e.Code == "COMPENSATED" {
				st.Label, st.Explain = "compensated", "Failed, and its completed steps were compensated (undone) in reverse order."
			} else if e.Message == "Workflow run deadline exceeded" {
				st.Explain = "Failed: its deadline passed before it finished. Retry it from the failed step, with a later deadline."
			}
		}
		return st
	case "canceled":
		return runState{Class: "canceled", Label: "canceled", Explain: "Canceled: nothing more runs; its hooks are disposed. Child runs it started keep running."}
	}
	return runState{Class: "pending", Label: run.Status, Explain: "Status " + run.Status + " is not one this dashboard knows."}
}

// describeParked says what a parked run waits for: its running wait
// attempt, or, without one, the retry of a failed step.
func describeParked(run *api.Run, steps []api.Step, now time.Time) runState {
	var wait *api.Step
	for i := len(steps) - 1; i >= 0; i-- {
		s := &steps[i]
		if s.Status == "running" && s.Kind != "function" {
			wait = s
			break
		}
	}
	if wait == nil {
		if len(steps) > 0 && steps[len(steps)-1].Status == "failed" {
			last := steps[len(steps)-1]
			st := runState{Class: "retrying", Label: "retrying", Detail: "retry " + last.StepName, Until: run.AvailableAt,
				Explain: fmt.Sprintf("Retrying: step %q failed and its retry policy allows another attempt", last.StepName)}
			if run.AvailableAt != nil {
				if run.AvailableAt.After(now) {
					st.Explain += fmt.Sprintf(", due %s", absTime(*run.AvailableAt))
				} else {
					st.Explain += ", due now; a worker claims it at its next poll"
				}
			}
			st.Explain += "."
			return st
		}
		st := runState{Class: "waiting", Label: "waiting", Detail: "due", Until: run.AvailableAt,
			Explain: "Waiting: parked, holding no worker, until it is due."}
		if steps != nil && run.AvailableAt != nil && !run.AvailableAt.After(now) {
			st.Explain = "Handed back by its worker and due now: a worker claims it at its next poll."
		}
		return st
	}
	c, until := readWait(wait)
	st := runState{Class: "waiting", Label: "waiting", Wait: wait, Until: until}
	switch wait.Kind {
	case "sleep":
		st.Detail = "sleep " + wait.StepName + " until"
		st.Explain = fmt.Sprintf("Waiting: durable sleep %q", wait.StepName)
		if until != nil {
			st.Explain += " until " + absTime(*until)
		}
	case "workflow":
		st.Detail = "child run"
		st.Explain = fmt.Sprintf("Waiting for child run %s (step %q) to finish", deref(wait.ChildRunID), wait.StepName)
		if until != nil {
			st.Detail += " until"
			st.Explain += ", at most until " + absTime(*until)
		}
	case "signal-wait":
		st.Detail = "signal " + c.Signal
		st.Explain = fmt.Sprintf("Waiting for signal %q (step %q)", c.Signal, wait.StepName)
		if until != nil {
			st.Detail += " until"
			st.Explain += ", at most until " + absTime(*until)
		}
		st.Explain += ". Send it below, or with POST /v1/signals"
	case "hook-wait":
		st.Detail = "hook " + hookName(wait.StepName)
		st.Explain = fmt.Sprintf("Waiting for a payload on hook %q (step %q)", hookName(wait.StepName), wait.StepName)
		if until != nil {
			st.Detail += " until"
			st.Explain += ", at most until " + absTime(*until)
		}
		st.Explain += ". Resume it below, or with POST /v1/hooks/{token}"
	default:
		st.Detail = wait.Kind + " " + wait.StepName
		st.Explain = fmt.Sprintf("Waiting in step %q (%s)", wait.StepName, wait.Kind)
	}
	st.Explain += "; it holds no worker meanwhile."
	return st
}

// claims is how many times workers claimed run: its attempts, less the
// one a fork starts with (its copied history must look claimed once).
func claims(run *api.Run) int {
	if run.ForkedFrom != nil && run.Attempts > 0 {
		return run.Attempts - 1
	}
	return run.Attempts
}

// hookName is the hook's step name of a hook-wait key ("approve#wait:1"
// style keys keep the hook's name first).
func hookName(stepName string) string {
	for i := 0; i < len(stepName); i++ {
		if stepName[i] == '#' || stepName[i] == ':' || stepName[i] == '/' {
			return stepName[:i]
		}
	}
	return stepName
}

// explainFinished adds how long a finished run took, from its first
// claim, to the first sentence of its explanation.
func explainFinished(run *api.Run, began *time.Time, explain string) string {
	if began == nil || run.FinishedAt == nil {
		return explain
	}
	word, rest, ok := strings.Cut(explain, " after ")
	if !ok {
		return explain
	}
	return word + " in " + fmtDuration(run.FinishedAt.Sub(*began)) + ", after " + rest
}

// Began is when a listed run began, for its duration: its started_at,
// or, for a run that was claimed but whose started_at a reschedule or a
// failure cleared, its creation (an upper bound). Nil for a run never
// claimed.
func began(run *api.Run) *time.Time {
	if run.StartedAt != nil {
		return run.StartedAt
	}
	if claims(run) > 0 {
		return &run.CreatedAt
	}
	return nil
}

// shortWorker shortens a worker slot id "host-1234-abcd/3" for the list.
func shortWorker(id string) string {
	if len(id) > 24 {
		return "…" + id[len(id)-22:]
	}
	return id
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// describePaused says that run is paused (the API's derived state: its
// status is kept, pending or running), since when and why.
func describePaused(run *api.Run) runState {
	st := runState{Class: "paused", Label: "paused", Detail: "since", Until: run.PausedAt,
		Explain: "Paused"}
	if run.PausedAt != nil {
		st.Explain += " since " + absTime(*run.PausedAt)
	}
	if run.PauseReason != nil && *run.PauseReason != "" {
		st.Explain += fmt.Sprintf(" (%q)", *run.PauseReason)
	}
	st.Explain += ": no worker starts a step of it until it is resumed; a step that was executing finishes and is recorded. Signals and hook payloads sent meanwhile are kept. Its deadline keeps running."
	if run.WorkerID != nil {
		st.Explain += fmt.Sprintf(" Worker %s still holds it: it hands the run back at its next heartbeat.", *run.WorkerID)
	}
	return st
}
