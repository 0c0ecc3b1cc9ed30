package openworkflow_test

import (
	"context"
	"errors"
	"testing"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestAMarkedRunIsNotRetried: a workflow that marks its run with
// MarkNotRetryable before it fails cannot be retried (RunNotRetryableError
// with the reason, ErrRunNotRetryable), and the refused retry changes
// nothing; the same workflow failing before the mark is retried as usual.
// An empty reason is refused.
func TestAMarkedRunIsNotRetried(t *testing.T) {
	e := newEnv(t)
	var calls counter
	var emptyReason error
	wf := ow.Define(ow.Spec{Name: "undoes"}, func(ctx ow.Context, mark bool) (string, error) {
		if calls.inc("run") == 1 {
			emptyReason = ow.MarkNotRetryable(ctx, "")
		}
		if mark {
			if err := ow.MarkNotRetryable(ctx, "it refunded the card"); err != nil {
				return "", err
			}
		}
		return ow.Run(ctx, "charge", func(context.Context) (string, error) {
			if calls.inc("charge") <= 2 {
				return "", ow.NonRetryable(errors.New("declined"))
			}
			return "charged", nil
		})
	})
	e.register(wf)

	marked := start(e, wf, true)
	e.drain()
	failed := e.requireStatus(marked, backend.RunFailed)
	if !errors.Is(emptyReason, backend.ErrInvalidArgument) {
		t.Errorf("MarkNotRetryable with no reason: %v, want ErrInvalidArgument", emptyReason)
	}
	_, err := e.client.RetryRun(e.ctx, backend.RetryWorkflowRunParams{WorkflowRunID: marked})
	var nr *ow.RunNotRetryableError
	if !errors.Is(err, ow.ErrRunNotRetryable) || !errors.As(err, &nr) || nr.RunID != marked || nr.Reason != "it refunded the card" {
		t.Fatalf("RetryRun of a marked run: %v, want a RunNotRetryableError with the reason", err)
	}
	if r := e.requireStatus(marked, backend.RunFailed); r.Attempts != failed.Attempts || !r.UpdatedAt.Equal(failed.UpdatedAt) {
		t.Fatalf("the refused retry changed the run: %+v", r)
	}

	plain := start(e, wf, false)
	e.drain()
	e.requireStatus(plain, backend.RunFailed)
	if _, err := e.client.RetryRun(e.ctx, backend.RetryWorkflowRunParams{WorkflowRunID: plain}); err != nil {
		t.Fatalf("RetryRun of an unmarked run: %v", err)
	}
	e.drain()
	if got := output[string](e, plain); got != "charged" {
		t.Fatalf("the retried run's output %q, want charged", got)
	}
	if _, err := e.client.RetryRun(e.ctx, backend.RetryWorkflowRunParams{WorkflowRunID: "wrun_nope"}); !errors.Is(err, backend.ErrRunNotFound) {
		t.Fatalf("RetryRun of an unknown run: %v, want ErrRunNotFound", err)
	}
}
