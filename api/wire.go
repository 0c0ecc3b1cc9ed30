package api

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/openworkflow-go/openworkflow/backend"
)

// List is the answer of every list route: one page of records, the
// cursor of the next page (null on the last), and whether there is one.
type List[T any] struct {
	Data    []T     `json:"data"`
	Cursor  *string `json:"cursor"`
	HasMore bool    `json:"hasMore"`
}

func listOf[T, R any](data []R, next *string, conv func(*R) T) List[T] {
	out := List[T]{Data: make([]T, 0, len(data)), Cursor: next, HasMore: next != nil}
	for i := range data {
		out.Data = append(out.Data, conv(&data[i]))
	}
	return out
}

// Run is a workflow run as the API shows it. Status is one of pending,
// running, completed, failed, canceled (legacy values read as these); a
// running run with Parked true is waiting (a sleep, a child, a signal, a
// hook) until AvailableAt at the latest, and holds no worker.
type Run struct {
	ID             string          `json:"id"`
	WorkflowName   string          `json:"workflowName"`
	Version        *string         `json:"version"`
	Status         string          `json:"status"`
	Parked         bool            `json:"parked"`
	IdempotencyKey *string         `json:"idempotencyKey"`
	Input          json.RawMessage `json:"input,omitempty"`
	Output         json.RawMessage `json:"output,omitempty"`
	// Error is the run's error: its outcome, so only a failed run has
	// one.
	Error json.RawMessage `json:"error,omitempty"`
	// LastError is, for a run that is not failed, the error of the last
	// failure that rescheduled it (a step or the workflow being retried):
	// the engine keeps it, as OpenWorkflow does, while the run goes on and
	// after a cancel. It is not the run's outcome.
	LastError json.RawMessage `json:"lastError,omitempty"`
	// Attempts counts the run's claims by workers.
	Attempts int `json:"attempts"`
	// ParentStepID is the step of the parent run that started this one
	// (GET /v1/runs/{id}/steps of the parent shows it), or null.
	ParentStepID *string    `json:"parentStepId"`
	WorkerID     *string    `json:"workerId"`
	AvailableAt  *time.Time `json:"availableAt"`
	DeadlineAt   *time.Time `json:"deadlineAt"`
	StartedAt    *time.Time `json:"startedAt"`
	FinishedAt   *time.Time `json:"finishedAt"`
	CreatedAt    time.Time  `json:"createdAt"`
	UpdatedAt    time.Time  `json:"updatedAt"`
	// Schedule is the schedule that started the run and the tick it is
	// for; absent for a run no schedule started.
	Schedule *RunSchedule `json:"schedule,omitempty"`
	// Priority orders the claims of pending runs, higher first.
	Priority int `json:"priority"`
	// ConcurrencyKey is the key the per-key limits of the run's workflow
	// count it under, or null.
	ConcurrencyKey *string `json:"concurrencyKey"`
	// SingletonSkipped is true on the answer to a singleton start in mode
	// skip that started nothing: the run is the key's active run.
	SingletonSkipped bool `json:"singletonSkipped,omitempty"`
	// QueuedAt is set while the run waits for admission (its workflow has
	// limits; AvailableAt is then null); AdmittedAt is when a worker
	// admitted it.
	QueuedAt   *time.Time `json:"queuedAt"`
	AdmittedAt *time.Time `json:"admittedAt"`
	// Paused is true while the run is paused (POST /v1/runs/{id}/pause):
	// it keeps its status, and no worker starts a step of it until it is
	// resumed. PausedAt and PauseReason say when and why (null when it
	// is not paused, or no reason was given).
	Paused      bool       `json:"paused"`
	PausedAt    *time.Time `json:"pausedAt"`
	PauseReason *string    `json:"pauseReason"`
	// ForkedFrom is, for a fork (POST /v1/runs/{id}/fork), the run it was
	// forked from and the step it ran again from; absent otherwise.
	ForkedFrom *RunFork `json:"forkedFrom,omitempty"`
	// Forks are the forks of the run, oldest first (the first
	// backend.MaxListedForks); absent for a run never forked.
	Forks []string `json:"forks,omitempty"`
	// ContinuedFrom is, for a run started by another run's continue-as-new
	// (ow.ContinueAsNew), that run and this run's place in the chain
	// (generation 1 for the first successor); absent otherwise.
	ContinuedFrom *RunContinuation `json:"continuedFrom,omitempty"`
	// ContinuedTo is, for a run that continued as new, its successor's
	// id; absent otherwise. Such a run is completed, with the output
	// {"continuedAsNew": {"runId": ContinuedTo}}.
	ContinuedTo string `json:"continuedTo,omitempty"`
	// SearchAttributes are the run's search attributes by name (a
	// keyword: string, a keyword list: array of strings, int and float:
	// number, bool, time: RFC 3339 string); absent when it has none.
	SearchAttributes backend.SearchAttributes `json:"searchAttributes,omitempty"`
}

// RunContinuation is what a successor records of the run it continues.
type RunContinuation struct {
	// RunID is the run this one continues.
	RunID string `json:"runId"`
	// Generation is this run's place in its chain (1 for the first
	// successor).
	Generation int `json:"generation"`
}

// RunFork is what a fork records of its origin.
type RunFork struct {
	RunID    string `json:"runId"`
	FromStep string `json:"fromStep"`
}

// RunSchedule is what a run started by a schedule records of it: the
// schedule's name, the tick (ScheduledAt: the tick's time, not the
// start's) and whether it was triggered by hand rather than by a tick.
type RunSchedule struct {
	Name        string    `json:"name"`
	ScheduledAt time.Time `json:"scheduledAt"`
	Triggered   bool      `json:"triggered"`
}

// RunOf converts a stored run to its API shape; with resolveNone its
// input and output are left out ("resolveData=none").
func RunOf(r *backend.WorkflowRun, resolveNone bool) Run {
	st := r.Status.Normalize()
	out := Run{
		ID: r.ID, WorkflowName: r.WorkflowName, Version: r.Version, Status: string(st),
		Parked:         st == backend.RunRunning && r.WorkerID == nil,
		IdempotencyKey: r.IdempotencyKey, Attempts: r.Attempts,
		ParentStepID: r.ParentStepAttemptID, WorkerID: r.WorkerID,
		AvailableAt: r.AvailableAt, DeadlineAt: r.DeadlineAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Priority: r.Priority, ConcurrencyKey: r.ConcurrencyKey, QueuedAt: r.QueuedAt, AdmittedAt: r.AdmittedAt,
	}
	if r.Paused() {
		out.Paused, out.PausedAt, out.PauseReason = true, r.PausedAt, r.PauseReason
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		if st == backend.RunFailed {
			out.Error = r.Error
		} else {
			out.LastError = r.Error
		}
	}
	if !resolveNone {
		out.Input, out.Output = r.Input, r.Output
	}
	if sr, ok := backend.ScheduledRunOf(r.Context); ok {
		out.Schedule = &RunSchedule{Name: sr.Name, ScheduledAt: sr.ScheduledAt, Triggered: sr.Triggered}
	}
	if f, ok := backend.ForkOfRun(r.Context); ok {
		out.ForkedFrom = &RunFork{RunID: f.RunID, FromStep: f.FromStep}
	}
	out.Forks = backend.ForksOfRun(r.Context)
	if c, ok := backend.ContinuationOf(r.Context); ok {
		out.ContinuedFrom = &RunContinuation{RunID: c.RunID, Generation: c.Generation}
	}
	out.ContinuedTo, _ = backend.ContinuedTo(r.Context)
	return out
}

// Step is one step attempt. Kind is function, sleep, workflow (a child
// run, ChildRunID), signal-send, signal-wait, hook, hook-wait or retry (the
// mark of a manual retry); Status running, completed or failed. Abandoned
// marks a running attempt nothing will finish: its worker lost the run
// (crashed, or cut off) and the step ran again, or the run moved on, or
// it is a wait of a run that ended (canceled, failed by its deadline).
type Step struct {
	ID         string          `json:"id"`
	RunID      string          `json:"runId"`
	StepName   string          `json:"stepName"`
	Kind       string          `json:"kind"`
	Status     string          `json:"status"`
	Abandoned  bool            `json:"abandoned"`
	Context    json.RawMessage `json:"context,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	Error      json.RawMessage `json:"error,omitempty"`
	ChildRunID *string         `json:"childRunId"`
	StartedAt  *time.Time      `json:"startedAt"`
	FinishedAt *time.Time      `json:"finishedAt"`
	CreatedAt  time.Time       `json:"createdAt"`
}

// StepOf converts a stored attempt to its API shape; with resolveNone its
// output is left out.
func StepOf(a *backend.StepAttempt, resolveNone bool) Step {
	out := Step{
		ID: a.ID, RunID: a.WorkflowRunID, StepName: a.StepName, Kind: string(a.Kind), Status: string(a.Status.Normalize()),
		Context: a.Context, Error: a.Error, ChildRunID: a.ChildWorkflowRunID,
		StartedAt: a.StartedAt, FinishedAt: a.FinishedAt, CreatedAt: a.CreatedAt,
	}
	if !resolveNone {
		out.Output = a.Output
	}
	return out
}

// MarkAbandoned sets Abandoned on the running attempts of steps (one
// run's, oldest first) that nothing will finish: function attempts no
// worker executes any more (a later attempt of the same step exists, the
// run is terminal or parked, or its lease expired at now), and waits of a
// terminal run. Waits (sleep, child, signal, hook) stay running while the
// run is parked: that is what parking is.
func MarkAbandoned(run *backend.WorkflowRun, steps []Step, now time.Time) {
	last := map[string]int{}
	for i, s := range steps {
		last[s.StepName] = i
	}
	lost := unleased(run, now)
	ended := run.Status.Normalize().Terminal()
	for i := range steps {
		s := &steps[i]
		if s.Status != string(backend.StepRunning) || s.Kind == string(backend.StepRetry) {
			continue
		}
		if s.Kind != string(backend.StepFunction) {
			s.Abandoned = ended
			continue
		}
		s.Abandoned = last[s.StepName] != i || lost
	}
}

// unleased reports whether no worker executes run at now: it is
// terminal, parked or pending (no worker), or its lease expired.
func unleased(run *backend.WorkflowRun, now time.Time) bool {
	return run.Status.Normalize().Terminal() || run.WorkerID == nil || (run.AvailableAt != nil && run.AvailableAt.Before(now))
}

// Hook is a hook of a run (see openworkflow.CreateHook); Live is false
// once its run ended.
type Hook struct {
	ID        string          `json:"id"`
	Token     string          `json:"token"`
	RunID     string          `json:"runId"`
	StepName  string          `json:"stepName"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Live      bool            `json:"live"`
	Payloads  int64           `json:"payloads"`
	CreatedAt time.Time       `json:"createdAt"`
}

// HookOf converts a stored hook; with resolveNone its metadata is left
// out.
func HookOf(h *backend.Hook, resolveNone bool) Hook {
	out := Hook{ID: h.ID, Token: h.Token, RunID: h.WorkflowRunID, StepName: h.StepName, Live: h.Live, Payloads: h.Payloads, CreatedAt: h.CreatedAt}
	if !resolveNone {
		out.Metadata = h.Metadata
	}
	return out
}

// Chunk is one chunk of a stream: its bytes in base64 (Data), and as text
// too when they are valid UTF-8 (Text); Closes marks the chunk that closed
// the stream.
type Chunk struct {
	Seq       int64     `json:"seq"`
	Data      []byte    `json:"data"`
	Text      *string   `json:"text,omitempty"`
	Closes    bool      `json:"closes,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// ChunkOf converts a stored chunk.
func ChunkOf(c *backend.StreamChunk) Chunk {
	out := Chunk{Seq: c.Seq, Data: c.Data, Closes: c.Closes, CreatedAt: c.CreatedAt}
	if utf8.Valid(c.Data) {
		s := string(c.Data)
		out.Text = &s
	}
	if out.Data == nil {
		out.Data = []byte{}
	}
	return out
}
