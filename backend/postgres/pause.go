package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.RunPauser = (*Backend)(nil)

// PauseWorkflowRun implements [backend.RunPauser] with one statement
// (pause_run in sql/pause.sql); when it matches nothing the run is read
// to say why: paused already (not acted on), terminal or missing.
func (b *Backend) PauseWorkflowRun(ctx context.Context, p backend.PauseWorkflowRunParams) (*backend.RunControlResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if !backend.ValidText(p.WorkflowRunID) {
		return nil, fmt.Errorf("pause workflow run %q: %w", p.WorkflowRunID, backend.ErrRunNotFound)
	}
	var reason *string
	if p.Reason != "" {
		reason = &p.Reason
	}
	run, err := b.writeRun(ctx, nil, b.q.PauseRun, b.namespace, p.WorkflowRunID, reason, b.at())
	if errors.Is(err, pgx.ErrNoRows) {
		existing, err := b.GetWorkflowRun(ctx, p.WorkflowRunID)
		if err != nil {
			return nil, fmt.Errorf("pause: %w", err)
		}
		if existing.Status.Terminal() {
			return nil, fmt.Errorf("cannot pause workflow run %s with status %s: %w", p.WorkflowRunID, existing.Status, backend.ErrRunTerminal)
		}
		return &backend.RunControlResult{Run: existing}, nil // paused already
	}
	if err != nil {
		return nil, fmt.Errorf("pause workflow run %s: %w", p.WorkflowRunID, err)
	}
	return &backend.RunControlResult{Run: run, Acted: true}, nil
}

// ResumeWorkflowRun implements [backend.RunPauser]: resume_paused_run,
// then, when the run was not paused, resume_canceled_run (both in
// sql/pause.sql), each one statement; when neither matches the run is
// read to say why.
func (b *Backend) ResumeWorkflowRun(ctx context.Context, p backend.ResumeWorkflowRunParams) (*backend.RunControlResult, error) {
	if p.MarkID == "" || !backend.ValidText(p.MarkID) {
		return nil, fmt.Errorf("%w: resume of run %s: no valid mark id", backend.ErrInvalidArgument, p.WorkflowRunID)
	}
	if !backend.ValidText(p.WorkflowRunID) {
		return nil, fmt.Errorf("resume workflow run %q: %w", p.WorkflowRunID, backend.ErrRunNotFound)
	}
	run, err := b.writeRun(ctx, nil, b.q.ResumePausedRun, b.namespace, p.WorkflowRunID, b.at())
	if err == nil {
		return &backend.RunControlResult{Run: run, Acted: true}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("resume workflow run %s: %w", p.WorkflowRunID, err)
	}
	run, err = b.writeRun(ctx, nil, b.q.ResumeCanceledRun, b.namespace, p.WorkflowRunID, p.MarkID, b.at())
	if err == nil {
		return &backend.RunControlResult{Run: run, Acted: true}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("resume workflow run %s: %w", p.WorkflowRunID, err)
	}
	existing, err := b.GetWorkflowRun(ctx, p.WorkflowRunID)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	return backend.ResumeRefusal(existing)
}
