package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.RunPauser = (*Backend)(nil)

// PauseWorkflowRun implements [backend.RunPauser] with pause_run
// (sql/pause.sql) in one BEGIN IMMEDIATE transaction; when it matches
// nothing the run is read in the same transaction to say why.
func (b *Backend) PauseWorkflowRun(ctx context.Context, p backend.PauseWorkflowRunParams) (*backend.RunControlResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var reason any
	if p.Reason != "" {
		reason = p.Reason
	}
	res := &backend.RunControlResult{}
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		run, err := scanRun(tx.QueryRowContext(ctx, b.q.PauseRun,
			sql.Named("ns", b.ns),
			sql.Named("run_id", p.WorkflowRunID),
			sql.Named("reason", reason),
			sql.Named("now", timeArg(now))))
		if errors.Is(err, sql.ErrNoRows) {
			run, err = b.getRun(ctx, tx, p.WorkflowRunID)
			if err != nil {
				return err
			}
			if run.Status.Terminal() {
				return fmt.Errorf("cannot pause a run with status %s: %w", run.Status, backend.ErrRunTerminal)
			}
			res.Run = run // paused already
			return nil
		}
		res.Run, res.Acted = run, err == nil
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pause workflow run %s: %w", p.WorkflowRunID, err)
	}
	return res, nil
}

// ResumeWorkflowRun implements [backend.RunPauser] in one BEGIN IMMEDIATE
// transaction: resume_paused_run, else resume_canceled_run and its mark
// (insert_resume_mark), else the run read to say why
// ([backend.ResumeRefusal]). A run made due is announced.
func (b *Backend) ResumeWorkflowRun(ctx context.Context, p backend.ResumeWorkflowRunParams) (*backend.RunControlResult, error) {
	if p.MarkID == "" || !backend.ValidText(p.MarkID) {
		return nil, fmt.Errorf("%w: resume of run %s: no valid mark id", backend.ErrInvalidArgument, p.WorkflowRunID)
	}
	var res *backend.RunControlResult
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		args := []any{sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID), sql.Named("now", timeArg(now))}
		run, err := scanRun(tx.QueryRowContext(ctx, b.q.ResumePausedRun, args...))
		if err == nil {
			res = &backend.RunControlResult{Run: run, Acted: true}
			ev.workAvailable(b.ns)
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		run, err = scanRun(tx.QueryRowContext(ctx, b.q.ResumeCanceledRun, args...))
		if errors.Is(err, sql.ErrNoRows) {
			if run, err = b.getRun(ctx, tx, p.WorkflowRunID); err != nil {
				return err
			}
			res, err = backend.ResumeRefusal(run)
			return err
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, b.q.InsertResumeMark,
			sql.Named("ns", b.ns),
			sql.Named("step_id", p.MarkID),
			sql.Named("run_id", run.ID),
			sql.Named("attempts", run.Attempts),
			sql.Named("now", timeArg(now))); err != nil {
			return err
		}
		res = &backend.RunControlResult{Run: run, Acted: true}
		ev.workAvailable(b.ns)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("resume workflow run %s: %w", p.WorkflowRunID, err)
	}
	return res, nil
}
