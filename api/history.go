package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Event is one event of a run's history. The history is derived from the
// stored run and step attempts — no second log is written per step —, so
// it is exactly as true as they are.
//
// Types: run_created, run_started, step_started, step_completed,
// step_failed (Kind says which kind of step: function, sleep, workflow,
// signal-wait, hook-wait…), run_retried (a manual retry), run_forked (a
// fork's mark, after the steps it reuses: see POST /v1/runs/{id}/fork),
// run_completed, run_failed, run_canceled. Data is the step's output or
// error, or the run's input, output or error; inputs and outputs are left
// out unless resolveData=all, errors always shown.
type Event struct {
	Type     string          `json:"type"`
	At       time.Time       `json:"at"`
	StepID   string          `json:"stepId,omitempty"`
	StepName string          `json:"stepName,omitempty"`
	Kind     string          `json:"kind,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
}

// History derives the events of run from attempts (one page of its step
// attempts, oldest first), in time order. first and last say whether the
// page is the first or the last: the run's creation and start lead the
// first page, its end closes the last.
func History(run *backend.WorkflowRun, attempts []backend.StepAttempt, first, last, resolveNone bool) []Event {
	data := func(raw json.RawMessage) json.RawMessage {
		if resolveNone {
			return nil
		}
		return raw
	}
	var evs []Event
	if first {
		evs = append(evs, Event{Type: "run_created", At: run.CreatedAt, Data: data(run.Input)})
	}
	for i := range attempts {
		a := &attempts[i]
		if a.Kind == backend.StepRetry {
			typ := "run_retried"
			if strings.HasPrefix(a.StepName, "__fork:") {
				typ = "run_forked" // a fork's mark (backend.RunForker), after the steps it reuses
			}
			evs = append(evs, Event{Type: typ, At: a.CreatedAt, StepID: a.ID})
			continue
		}
		started := a.CreatedAt
		if a.StartedAt != nil {
			started = *a.StartedAt
		}
		base := Event{StepID: a.ID, StepName: a.StepName, Kind: string(a.Kind)}
		e := base
		e.Type, e.At = "step_started", started
		evs = append(evs, e)
		if a.FinishedAt == nil {
			continue
		}
		e = base
		e.At = *a.FinishedAt
		switch a.Status.Normalize() {
		case backend.StepCompleted:
			e.Type, e.Data = "step_completed", data(a.Output)
		case backend.StepFailed:
			e.Type, e.Data = "step_failed", a.Error
		default:
			continue
		}
		evs = append(evs, e)
	}
	if last && run.FinishedAt != nil {
		switch run.Status.Normalize() {
		case backend.RunCompleted:
			evs = append(evs, Event{Type: "run_completed", At: *run.FinishedAt, Data: data(run.Output)})
		case backend.RunFailed:
			evs = append(evs, Event{Type: "run_failed", At: *run.FinishedAt, Data: run.Error})
		case backend.RunCanceled:
			evs = append(evs, Event{Type: "run_canceled", At: *run.FinishedAt})
		}
	}
	// Stable: events at the same millisecond keep the order of the rows.
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].At.Before(evs[j].At) })
	if first && run.StartedAt != nil {
		evs = insertRunStarted(evs, *run.StartedAt)
	}
	return evs
}

// insertRunStarted puts the run_started event at started into evs (in time
// order). A manual retry or a fork starts the run again, so its start
// follows the last retry or fork mark at or before it even in the same
// millisecond, where time alone cannot order the two.
func insertRunStarted(evs []Event, started time.Time) []Event {
	p := 0
	for i, e := range evs {
		if (e.Type == "run_retried" || e.Type == "run_forked") && !e.At.After(started) {
			p = i + 1
		}
	}
	for p < len(evs) && (evs[p].At.Before(started) || evs[p].Type == "run_created") {
		p++
	}
	return slices.Insert(evs, p, Event{Type: "run_started", At: started})
}

func (h *Handler) getHistory(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q, err := parseQuery(r, "limit", "cursor", "resolveData")
	if err != nil {
		return err
	}
	limit, err := q.limit(backend.DefaultPageSize)
	if err != nil {
		return err
	}
	all, err := q.resolveAll()
	if err != nil {
		return err
	}
	run, err := h.c.GetRun(r.Context(), id)
	if err != nil {
		return asAPIError(err, "id")
	}
	cursor := q.str("cursor")
	page, err := h.c.ListSteps(r.Context(), backend.ListStepAttemptsParams{
		WorkflowRunID: id, Limit: limit, After: cursor, OmitPayloads: !all, MaxBytes: h.opts.MaxListBytes})
	if err != nil {
		return asAPIError(err, "cursor")
	}
	evs := History(run, page.Data, cursor == "", page.Next == nil, !all)
	writeJSON(w, http.StatusOK, List[Event]{Data: evs, Cursor: page.Next, HasMore: page.Next != nil})
	return nil
}
