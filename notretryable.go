package openworkflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openworkflow-go/openworkflow/backend"
)

// NotRetryableKey is the durable key of the mark [MarkNotRetryable]
// records in a run's history: a completed step whose output is
// {"reason": "..."}. A user step of that name would mark its run, so do
// not name a step so.
const NotRetryableKey = backend.NotRetryableStep

// ErrRunNotRetryable is wrapped (by a [*RunNotRetryableError]) by
// [Client.RetryRun] for a run whose workflow marked it as not to be
// retried forward ([MarkNotRetryable]): a DAG run that began to compensate,
// say, whose completed steps were undone. Such a run is over; start a new
// run (or fork one, [Client.ForkRun]) instead. Test with errors.Is.
var ErrRunNotRetryable = backend.ErrRunNotRetryable

// RunNotRetryableError is the error of [Client.RetryRun] for a run marked
// with [MarkNotRetryable]. It wraps [ErrRunNotRetryable].
type RunNotRetryableError struct {
	// RunID is the run refused.
	RunID string
	// Reason is the reason its workflow recorded with the mark.
	Reason string
}

// Error says which run, why, and what to do instead.
func (e *RunNotRetryableError) Error() string {
	return fmt.Sprintf("workflow run %s may not be retried: %s; start a new run instead", e.RunID, e.Reason)
}

// Unwrap returns [ErrRunNotRetryable].
func (e *RunNotRetryableError) Unwrap() error { return ErrRunNotRetryable }

// notRetryableMark is the output of the mark.
type notRetryableMark struct {
	Reason string `json:"reason"`
}

// MarkNotRetryable records in the run's history, as the durable step
// [NotRetryableKey], that the run may never be retried forward: from then
// on [Client.RetryRun] (and so `ow runs retry`, POST /v1/runs/{id}/retry)
// refuses it with a [*RunNotRetryableError] carrying reason, whatever the
// run's status. Call it before doing what makes a retry wrong (the dag
// package calls it when a run starts compensating, before any
// compensation runs); the mark is durable before the next step executes.
// It is idempotent: a later pass finds the mark recorded and keeps the
// first reason. reason is a human-readable sentence ("its compensations
// began: completed steps were undone"); it must not be empty.
func MarkNotRetryable(ctx Context, reason string) error {
	if reason == "" {
		return fmt.Errorf("%w: MarkNotRetryable needs a reason", backend.ErrInvalidArgument)
	}
	_, err := Run(ctx, NotRetryableKey, func(context.Context) (notRetryableMark, error) {
		return notRetryableMark{Reason: reason}, nil
	})
	return err
}

// notRetryable returns the reason of the run's mark, if it has one: the
// output of a completed attempt named NotRetryableKey.
func (c *Client) notRetryable(ctx context.Context, runID string) (reason string, marked bool, err error) {
	p := backend.ListStepAttemptsParams{WorkflowRunID: runID, Limit: 1000}
	for {
		page, err := c.b.ListStepAttempts(ctx, p)
		if err != nil {
			return "", false, err
		}
		for _, a := range page.Data {
			if a.StepName != NotRetryableKey || a.Status.Normalize() != backend.StepCompleted {
				continue
			}
			var m notRetryableMark
			if json.Unmarshal(a.Output, &m) != nil || m.Reason == "" {
				m.Reason = "its workflow marked it so"
			}
			return m.Reason, true, nil
		}
		if page.Next == nil {
			return "", false, nil
		}
		p.After = *page.Next
	}
}
