package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// ApplyWrites applies the groups of worker writes in order in one BEGIN
// IMMEDIATE transaction (one commit, one fsync, for the whole batch) and
// returns one error per group. Each write runs the statement of the
// transition it names (WriteInsertStep: an attempt insert;
// WriteFinishStep: a step completion or failure; WriteCompleteRun: a run
// completion, or its deadline failure; WriteParkRun: a park;
// WriteRescheduleRun and WriteFailRun: a retry or a terminal failure),
// fenced on the run's ownership, with the same parent wake-ups and
// events, published after the commit.
//
// Each group runs inside a savepoint and applies whole or not at all: a
// write its fence refuses (an error wrapping [backend.ErrNotOwner], and
// [backend.ErrRunNotFound] too when the run does not exist), one with
// invalid arguments or values ([backend.ErrInvalidArgument]: a group of
// the wrong shape, invalid JSON, a value [backend.ValidateJSON] refuses)
// and one the database rejects (a duplicate step id) roll its whole group
// back and name the write's kind and run, without preventing the other
// groups. When ctx ends before the commit, or the commit fails, every
// group reports that error and none applied.
//
// WriteInsertStep stores Write.Step as given (status running when
// Step.Status is empty, config {} and, for a completed attempt, output
// JSON null when nil); started_at is Step.StartedAt or now, finished_at
// Step.FinishedAt, or now for a completed or failed attempt.
func (b *Backend) ApplyWrites(ctx context.Context, groups [][]backend.Write) []error {
	errs := make([]error, len(groups))
	if len(groups) == 0 {
		return errs
	}
	args := make([][]writeArgs, len(groups))
	for g, ws := range groups {
		if err := backend.ValidateGroup(ws); err != nil {
			errs[g] = err
			continue
		}
		args[g] = make([]writeArgs, len(ws))
		for i := range ws {
			var err error
			if args[g][i], err = newWriteArgs(&ws[i]); err != nil {
				errs[g] = writeError(&ws[i], err)
				args[g] = nil
				break
			}
		}
	}
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		for g := range groups {
			if args[g] == nil {
				continue
			}
			errs[g] = nil
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := b.applyGroup(ctx, tx, now, ev, groups[g], args[g]); err != nil {
				if isBusy(err) || ctx.Err() != nil {
					return err // the transaction as a whole must stop
				}
				errs[g] = err
			}
		}
		return ctx.Err()
	})
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		for g := range groups {
			if args[g] != nil {
				errs[g] = fmt.Errorf("writes of workflow run %s: %w", groups[g][0].WorkflowRunID, err)
			}
		}
	}
	return errs
}

// writeError names the write's kind and run in err.
func writeError(w *backend.Write, err error) error {
	return fmt.Errorf("%s of workflow run %s: %w", w.Kind, w.WorkflowRunID, err)
}

// applyGroup applies one group of a batch inside a savepoint, so a group
// whose write fails half-way (a refused fence, a completion whose parent
// wake-up failed) leaves neither rows nor events behind.
func (b *Backend) applyGroup(ctx context.Context, tx *txn, now time.Time, ev *events, ws []backend.Write, as []writeArgs) error {
	if _, err := tx.ExecContext(ctx, b.q.Savepoint); err != nil {
		return err
	}
	mark := len(*ev)
	var err error
	for i := range ws {
		if err = b.applyWrite(ctx, tx, now, ev, &ws[i], &as[i]); err != nil {
			err = writeError(&ws[i], err)
			break
		}
	}
	if err != nil {
		*ev = (*ev)[:mark]
		if _, rbErr := tx.ExecContext(ctx, b.q.RollbackToSavepoint); rbErr != nil {
			return errors.Join(err, rbErr)
		}
	}
	if _, relErr := tx.ExecContext(ctx, b.q.ReleaseSavepoint); relErr != nil {
		return errors.Join(err, relErr)
	}
	return err
}

// applyWrite runs the transaction body of the write's transition.
func (b *Backend) applyWrite(ctx context.Context, tx *txn, now time.Time, ev *events, w *backend.Write, a *writeArgs) error {
	var err error
	switch w.Kind {
	case backend.WriteInsertStep:
		err = b.insertStep(ctx, tx, now, w.WorkflowRunID, w.WorkerID, &a.insert)
	case backend.WriteFinishStep:
		query := b.q.CompleteStep
		if a.finishFailed {
			query = b.q.FailStep
		}
		err = b.updateStep(ctx, tx, now, w.WorkflowRunID, w.Step.ID, w.WorkerID, query, a.finishArg)
	case backend.WriteLinkChild:
		err = b.updateStep(ctx, tx, now, w.WorkflowRunID, w.Step.ID, w.WorkerID, b.q.SetStepChild,
			sql.Named("child_ns", *w.Step.ChildWorkflowRunNamespaceID), sql.Named("child_id", *w.Step.ChildWorkflowRunID))
		if isConstraint(err) {
			err = fmt.Errorf("child workflow run %s/%s: %w", *w.Step.ChildWorkflowRunNamespaceID, *w.Step.ChildWorkflowRunID, backend.ErrRunNotFound)
		}
	case backend.WriteCompleteRun:
		err = b.completeRun(ctx, tx, now, ev, w.WorkflowRunID, w.WorkerID, a.output)
	case backend.WriteParkRun:
		err = b.parkRun(ctx, tx, now, ev, w.WorkflowRunID, w.WorkerID, w.AvailableAt)
	case backend.WriteRescheduleRun:
		err = b.rescheduleRun(ctx, tx, now, ev, w.WorkflowRunID, w.WorkerID, w.AvailableAt, w.Error)
	case backend.WriteFailRun:
		err = b.failRun(ctx, tx, now, ev, w.WorkflowRunID, w.WorkerID, w.Error)
	default:
		err = fmt.Errorf("%w: unknown write kind %d", backend.ErrInvalidArgument, int(w.Kind))
	}
	if errors.Is(err, backend.ErrRunNotFound) && !errors.Is(err, backend.ErrNotOwner) {
		// A missing run is refused by the fence like a run of another
		// worker: say both.
		err = fmt.Errorf("%w: %w", backend.ErrNotOwner, err)
	}
	return err
}

// writeArgs are the validated arguments of one write.
type writeArgs struct {
	insert       insertStepArgs // WriteInsertStep
	finishFailed bool           // WriteFinishStep: fail_step, else complete_step
	finishArg    sql.NamedArg   // WriteFinishStep: its output or error
	output       any            // WriteCompleteRun
}

// newWriteArgs validates w before the transaction, so an invalid write
// fails alone without a round trip.
func newWriteArgs(w *backend.Write) (writeArgs, error) {
	var a writeArgs
	var err error
	switch w.Kind {
	case backend.WriteInsertStep:
		return newInsertArgs(w.Step)
	case backend.WriteFinishStep:
		s := w.Step
		if s == nil || s.ID == "" {
			return a, fmt.Errorf("%w: no step attempt id", backend.ErrInvalidArgument)
		}
		switch s.Status.Normalize() {
		case backend.StepCompleted:
			var out any
			out, err = jsonArgOr("output", s.Output, "null")
			a.finishArg = sql.Named("output", out)
		case backend.StepFailed:
			var e any
			e, err = jsonArg("error", s.Error)
			a.finishFailed, a.finishArg = true, sql.Named("error", e)
		default:
			err = fmt.Errorf("%w: step attempt %s finished with status %q (want completed or failed)",
				backend.ErrInvalidArgument, s.ID, s.Status)
		}
	case backend.WriteCompleteRun:
		a.output, err = jsonArgOr("output", w.Output, "null")
	case backend.WriteParkRun, backend.WriteLinkChild:
	case backend.WriteRescheduleRun, backend.WriteFailRun:
		_, err = jsonArg("error", w.Error) // validated; the write stores it
	default:
		err = fmt.Errorf("%w: unknown write kind %d", backend.ErrInvalidArgument, int(w.Kind))
	}
	return a, err
}

// newInsertArgs validates the attempt of a WriteInsertStep and fills in
// its defaults (id, status, config, a completed attempt's null output).
func newInsertArgs(s *backend.StepAttempt) (writeArgs, error) {
	var a writeArgs
	if s == nil {
		return a, fmt.Errorf("%w: no step attempt", backend.ErrInvalidArgument)
	}
	if s.StepName == "" || s.Kind == "" {
		return a, fmt.Errorf("%w: empty step name or kind", backend.ErrInvalidArgument)
	}
	step := *s
	if step.ID == "" {
		step.ID = id.New(id.PrefixStep)
		s.ID = step.ID // the caller learns the id it may finish later
	}
	step.Status = step.Status.Normalize()
	if step.Status == "" {
		step.Status = backend.StepRunning
	}
	switch step.Status {
	case backend.StepRunning, backend.StepCompleted, backend.StepFailed:
	default:
		return a, fmt.Errorf("%w: step attempt %q with status %q", backend.ErrInvalidArgument, step.StepName, step.Status)
	}
	var err error
	ins := insertStepArgs{step: &step}
	if ins.config, err = jsonArgOr("config", step.Config, "{}"); err != nil {
		return a, err
	}
	if ins.context, err = jsonArg("context", step.Context); err != nil {
		return a, err
	}
	if step.Status == backend.StepCompleted {
		ins.output, err = jsonArgOr("output", step.Output, "null")
	} else {
		ins.output, err = jsonArg("output", step.Output)
	}
	if err != nil {
		return a, err
	}
	if ins.errJS, err = jsonArg("error", step.Error); err != nil {
		return a, err
	}
	a.insert = ins
	return a, nil
}

// CreateWorkflowRuns creates the runs of ps as CreateWorkflowRun would,
// in order, in one BEGIN IMMEDIATE transaction (each insert a prepared
// statement) and returns them in the order given. A keyed entry returns
// the existing run with its key, an earlier entry of the same batch
// included. Any invalid entry (empty workflow name, invalid JSON) fails
// the whole call with [backend.ErrInvalidArgument], naming the entry's
// index, and nothing is inserted; so does a parent step that does not
// exist. One EventWorkAvailable is published when a run is claimable now.
func (b *Backend) CreateWorkflowRuns(ctx context.Context, ps []backend.CreateWorkflowRunParams) ([]*backend.WorkflowRun, error) {
	if len(ps) == 0 {
		return []*backend.WorkflowRun{}, nil
	}
	args := make([]createArgs, len(ps))
	for i := range ps {
		var err error
		if args[i], err = newCreateArgs(&ps[i]); err != nil {
			return nil, fmt.Errorf("create workflow runs: entry %d: %w", i, err)
		}
		if ps[i].Singleton != nil {
			return nil, fmt.Errorf("create workflow runs: entry %d: %w", i, backend.ErrSingletonBatch)
		}
	}
	runs := make([]*backend.WorkflowRun, len(ps))
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		for i := range ps {
			run, err := b.createRun(ctx, tx, now, ev, &ps[i], &args[i])
			if err != nil {
				return fmt.Errorf("entry %d (workflow %q): %w", i, ps[i].WorkflowName, err)
			}
			runs[i] = run
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("create workflow runs: %w", err)
	}
	return runs, nil
}
