package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// CreateWorkflowRun inserts a pending run, or with an idempotency key
// returns the oldest run with that key created within
// [backend.IdempotencyPeriod]. The lookup and the insert share one
// BEGIN IMMEDIATE transaction, so concurrent keyed creates collapse to one
// run. It publishes EventWorkAvailable when the new run is claimable now.
// A missing workflow name or invalid JSON fails with
// [backend.ErrInvalidArgument].
func (b *Backend) CreateWorkflowRun(ctx context.Context, p backend.CreateWorkflowRunParams) (*backend.WorkflowRun, error) {
	args, err := newCreateArgs(&p)
	if err != nil {
		return nil, fmt.Errorf("create workflow run: %w", err)
	}
	var run *backend.WorkflowRun
	err = b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		var err error
		run, err = b.createRun(ctx, tx, now, ev, &p, &args)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create workflow run %q: %w", p.WorkflowName, err)
	}
	return run, nil
}

// createArgs are the validated JSON columns of a create.
type createArgs struct {
	config, context, input any
}

// newCreateArgs validates p: a workflow name and valid JSON are required.
func newCreateArgs(p *backend.CreateWorkflowRunParams) (createArgs, error) {
	var a createArgs
	if p.WorkflowName == "" {
		return a, fmt.Errorf("%w: empty workflow name", backend.ErrInvalidArgument)
	}
	var err error
	if a.config, err = jsonArgOr("config", p.Config, "{}"); err != nil {
		return a, err
	}
	if a.context, err = jsonArg("context", p.Context); err != nil {
		return a, err
	}
	if a.input, err = jsonArg("input", p.Input); err != nil {
		return a, err
	}
	return a, nil
}

// createRun is the transaction body of a create: with an idempotency key
// it returns the oldest run with that key created within the window (one
// created earlier in the same transaction included), else it inserts a
// pending run, recording EventWorkAvailable when it is claimable now.
func (b *Backend) createRun(ctx context.Context, tx *txn, now time.Time, ev *events, p *backend.CreateWorkflowRunParams, a *createArgs) (*backend.WorkflowRun, error) {
	if p.IdempotencyKey != nil {
		row := tx.QueryRowContext(ctx, qFindRunByIdempotencyKey,
			sql.Named("ns", b.ns),
			sql.Named("workflow_name", p.WorkflowName),
			sql.Named("idempotency_key", *p.IdempotencyKey),
			sql.Named("since", timeArg(now.Add(-backend.IdempotencyPeriod))))
		existing, err := scanRun(row)
		if err == nil {
			return existing, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
	}
	availableAt := now
	if p.AvailableAt != nil {
		availableAt = *p.AvailableAt
	}
	row := tx.QueryRowContext(ctx, qInsertRun,
		sql.Named("ns", b.ns),
		sql.Named("id", id.New(id.PrefixRun)),
		sql.Named("workflow_name", p.WorkflowName),
		sql.Named("version", nullStringArg(p.Version)),
		sql.Named("idempotency_key", nullStringArg(p.IdempotencyKey)),
		sql.Named("config", a.config),
		sql.Named("context", a.context),
		sql.Named("input", a.input),
		sql.Named("parent_ns", nullStringArg(p.ParentStepAttemptNamespaceID)),
		sql.Named("parent_id", nullStringArg(p.ParentStepAttemptID)),
		sql.Named("available_at", timeArg(availableAt)),
		sql.Named("deadline_at", nullTimeArg(p.DeadlineAt)),
		sql.Named("now", timeArg(now)))
	created, err := scanRun(row)
	if err != nil {
		if isConstraint(err) {
			return nil, fmt.Errorf("%w: parent step attempt does not exist: %v", backend.ErrInvalidArgument, err)
		}
		return nil, err
	}
	if !availableAt.After(now) {
		ev.workAvailable(b.ns)
	}
	return created, nil
}

// GetWorkflowRun returns the run, or an error wrapping
// [backend.ErrRunNotFound].
func (b *Backend) GetWorkflowRun(ctx context.Context, workflowRunID string) (*backend.WorkflowRun, error) {
	var run *backend.WorkflowRun
	err := b.read(ctx, func() (err error) {
		run, err = b.getRun(ctx, b.reader(), workflowRunID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get workflow run %s: %w", workflowRunID, err)
	}
	return run, nil
}

// querier is a *sql.DB or *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// getRun reads one run; a missing run is an error wrapping
// backend.ErrRunNotFound.
func (b *Backend) getRun(ctx context.Context, q querier, runID string) (*backend.WorkflowRun, error) {
	run, err := scanRun(q.QueryRowContext(ctx, qGetRun, sql.Named("ns", b.ns), sql.Named("run_id", runID)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, backend.ErrRunNotFound
	}
	return run, err
}

// CountWorkflowRuns counts the namespace's runs per status, legacy
// statuses folded into their current names.
func (b *Backend) CountWorkflowRuns(ctx context.Context) (backend.RunCounts, error) {
	var counts backend.RunCounts
	err := b.read(ctx, func() error {
		counts = backend.RunCounts{}
		rows, err := b.db.QueryContext(ctx, qCountRuns, sql.Named("ns", b.ns))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var status string
			var n int
			if err := rows.Scan(&status, &n); err != nil {
				return err
			}
			counts.Add(backend.RunStatus(status), n)
		}
		return rows.Err()
	})
	if err != nil {
		return backend.RunCounts{}, fmt.Errorf("count workflow runs: %w", err)
	}
	return counts, nil
}

// ClaimWorkflowRuns fails the namespace's runs whose deadline has passed
// (publishing EventRunFinished for each, and waking their parked parents),
// then claims up to len(p.WorkerIDs) claimable runs, pending first, in one
// BEGIN IMMEDIATE transaction. The i-th claimed run is leased to
// p.WorkerIDs[i] until now + p.LeaseDuration (30 s when <= 0).
func (b *Backend) ClaimWorkflowRuns(ctx context.Context, p backend.ClaimWorkflowRunsParams) ([]*backend.WorkflowRun, error) {
	if len(p.WorkerIDs) == 0 {
		return nil, nil
	}
	lease := p.LeaseDuration
	if lease <= 0 {
		lease = defaultLeaseDuration
	}
	var claimed []*backend.WorkflowRun
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		claimed = nil
		if err := b.failExpiredRuns(ctx, tx, now, ev); err != nil {
			return err
		}
		ids, err := b.claimCandidates(ctx, tx, now, max(p.Lookahead, 0), len(p.WorkerIDs), p.Workflows)
		if err != nil {
			return err
		}
		for i, runID := range ids {
			run, err := scanRun(tx.QueryRowContext(ctx, qClaimRun,
				sql.Named("ns", b.ns),
				sql.Named("run_id", runID),
				sql.Named("worker_id", p.WorkerIDs[i]),
				sql.Named("lease_until", timeArg(now.Add(lease))),
				sql.Named("now", timeArg(now))))
			if err != nil {
				return fmt.Errorf("claim %s: %w", runID, err)
			}
			claimed = append(claimed, run)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim workflow runs: %w", err)
	}
	return claimed, nil
}

// failExpiredRuns is the claim's deadline sweep.
func (b *Backend) failExpiredRuns(ctx context.Context, tx *txn, now time.Time, ev *events) error {
	rows, err := tx.QueryContext(ctx, qFailExpiredRuns,
		sql.Named("ns", b.ns),
		sql.Named("error", string(backend.DeadlineExceededError)),
		sql.Named("now", timeArg(now)))
	if err != nil {
		return fmt.Errorf("fail expired runs: %w", err)
	}
	var expired []*backend.WorkflowRun
	for rows.Next() {
		var r backend.WorkflowRun
		if err := rows.Scan(&r.NamespaceID, &r.ID, &r.ParentStepAttemptNamespaceID, &r.ParentStepAttemptID); err != nil {
			rows.Close()
			return err
		}
		expired = append(expired, &r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("fail expired runs: %w", err)
	}
	for _, r := range expired {
		ev.runFinished(b.ns, r.ID)
		if err := wakeParent(ctx, tx, r, now, ev); err != nil {
			return err
		}
	}
	return nil
}

// claimCandidates returns the ids of up to n claimable runs, in claim
// order, parked runs due within lookahead included.
func (b *Backend) claimCandidates(ctx context.Context, tx *txn, now time.Time, lookahead time.Duration, n int, workflows []backend.WorkflowKey) ([]string, error) {
	var filter any // NULL: any workflow; else [[name, version|null], …]
	if workflows != nil {
		pairs := make([][2]*string, len(workflows))
		for i, k := range workflows {
			pairs[i] = [2]*string{&k.Name, k.Version}
		}
		b, _ := json.Marshal(pairs)
		filter = string(b)
	}
	rows, err := tx.QueryContext(ctx, qClaimCandidates,
		sql.Named("ns", b.ns), sql.Named("now", timeArg(now)), sql.Named("ahead", timeArg(now.Add(lookahead))),
		sql.Named("limit", n), sql.Named("workflows", filter))
	if err != nil {
		return nil, fmt.Errorf("select claim candidates: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var runID string
		if err := rows.Scan(&runID); err != nil {
			return nil, err
		}
		ids = append(ids, runID)
	}
	return ids, rows.Err()
}

// wakeParent makes a parked parent of the finished child claimable now
// (see qWakeParent), recording EventWorkAvailable if it did.
func wakeParent(ctx context.Context, tx *txn, child *backend.WorkflowRun, now time.Time, ev *events) error {
	if child.ParentStepAttemptNamespaceID == nil || child.ParentStepAttemptID == nil {
		return nil
	}
	rows, err := tx.QueryContext(ctx, qWakeParent,
		sql.Named("parent_ns", *child.ParentStepAttemptNamespaceID),
		sql.Named("parent_step_id", *child.ParentStepAttemptID),
		sql.Named("child_ns", child.NamespaceID),
		sql.Named("child_id", child.ID),
		sql.Named("now", timeArg(now)))
	if err != nil {
		return fmt.Errorf("wake parent of %s: %w", child.ID, err)
	}
	defer rows.Close()
	if rows.Next() {
		ev.workAvailable(*child.ParentStepAttemptNamespaceID)
	}
	return rows.Err()
}

// fenceError explains why a fenced write on run runID matched no row: the
// run does not exist (ErrRunNotFound) or is not running under this worker
// (ErrNotOwner).
func (b *Backend) fenceError(ctx context.Context, tx *txn, runID string) error {
	_, err := b.getRun(ctx, tx, runID)
	if err != nil {
		return err
	}
	return backend.ErrNotOwner
}

// ownedRunUpdate runs a fenced UPDATE … RETURNING runColumns and returns
// the updated run, or the fence error.
func (b *Backend) ownedRunUpdate(ctx context.Context, tx *txn, runID, query string, args ...any) (*backend.WorkflowRun, error) {
	run, err := scanRun(tx.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, b.fenceError(ctx, tx, runID)
	}
	return run, err
}

// ExtendWorkflowRunLease is the heartbeat: the run's lease is moved to
// now + p.LeaseDuration (30 s when <= 0). It fails with
// [backend.ErrNotOwner] when the run is no longer running under
// p.WorkerID, or [backend.ErrRunNotFound].
func (b *Backend) ExtendWorkflowRunLease(ctx context.Context, p backend.ExtendWorkflowRunLeaseParams) error {
	lease := p.LeaseDuration
	if lease <= 0 {
		lease = defaultLeaseDuration
	}
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		var got string
		err := tx.QueryRowContext(ctx, qExtendLease,
			sql.Named("ns", b.ns),
			sql.Named("run_id", p.WorkflowRunID),
			sql.Named("worker_id", p.WorkerID),
			sql.Named("lease_until", timeArg(now.Add(lease))),
			sql.Named("now", timeArg(now))).Scan(&got)
		if errors.Is(err, sql.ErrNoRows) {
			return b.fenceError(ctx, tx, p.WorkflowRunID)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("extend lease of workflow run %s: %w", p.WorkflowRunID, err)
	}
	return nil
}

// SleepWorkflowRun parks a non-terminal run owned by p.WorkerID until
// p.AvailableAt, or until now when the child or signal it waits for has
// already arrived. It publishes EventWorkAvailable when the run is
// claimable at once, and fails with [backend.ErrNotOwner] or
// [backend.ErrRunNotFound] like the other fenced writes.
func (b *Backend) SleepWorkflowRun(ctx context.Context, p backend.SleepWorkflowRunParams) error {
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		return b.sleepRun(ctx, tx, now, ev, p.WorkflowRunID, p.WorkerID, p.AvailableAt)
	})
	if err != nil {
		return fmt.Errorf("sleep workflow run %s: %w", p.WorkflowRunID, err)
	}
	return nil
}

// CompleteWorkflowRun marks a run owned by p.WorkerID completed with
// p.Output (JSON null when nil), wakes its parked parent and publishes
// EventRunFinished. It fails with [backend.ErrNotOwner] or
// [backend.ErrRunNotFound].
func (b *Backend) CompleteWorkflowRun(ctx context.Context, p backend.CompleteWorkflowRunParams) (*backend.WorkflowRun, error) {
	output, err := jsonArgOr("output", p.Output, "null")
	if err != nil {
		return nil, fmt.Errorf("complete workflow run %s: %w", p.WorkflowRunID, err)
	}
	var run *backend.WorkflowRun
	err = b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		var err error
		run, err = b.completeRun(ctx, tx, now, ev, p.WorkflowRunID, p.WorkerID, output)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("complete workflow run %s: %w", p.WorkflowRunID, err)
	}
	return run, nil
}

// FailWorkflowRun records a workflow failure of a run owned by p.WorkerID
// with [backend.ComputeFailedRunUpdate] (p.RetryPolicy, zero fields taken
// from [backend.DefaultWorkflowRetryPolicy]; the run's attempts are read
// when p.Attempts is nil, its deadline when p.DeadlineAt is nil): either
// the run is pending again at now + backoff, or it is failed for good, its
// parked parent woken and EventRunFinished published. It fails with
// [backend.ErrNotOwner] or [backend.ErrRunNotFound].
func (b *Backend) FailWorkflowRun(ctx context.Context, p backend.FailWorkflowRunParams) (*backend.WorkflowRun, error) {
	if _, err := jsonArg("error", p.Error); err != nil {
		return nil, fmt.Errorf("fail workflow run %s: %w", p.WorkflowRunID, err)
	}
	policy := p.RetryPolicy.WithDefaults(backend.DefaultWorkflowRetryPolicy)
	var run *backend.WorkflowRun
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		attempts, deadline := 0, p.DeadlineAt
		if p.Attempts != nil {
			attempts = *p.Attempts
		}
		if p.Attempts == nil || p.DeadlineAt == nil {
			// A nil DeadlineAt may mean "not known": read the run's own.
			cur, err := b.getRun(ctx, tx, p.WorkflowRunID)
			if err != nil {
				return err
			}
			if p.Attempts == nil {
				attempts = cur.Attempts
			}
			deadline = cur.DeadlineAt
		}
		upd := backend.ComputeFailedRunUpdate(policy, attempts, deadline, p.Error, now)
		var err error
		run, err = b.failRun(ctx, tx, now, ev, p.WorkflowRunID, p.WorkerID, upd)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fail workflow run %s: %w", p.WorkflowRunID, err)
	}
	return run, nil
}

// RescheduleWorkflowRunAfterFailedStepAttempt sets a run owned by
// p.WorkerID pending at p.AvailableAt with the step's error (a step
// retry), publishing EventWorkAvailable if that is not in the future. It
// fails with [backend.ErrNotOwner] or [backend.ErrRunNotFound].
func (b *Backend) RescheduleWorkflowRunAfterFailedStepAttempt(ctx context.Context, p backend.RescheduleWorkflowRunParams) (*backend.WorkflowRun, error) {
	if _, err := jsonArg("error", p.Error); err != nil {
		return nil, fmt.Errorf("reschedule workflow run %s: %w", p.WorkflowRunID, err)
	}
	var run *backend.WorkflowRun
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		var err error
		run, err = b.failRun(ctx, tx, now, ev, p.WorkflowRunID, p.WorkerID, backend.FailedRunUpdate{RetryAt: p.AvailableAt, Error: p.Error})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reschedule workflow run %s: %w", p.WorkflowRunID, err)
	}
	return run, nil
}

// CancelWorkflowRun cancels a pending or running run, wakes its parked
// parent and publishes EventRunFinished. Canceling a canceled run returns
// it unchanged; a completed or failed run gives an error wrapping
// [backend.ErrRunTerminal], a missing one [backend.ErrRunNotFound].
func (b *Backend) CancelWorkflowRun(ctx context.Context, workflowRunID string) (*backend.WorkflowRun, error) {
	var run *backend.WorkflowRun
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		var err error
		run, err = scanRun(tx.QueryRowContext(ctx, qCancelRun,
			sql.Named("ns", b.ns),
			sql.Named("run_id", workflowRunID),
			sql.Named("now", timeArg(now))))
		if errors.Is(err, sql.ErrNoRows) {
			run, err = b.getRun(ctx, tx, workflowRunID)
			if err != nil {
				return err
			}
			if run.Status == backend.RunCanceled {
				return nil
			}
			return fmt.Errorf("%w: status is %s", backend.ErrRunTerminal, run.Status)
		}
		if err != nil {
			return err
		}
		ev.runFinished(b.ns, run.ID)
		return wakeParent(ctx, tx, run, now, ev)
	})
	if err != nil {
		return nil, fmt.Errorf("cancel workflow run %s: %w", workflowRunID, err)
	}
	return run, nil
}

// The transaction bodies of the fenced run transitions, shared by the
// single-write methods and ApplyWrites. JSON arguments are validated text
// (or nil for SQL NULL); a write the fence refuses returns the fence error.

// sleepRun parks the run (see qSleepRun), recording EventWorkAvailable
// when it is claimable at once.
func (b *Backend) sleepRun(ctx context.Context, tx *txn, now time.Time, ev *events, runID, workerID string, at time.Time) error {
	var availableAt string
	err := tx.QueryRowContext(ctx, qSleepRun,
		sql.Named("ns", b.ns),
		sql.Named("run_id", runID),
		sql.Named("worker_id", workerID),
		sql.Named("available_at", timeArg(at)),
		sql.Named("now", timeArg(now))).Scan(&availableAt)
	if errors.Is(err, sql.ErrNoRows) {
		return b.fenceError(ctx, tx, runID)
	}
	if err != nil {
		return err
	}
	if availableAt <= timeArg(now) {
		ev.workAvailable(b.ns)
	}
	return nil
}

// completeRun completes the run with output and wakes its parked parent.
func (b *Backend) completeRun(ctx context.Context, tx *txn, now time.Time, ev *events, runID, workerID string, output any) (*backend.WorkflowRun, error) {
	run, err := b.ownedRunUpdate(ctx, tx, runID, qCompleteRun,
		sql.Named("ns", b.ns),
		sql.Named("run_id", runID),
		sql.Named("worker_id", workerID),
		sql.Named("output", output),
		sql.Named("now", timeArg(now)))
	if err != nil {
		return nil, err
	}
	ev.runFinished(b.ns, run.ID)
	return run, wakeParent(ctx, tx, run, now, ev)
}

// failRun stores the failure upd (upd.Error is valid JSON or empty): the
// run is pending again at upd.RetryAt, or failed for good and its parked
// parent woken.
func (b *Backend) failRun(ctx context.Context, tx *txn, now time.Time, ev *events, runID, workerID string, upd backend.FailedRunUpdate) (*backend.WorkflowRun, error) {
	status, availableAt, finishedAt := backend.RunPending, any(timeArg(upd.RetryAt)), any(nil)
	if upd.Terminal {
		status, availableAt, finishedAt = backend.RunFailed, nil, timeArg(now)
	}
	var storedErr any
	if len(upd.Error) > 0 {
		storedErr = string(upd.Error)
	}
	run, err := b.ownedRunUpdate(ctx, tx, runID, qFailRun,
		sql.Named("ns", b.ns),
		sql.Named("run_id", runID),
		sql.Named("worker_id", workerID),
		sql.Named("status", string(status)),
		sql.Named("available_at", availableAt),
		sql.Named("finished_at", finishedAt),
		sql.Named("error", storedErr),
		sql.Named("now", timeArg(now)))
	if err != nil {
		return nil, err
	}
	if !upd.Terminal {
		if !upd.RetryAt.After(now) {
			ev.workAvailable(b.ns)
		}
		return run, nil
	}
	ev.runFinished(b.ns, run.ID)
	return run, wakeParent(ctx, tx, run, now, ev)
}

// NextDueAt implements [backend.DueTimer].
func (b *Backend) NextDueAt(ctx context.Context) (time.Time, bool, error) {
	var t sql.NullString
	if err := b.db.QueryRowContext(ctx, qNextDue, sql.Named("ns", b.ns), sql.Named("now", timeArg(b.now()))).Scan(&t); err != nil {
		return time.Time{}, false, fmt.Errorf("next due run: %w", err)
	}
	if !t.Valid {
		return time.Time{}, false, nil
	}
	at, err := backend.ParseTime(t.String)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next due run: %w", err)
	}
	return at, true, nil
}
