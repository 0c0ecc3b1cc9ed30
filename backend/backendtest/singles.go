package backendtest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// Writes one at a time: every worker write is a [backend.Write] applied
// through ApplyWrites, which the engine sends in batches. [Singles] sends
// one write as a group of its own in a batch of its own and returns the
// row as written, under the names of OpenWorkflow's backend methods that
// make the same change (CreateStepAttempt for a WriteInsertStep of a
// running attempt, CompleteWorkflowRun for a WriteCompleteRun, ...). The
// specifications of single rows (step attempts, run transitions, fencing)
// are written with them, so each reads as the change it specifies; those
// of batches (batch.go, groups.go) apply writes among others.

// CreateStepAttemptParams are the inputs of [Singles.CreateStepAttempt].
type CreateStepAttemptParams struct {
	WorkflowRunID, WorkerID string
	StepName                string
	Kind                    backend.StepKind
	Config, Context         json.RawMessage
}

// CompleteStepAttemptParams are the inputs of [Singles.CompleteStepAttempt].
type CompleteStepAttemptParams struct {
	WorkflowRunID, StepAttemptID, WorkerID string
	Output                                 json.RawMessage
}

// FailStepAttemptParams are the inputs of [Singles.FailStepAttempt].
type FailStepAttemptParams struct {
	WorkflowRunID, StepAttemptID, WorkerID string
	Error                                  json.RawMessage
}

// SetStepAttemptChildWorkflowRunParams are the inputs of
// [Singles.SetStepAttemptChildWorkflowRun].
type SetStepAttemptChildWorkflowRunParams struct {
	WorkflowRunID, StepAttemptID, WorkerID          string
	ChildWorkflowRunNamespaceID, ChildWorkflowRunID string
}

// SleepWorkflowRunParams are the inputs of [Singles.SleepWorkflowRun].
type SleepWorkflowRunParams struct {
	WorkflowRunID, WorkerID string
	AvailableAt             time.Time
}

// CompleteWorkflowRunParams are the inputs of [Singles.CompleteWorkflowRun].
type CompleteWorkflowRunParams struct {
	WorkflowRunID, WorkerID string
	Output                  json.RawMessage
}

// RescheduleWorkflowRunParams are the inputs of
// [Singles.RescheduleWorkflowRunAfterFailedStepAttempt].
type RescheduleWorkflowRunParams struct {
	WorkflowRunID, WorkerID string
	Error                   json.RawMessage
	AvailableAt             time.Time
}

// FailWorkflowRunParams are the inputs of [Singles.FailWorkflowRun]: a
// terminal failure.
type FailWorkflowRunParams struct {
	WorkflowRunID, WorkerID string
	Error                   json.RawMessage
}

// Singles applies worker writes one at a time, each in a batch of its
// own. Use [Single] to make one.
type Singles struct{ b backend.Backend }

// Single returns the Singles of b.
func Single(b backend.Backend) Singles { return Singles{b} }

// apply applies w as a group of its own.
func (s Singles) apply(ctx context.Context, w backend.Write) error {
	errs := s.b.ApplyWrites(ctx, [][]backend.Write{{w}})
	if len(errs) != 1 {
		return fmt.Errorf("ApplyWrites of one group returned %d errors", len(errs))
	}
	return errs[0]
}

// CreateStepAttempt inserts a running attempt with a new id
// (WriteInsertStep) and returns it as stored.
func (s Singles) CreateStepAttempt(ctx context.Context, p CreateStepAttemptParams) (*backend.StepAttempt, error) {
	step := &backend.StepAttempt{
		ID: id.New(id.PrefixStep), StepName: p.StepName, Kind: p.Kind, Status: backend.StepRunning,
		Config: p.Config, Context: p.Context,
	}
	if err := s.apply(ctx, backend.Write{Kind: backend.WriteInsertStep, WorkflowRunID: p.WorkflowRunID, WorkerID: p.WorkerID, Step: step}); err != nil {
		return nil, err
	}
	return s.b.GetStepAttempt(ctx, step.ID)
}

// CompleteStepAttempt completes a running attempt (WriteFinishStep).
func (s Singles) CompleteStepAttempt(ctx context.Context, p CompleteStepAttemptParams) (*backend.StepAttempt, error) {
	return s.finish(ctx, p.WorkflowRunID, p.WorkerID, &backend.StepAttempt{ID: p.StepAttemptID, Status: backend.StepCompleted, Output: p.Output})
}

// FailStepAttempt fails a running attempt (WriteFinishStep).
func (s Singles) FailStepAttempt(ctx context.Context, p FailStepAttemptParams) (*backend.StepAttempt, error) {
	return s.finish(ctx, p.WorkflowRunID, p.WorkerID, &backend.StepAttempt{ID: p.StepAttemptID, Status: backend.StepFailed, Error: p.Error})
}

func (s Singles) finish(ctx context.Context, runID, workerID string, step *backend.StepAttempt) (*backend.StepAttempt, error) {
	if err := s.apply(ctx, backend.Write{Kind: backend.WriteFinishStep, WorkflowRunID: runID, WorkerID: workerID, Step: step}); err != nil {
		return nil, err
	}
	return s.b.GetStepAttempt(ctx, step.ID)
}

// SetStepAttemptChildWorkflowRun links a running attempt to its child run
// (WriteLinkChild).
func (s Singles) SetStepAttemptChildWorkflowRun(ctx context.Context, p SetStepAttemptChildWorkflowRunParams) (*backend.StepAttempt, error) {
	step := &backend.StepAttempt{ID: p.StepAttemptID, ChildWorkflowRunNamespaceID: &p.ChildWorkflowRunNamespaceID, ChildWorkflowRunID: &p.ChildWorkflowRunID}
	if err := s.apply(ctx, backend.Write{Kind: backend.WriteLinkChild, WorkflowRunID: p.WorkflowRunID, WorkerID: p.WorkerID, Step: step}); err != nil {
		return nil, err
	}
	return s.b.GetStepAttempt(ctx, p.StepAttemptID)
}

// SleepWorkflowRun parks a run (WriteParkRun).
func (s Singles) SleepWorkflowRun(ctx context.Context, p SleepWorkflowRunParams) error {
	return s.apply(ctx, backend.Write{Kind: backend.WriteParkRun, WorkflowRunID: p.WorkflowRunID, WorkerID: p.WorkerID, AvailableAt: p.AvailableAt})
}

// CompleteWorkflowRun completes a run (WriteCompleteRun) and returns it.
func (s Singles) CompleteWorkflowRun(ctx context.Context, p CompleteWorkflowRunParams) (*backend.WorkflowRun, error) {
	return s.transition(ctx, backend.Write{Kind: backend.WriteCompleteRun, WorkflowRunID: p.WorkflowRunID, WorkerID: p.WorkerID, Output: p.Output})
}

// RescheduleWorkflowRunAfterFailedStepAttempt sets a run pending at
// p.AvailableAt (WriteRescheduleRun) and returns it.
func (s Singles) RescheduleWorkflowRunAfterFailedStepAttempt(ctx context.Context, p RescheduleWorkflowRunParams) (*backend.WorkflowRun, error) {
	return s.transition(ctx, backend.Write{Kind: backend.WriteRescheduleRun, WorkflowRunID: p.WorkflowRunID, WorkerID: p.WorkerID, Error: p.Error, AvailableAt: p.AvailableAt})
}

// FailWorkflowRun fails a run for good (WriteFailRun) and returns it.
func (s Singles) FailWorkflowRun(ctx context.Context, p FailWorkflowRunParams) (*backend.WorkflowRun, error) {
	return s.transition(ctx, backend.Write{Kind: backend.WriteFailRun, WorkflowRunID: p.WorkflowRunID, WorkerID: p.WorkerID, Error: p.Error})
}

func (s Singles) transition(ctx context.Context, w backend.Write) (*backend.WorkflowRun, error) {
	if err := s.apply(ctx, w); err != nil {
		return nil, err
	}
	return s.b.GetWorkflowRun(ctx, w.WorkflowRunID)
}
