package backend

import (
	"context"
	"time"
)

// Optional capabilities: a backend implements these when it can, and the
// engine discovers them by interface assertion, falling back to the
// required methods when they are missing.

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

// FinishRecorder is implemented by backends that remember the last runs
// whose end they published to this process's subscribers (their own
// completions, and on PostgreSQL those the LISTEN connection delivered),
// so that a subscriber that came after an event still learns of it:
// the root package's RunHandle.Result, for a run its process's worker claimed
// at the start need not read the run first. Both built-in backends
// implement it, remembering the last 1,024 runs.
type FinishRecorder interface {
	// RecentFinish returns the EventRunFinished published for the run,
	// if remembered (Finished set when the event says how it ended).
	RecentFinish(workflowRunID string) (Event, bool)
}
