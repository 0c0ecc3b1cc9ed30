package backend

import (
	"context"
	"encoding/json"
	"time"
)

// WriteKind names one fenced worker write of a batch (see [Write]).
type WriteKind int

// Write kinds. Every kind is fenced like the single-write methods: it
// applies only while the run is running and owned by Write.WorkerID.
const (
	// WriteInsertStep inserts Write.Step, with the id, name, kind, status,
	// context, output and error the caller chose. A fast step is one
	// insert of an attempt already completed (or failed); a slow one is
	// inserted running and finished later by WriteFinishStep.
	WriteInsertStep WriteKind = iota + 1
	// WriteFinishStep sets the running attempt Write.Step.ID to
	// Write.Step.Status (completed or failed) with its output or error,
	// like CompleteStepAttempt / FailStepAttempt.
	WriteFinishStep
	// WriteCompleteRun completes the run with Write.Output, like
	// CompleteWorkflowRun (a parked parent is woken).
	WriteCompleteRun
	// WriteParkRun parks the run until Write.AvailableAt, like
	// SleepWorkflowRun (reconciling child and signal waits that already
	// resolved).
	WriteParkRun
	// WriteRescheduleRun sets the run pending at Write.AvailableAt with
	// Write.Error, like RescheduleWorkflowRunAfterFailedStepAttempt; the
	// caller has already decided on a retry.
	WriteRescheduleRun
	// WriteFailRun fails the run terminally with Write.Error (a parked
	// parent is woken); the caller has already decided it is terminal.
	WriteFailRun
)

// String returns the kind's name, for messages.
func (k WriteKind) String() string {
	switch k {
	case WriteInsertStep:
		return "insert step"
	case WriteFinishStep:
		return "finish step"
	case WriteCompleteRun:
		return "complete run"
	case WriteParkRun:
		return "park run"
	case WriteRescheduleRun:
		return "reschedule run"
	case WriteFailRun:
		return "fail run"
	}
	return "unknown write"
}

// Write is one fenced worker write applied by [Backend.ApplyWrites].
type Write struct {
	// Kind says what the write does; it selects the fields used.
	Kind WriteKind
	// WorkflowRunID and WorkerID name the run and its owner (the fence).
	WorkflowRunID string
	WorkerID      string
	// Step is the attempt written by WriteInsertStep (every field but the
	// namespace, run id and timestamps, which the backend sets; StartedAt
	// and FinishedAt, if set, are kept) and WriteFinishStep (ID, Status,
	// Output, Error).
	Step *StepAttempt
	// Output is the run's JSON output for WriteCompleteRun (nil: JSON null).
	Output json.RawMessage
	// Error is the serialized error for WriteRescheduleRun and WriteFailRun.
	Error json.RawMessage
	// AvailableAt is the wake-up (WriteParkRun) or retry time
	// (WriteRescheduleRun).
	AvailableAt time.Time
}

// Batcher is the group-commit part of [Backend]: the worker sends its step
// writes and run transitions through ApplyWrites, and clients start many
// runs with CreateWorkflowRuns.
type Batcher interface {
	// ApplyWrites applies fenced worker writes in order, normally in one
	// transaction (group commit: the writes of many runs share one commit),
	// and returns one error per write: nil when applied, an error wrapping
	// [ErrNotOwner] when the write's fence refused it — which does not
	// prevent the other writes — or another error when the write failed
	// (bad JSON, lost connection). Each write has exactly the effect (and
	// the notifications) of the single-write method it mirrors. When ctx
	// ends before the commit, every write reports ctx's error and none
	// applied.
	ApplyWrites(ctx context.Context, writes []Write) []error

	// CreateWorkflowRuns inserts many runs at once (the batch start API),
	// in one statement where the backend can, and returns them in the
	// order given, as stored (a backend may return JSON fields as given
	// rather than re-rendered by its store: same values, possibly other
	// key order and spacing). Runs with an idempotency key are deduplicated as by
	// CreateWorkflowRun. It fails as a whole (nothing inserted) when any
	// params are invalid, naming the index of the first bad one.
	CreateWorkflowRuns(ctx context.Context, ps []CreateWorkflowRunParams) ([]*WorkflowRun, error)
}

// DueTimer is implemented by backends that can say when the next run of the
// namespace becomes claimable (a delayed start, a parked run waking, a
// lease expiring), so an idle worker sleeps until then rather than polling.
// Both built-in backends implement it.
type DueTimer interface {
	// NextDueAt returns when the earliest available_at in the future of a
	// non-terminal run comes, by the caller's clock: a backend whose claims
	// compare available_at with another clock (PostgreSQL's NOW()) returns
	// now + (available_at − that clock's now), so that clock skew between
	// the worker and the database does not make a worker wake early and
	// ask again in a loop. ok is false when there is none.
	NextDueAt(ctx context.Context) (at time.Time, ok bool, err error)
}

// HistoryReader is implemented by backends that read the step histories of
// many runs in one query. A worker that claims several runs that executed
// before (parked, retried, or taken over after a crash) reads their
// histories this way, one round trip per claim instead of one per run;
// without it, each run's history is read with ListStepAttempts. Both the
// PostgreSQL and the SQLite backends implement it.
type HistoryReader interface {
	// ListStepHistories returns every step attempt of each run of
	// workflowRunIDs (of the backend's namespace), keyed by run id, each
	// run's attempts oldest first as ListStepAttempts orders them
	// (created_at, then id). A run without attempts, or an unknown id, has
	// no entry.
	ListStepHistories(ctx context.Context, workflowRunIDs []string) (map[string][]StepAttempt, error)
}
