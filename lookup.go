package openworkflow

import (
	"encoding/json"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// StepRecord is what a run's step history holds for one durable key, as
// [LookupStep] returns it: the attempt that decides the key's state.
type StepRecord struct {
	// Kind is the step kind (function, sleep, workflow, …).
	Kind backend.StepKind
	// Status is completed when an attempt of the key completed (its result
	// is memoized), else the status of its latest attempt: failed, or
	// running (executing now, or interrupted by a crash before it ended).
	Status StepStatus
	// Output is the JSON result of a completed step.
	Output json.RawMessage
	// Error is the stored error of a failed attempt; nil otherwise.
	Error *Error
	// StartedAt and FinishedAt are the attempt's, by the clock of the
	// worker that ran it; zero when not set (FinishedAt of a running one).
	StartedAt, FinishedAt time.Time
}

// LookupStep returns what the run's history holds for the durable key —
// the exact key, such as "fetch" or "fetch:1", of any kind — without
// executing anything and without using the key (a later step call named
// key still resolves to key). It sees the attempts of earlier passes and
// those this pass recorded, committed or not. ok is false when the key has
// no attempt, and when ctx is not a workflow pass's context.
//
// Workflows written as Go code rarely need it: calling the step returns
// its recorded result. It is for interpreters that decide from what was
// recorded which durable keys to execute next, such as the dag package,
// which names each attempt of a DAG step by its own key and must never
// execute a key whose attempt already failed.
func LookupStep(ctx Context, key string) (rec StepRecord, ok bool) {
	x, err := execOf(ctx)
	if err != nil {
		return StepRecord{}, false
	}
	a, ok := x.hist.Lookup(key)
	if !ok {
		return StepRecord{}, false
	}
	rec = StepRecord{Kind: a.Kind, Status: a.Status.Normalize(), Output: a.Output}
	if rec.Status == backend.StepFailed {
		rec.Error = decodeError(a.Error)
	}
	if a.StartedAt != nil {
		rec.StartedAt = *a.StartedAt
	}
	if a.FinishedAt != nil {
		rec.FinishedAt = *a.FinishedAt
	}
	return rec, true
}
