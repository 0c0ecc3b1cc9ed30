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
	if err := p.Validate(); err != nil {
		return a, err
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
// created earlier in the same transaction included); with a singleton it
// is admitted as admitSingleton says (the key's active run returned in
// mode skip); else it inserts a pending run, recording EventWorkAvailable
// when it is claimable now.
func (b *Backend) createRun(ctx context.Context, tx *txn, now time.Time, ev *events, p *backend.CreateWorkflowRunParams, a *createArgs) (*backend.WorkflowRun, error) {
	if p.IdempotencyKey != nil {
		row := tx.QueryRowContext(ctx, b.q.GetRunByIdempotencyKey,
			sql.Named("ns", b.ns),
			sql.Named("workflow_name", p.WorkflowName),
			sql.Named("idempotency_key", *p.IdempotencyKey),
			sql.Named("since", timeArg(now.Add(-backend.IdempotencyPeriod))))
		existing, err := scanRun(row)
		if err == nil {
			existing.Reused = true
			return existing, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
	}
	var hold bool
	if p.Singleton != nil {
		existing, h, err := b.admitSingleton(ctx, tx, now, ev, p)
		if err != nil || existing != nil {
			return existing, err
		}
		hold = h
	}
	availableAt := now
	if p.AvailableAt != nil {
		availableAt = *p.AvailableAt
	}
	var claimWorker, leaseUntil any // NULL: not claimed
	if p.Claim != nil {
		claimWorker, leaseUntil = p.Claim.WorkerID, timeArg(now.Add(p.Claim.LeaseDuration))
	}
	row := tx.QueryRowContext(ctx, b.q.InsertRun,
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
		sql.Named("now", timeArg(now)),
		sql.Named("priority", p.Priority),
		sql.Named("concurrency_key", nullStringArg(p.ConcurrencyKey)),
		sql.Named("claim_worker", claimWorker),
		sql.Named("lease_until", leaseUntil))
	created, err := scanRun(row)
	if err != nil {
		if isConstraint(err) {
			return nil, fmt.Errorf("%w: parent step attempt does not exist: %v", backend.ErrInvalidArgument, err)
		}
		return nil, err
	}
	if p.Singleton != nil {
		if created, err = b.markSingleton(ctx, tx, created, p.Singleton, hold); err != nil {
			return nil, err
		}
	}
	if created, err = b.markFair(ctx, tx, created, p); err != nil {
		return nil, err
	}
	if len(p.SearchAttributes) > 0 {
		if err := b.writeSearchAttributes(ctx, tx, now, created.ID, timeArg(created.CreatedAt), p.SearchAttributes, false); err != nil {
			return nil, err
		}
	}
	if !hold && !availableAt.After(now) && created.WorkerID == nil {
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
	run, err := scanRun(q.QueryRowContext(ctx, b.q.GetRun, sql.Named("ns", b.ns), sql.Named("run_id", runID)))
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
		rows, err := b.db.QueryContext(ctx, b.q.CountRuns, sql.Named("ns", b.ns))
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
// then claims up to len(p.WorkerIDs) claimable runs in claim order (by
// priority, then when each became due: see sql/claim.sql), in one
// BEGIN IMMEDIATE transaction. The i-th claimed run is leased to
// p.WorkerIDs[i] until now + p.LeaseDuration (30 s when <= 0). With no
// WorkerIDs it only fails the expired runs. A claim that admits runs of
// limited workflows (p.Admit) or caps workflows (p.Caps) chooses among the
// candidates and the admissible waiting runs with backend.PlanClaim; the
// transaction, SQLite's one write lock, keeps any other claim from
// counting the same free slots.
func (b *Backend) ClaimWorkflowRuns(ctx context.Context, p backend.ClaimWorkflowRunsParams) ([]*backend.WorkflowRun, error) {
	lease := p.LeaseDuration
	if lease <= 0 {
		lease = defaultLeaseDuration
	}
	var claimed []*backend.WorkflowRun
	// Not fsynced (writeRelaxed): a claim lost with the machine leaves its
	// runs claimable, and the claimer's first step write, fsynced, makes
	// the claim durable before it.
	err := b.writeRelaxed(ctx, func(tx *txn, now time.Time, ev *events) error {
		claimed = nil
		if err := b.failExpiredRuns(ctx, tx, now, ev); err != nil {
			return err
		}
		n := len(p.WorkerIDs)
		if n == 0 {
			return nil
		}
		caps, exclude := capsOf(p.Caps)
		admit := admittedWorkflows(p.Admit, caps)
		planned := len(admit) > 0 || len(caps) > 0
		var vtime int64 // the fair shares' virtual time, read by a planned claim
		cands, err := b.claimCandidates(ctx, tx, now, max(p.Lookahead, 0), n, p.Workflows, exclude, planned, &vtime)
		if err != nil {
			return err
		}
		var st backend.AdmissionState
		if planned {
			st = backend.AdmissionState{
				Limits: map[string]backend.Limits{}, Active: map[string]int{},
				KeyActive: map[backend.WorkflowKeyName]int{}, KeyStarts: map[backend.WorkflowKeyName]int{},
				VTime: vtime,
			}
			for _, name := range admit {
				queued, err := b.admissionCandidates(ctx, tx, now, name, n, &st)
				if err != nil {
					return fmt.Errorf("admission of workflow %q: %w", name, err)
				}
				for i := range queued {
					queued[i].Pass = vtime // not fair-queued: at the virtual time
				}
				cands = append(cands, queued...)
			}
			cands = backend.PlanClaim(cands, st, caps, n)
			if err := b.pruneLimitStarts(ctx, tx, now, admit, st); err != nil {
				return err
			}
		}
		for i, c := range cands {
			q := b.q.ClaimRun
			if c.Admit {
				q = b.q.AdmitRun
			}
			run, err := scanRun(tx.QueryRowContext(ctx, q,
				sql.Named("ns", b.ns),
				sql.Named("run_id", c.ID),
				sql.Named("worker_id", p.WorkerIDs[i]),
				sql.Named("lease_until", timeArg(now.Add(lease))),
				sql.Named("now", timeArg(now))))
			if err != nil {
				return fmt.Errorf("claim %s: %w", c.ID, err)
			}
			if c.Admit {
				if err := b.recordStart(ctx, tx, now, run, st); err != nil {
					return err
				}
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
	rows, err := tx.QueryContext(ctx, b.q.FailExpiredRuns,
		sql.Named("ns", b.ns),
		sql.Named("error", string(backend.DeadlineExceededError())),
		sql.Named("now", timeArg(now)))
	if err != nil {
		return fmt.Errorf("fail expired runs: %w", err)
	}
	var expired []*backend.WorkflowRun
	for rows.Next() {
		r, err := scanParentLink(rows)
		if err != nil {
			rows.Close()
			return err
		}
		expired = append(expired, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("fail expired runs: %w", err)
	}
	for _, r := range expired {
		ev.runFinished(b.ns, r.ID, nil)
		if err := b.wakeParent(ctx, tx, r, now, ev); err != nil {
			return err
		}
	}
	return nil
}

// claimCandidates returns up to n claimable runs in claim order, parked
// runs due within lookahead included. An ordinary claim reads only their
// ids; a planned one (backend.PlanClaim) reads what orders them too, and
// none of a workflow named in exclude.
func (b *Backend) claimCandidates(ctx context.Context, tx *txn, now time.Time, lookahead time.Duration, n int, workflows []backend.WorkflowKey, exclude []string, planned bool, vtime *int64) ([]backend.ClaimCandidate, error) {
	var filter any // NULL: any workflow; else [[name, version|null], …]
	if workflows != nil {
		pairs := make([][2]*string, len(workflows))
		for i, k := range workflows {
			pairs[i] = [2]*string{&k.Name, k.Version}
		}
		b, _ := json.Marshal(pairs)
		filter = string(b)
	}
	args := []any{sql.Named("ns", b.ns), sql.Named("now", timeArg(now)), sql.Named("ahead", timeArg(now.Add(lookahead))),
		sql.Named("limit", n), sql.Named("workflows", filter)}
	if !planned {
		ids, err := queryStrings(ctx, tx, b.q.ClaimCandidates, args...)
		if err != nil {
			return nil, fmt.Errorf("select claim candidates: %w", err)
		}
		out := make([]backend.ClaimCandidate, len(ids))
		for i, id := range ids {
			out[i].ID = id
		}
		return out, nil
	}
	var excluded any // NULL: none; else ["name", …]
	if len(exclude) > 0 {
		b, _ := json.Marshal(exclude)
		excluded = string(b)
	}
	rows, err := tx.QueryContext(ctx, b.q.ClaimPlanned, append(args, sql.Named("exclude", excluded))...)
	if err != nil {
		return nil, fmt.Errorf("select claim candidates: %w", err)
	}
	defer rows.Close()
	var out []backend.ClaimCandidate
	for rows.Next() {
		var c backend.ClaimCandidate
		var at, created string
		if err := rows.Scan(&c.ID, &c.WorkflowName, &c.Rank, &c.Priority, &at, &created, &c.Pass, vtime); err != nil {
			return nil, fmt.Errorf("select claim candidates: %w", err)
		}
		if c.At, err = backend.ParseTime(at); err != nil {
			return nil, fmt.Errorf("claim candidate %s: available_at: %w", c.ID, err)
		}
		if c.CreatedAt, err = backend.ParseTime(created); err != nil {
			return nil, fmt.Errorf("claim candidate %s: created_at: %w", c.ID, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("select claim candidates: %w", err)
	}
	return out, nil
}

// wakeParent makes a parked parent of the finished child claimable now
// (see wake_parent in sql/runs.sql), recording EventWorkAvailable if it
// did. child needs only its key and parent link (scanParentLink).
func (b *Backend) wakeParent(ctx context.Context, tx *txn, child *backend.WorkflowRun, now time.Time, ev *events) error {
	if child.ParentStepAttemptNamespaceID == nil || child.ParentStepAttemptID == nil {
		return nil
	}
	rows, err := tx.QueryContext(ctx, b.q.WakeParent,
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

// finishRun runs a fenced write that finishes the run (RETURNING
// parent_link, status, output, error) and returns the run's key, parent
// link and how it ended (for EventRunFinished), or the fence error.
func (b *Backend) finishRun(ctx context.Context, tx *txn, runID, query string, args ...any) (*backend.WorkflowRun, error) {
	run, err := scanFinished(tx.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, b.fenceError(ctx, tx, runID)
	}
	return run, err
}

// ExtendWorkflowRunLease is the heartbeat: the run's lease is moved to
// now + p.LeaseDuration (30 s when <= 0). It fails with
// [backend.ErrNotOwner] when the run is no longer running under
// p.WorkerID, or [backend.ErrRunNotFound]; with [backend.ErrRunPaused]
// (the lease renewed all the same) when the run is paused.
func (b *Backend) ExtendWorkflowRunLease(ctx context.Context, p backend.ExtendWorkflowRunLeaseParams) error {
	lease := p.LeaseDuration
	if lease <= 0 {
		lease = defaultLeaseDuration
	}
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		var paused bool
		err := tx.QueryRowContext(ctx, b.q.ExtendLease,
			sql.Named("ns", b.ns),
			sql.Named("run_id", p.WorkflowRunID),
			sql.Named("worker_id", p.WorkerID),
			sql.Named("lease_until", timeArg(now.Add(lease))),
			sql.Named("now", timeArg(now))).Scan(&paused)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return b.fenceError(ctx, tx, p.WorkflowRunID)
		case err == nil && paused:
			return fmt.Errorf("renewed, but the run is paused: start no further step and hand it back: %w", backend.ErrRunPaused)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("extend lease of workflow run %s: %w", p.WorkflowRunID, err)
	}
	return nil
}

// ReleaseWorkflowRuns implements [backend.Backend], publishing
// EventWorkAvailable when it released a run.
func (b *Backend) ReleaseWorkflowRuns(ctx context.Context, workerIDs []string) (int, error) {
	ids, _ := json.Marshal(workerIDs)
	var n int64
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		res, err := tx.ExecContext(ctx, b.q.ReleaseWorkerRuns,
			sql.Named("ns", b.ns), sql.Named("worker_ids", string(ids)), sql.Named("now", timeArg(now)))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err == nil && n > 0 {
			ev.workAvailable(b.ns)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("release the runs of workers %v: %w", workerIDs, err)
	}
	return int(n), nil
}

// CancelWorkflowRun cancels a pending or running run, wakes its parked
// parent and publishes EventRunFinished. Canceling a canceled run returns
// it unchanged; a completed or failed run gives an error wrapping
// [backend.ErrRunTerminal], a missing one [backend.ErrRunNotFound].
func (b *Backend) CancelWorkflowRun(ctx context.Context, workflowRunID string) (*backend.WorkflowRun, error) {
	var run *backend.WorkflowRun
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		var err error
		run, err = scanRun(tx.QueryRowContext(ctx, b.q.CancelRun,
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
		ev.runFinished(b.ns, run.ID, nil)
		return b.wakeParent(ctx, tx, run, now, ev)
	})
	if err != nil {
		return nil, fmt.Errorf("cancel workflow run %s: %w", workflowRunID, err)
	}
	return run, nil
}

// RetryWorkflowRun makes the failed run p.WorkflowRunID pending and due
// now (no error, finish time or worker; deadline p.DeadlineAt) and
// inserts the retry mark (a completed attempt of kind
// [backend.StepRetry]) in one BEGIN IMMEDIATE transaction, then publishes
// EventWorkAvailable. A missing run gives an error wrapping
// [backend.ErrRunNotFound], one that is not failed
// [backend.ErrRunNotFailed].
func (b *Backend) RetryWorkflowRun(ctx context.Context, p backend.RetryWorkflowRunParams) (*backend.WorkflowRun, error) {
	var run *backend.WorkflowRun
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		var err error
		run, err = scanRun(tx.QueryRowContext(ctx, b.q.RetryRun,
			sql.Named("ns", b.ns),
			sql.Named("run_id", p.WorkflowRunID),
			sql.Named("deadline_at", nullTimeArg(p.DeadlineAt)),
			sql.Named("now", timeArg(now))))
		if errors.Is(err, sql.ErrNoRows) {
			existing, err := b.getRun(ctx, tx, p.WorkflowRunID)
			if err != nil {
				return err
			}
			if existing.Status.Normalize() == backend.RunFailed {
				return fmt.Errorf("its history marks it never to be retried forward: %w", backend.ErrRunNotRetryable)
			}
			return fmt.Errorf("%w: status is %s", backend.ErrRunNotFailed, existing.Status)
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, b.q.InsertRetryMark,
			sql.Named("ns", b.ns),
			sql.Named("step_id", id.New(id.PrefixStep)),
			sql.Named("run_id", run.ID),
			sql.Named("attempts", run.Attempts),
			sql.Named("now", timeArg(now)))
		if err != nil {
			return err
		}
		ev.workAvailable(b.ns)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("retry workflow run %s: %w", p.WorkflowRunID, err)
	}
	return run, nil
}

// The transaction bodies of the fenced run transitions of ApplyWrites.
// JSON arguments are validated text (or nil for SQL NULL); a write the
// fence refuses returns the fence error.

// parkRun parks the run (see park_run in sql/writes.sql), recording
// EventWorkAvailable when it is claimable at once.
func (b *Backend) parkRun(ctx context.Context, tx *txn, now time.Time, ev *events, runID, workerID string, at time.Time) error {
	var availableAt string
	err := tx.QueryRowContext(ctx, b.q.ParkRun,
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

// completeRun completes the run with output (or fails it past its
// deadline) and wakes its parked parent.
func (b *Backend) completeRun(ctx context.Context, tx *txn, now time.Time, ev *events, runID, workerID string, output any) error {
	run, err := b.finishRun(ctx, tx, runID, b.q.CompleteRun,
		sql.Named("ns", b.ns),
		sql.Named("run_id", runID),
		sql.Named("worker_id", workerID),
		sql.Named("output", output),
		sql.Named("deadline_error", string(backend.DeadlineExceededError())),
		sql.Named("now", timeArg(now)))
	if err != nil {
		return err
	}
	ev.runFinished(b.ns, run.ID, finishedOf(run))
	return b.wakeParent(ctx, tx, run, now, ev)
}

// failRun fails the run for good with errJSON (valid JSON, or empty for
// none) and wakes its parked parent.
func (b *Backend) failRun(ctx context.Context, tx *txn, now time.Time, ev *events, runID, workerID string, errJSON json.RawMessage) error {
	run, err := b.finishRun(ctx, tx, runID, b.q.FailRun,
		sql.Named("ns", b.ns),
		sql.Named("run_id", runID),
		sql.Named("worker_id", workerID),
		sql.Named("error", storedError(errJSON)),
		sql.Named("now", timeArg(now)))
	if err != nil {
		return err
	}
	ev.runFinished(b.ns, run.ID, finishedOf(run))
	return b.wakeParent(ctx, tx, run, now, ev)
}

// rescheduleRun sets the run pending again at retryAt with errJSON (a
// retry), recording EventWorkAvailable when it is claimable at once.
func (b *Backend) rescheduleRun(ctx context.Context, tx *txn, now time.Time, ev *events, runID, workerID string, retryAt time.Time, errJSON json.RawMessage) error {
	var got string
	err := tx.QueryRowContext(ctx, b.q.RescheduleRun,
		sql.Named("ns", b.ns),
		sql.Named("run_id", runID),
		sql.Named("worker_id", workerID),
		sql.Named("available_at", timeArg(retryAt)),
		sql.Named("error", storedError(errJSON)),
		sql.Named("now", timeArg(now))).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return b.fenceError(ctx, tx, runID)
	}
	if err != nil {
		return err
	}
	if !retryAt.After(now) {
		ev.workAvailable(b.ns)
	}
	return nil
}

// storedError is a run's error column for errJSON: its text, or nil (SQL
// NULL) when empty.
func storedError(errJSON json.RawMessage) any {
	if len(errJSON) == 0 {
		return nil
	}
	return string(errJSON)
}

// NextDueAt implements [backend.DueTimer].
func (b *Backend) NextDueAt(ctx context.Context) (time.Time, bool, error) {
	var t sql.NullString
	if err := b.read(ctx, func() error {
		return b.db.QueryRowContext(ctx, b.q.NextDue, sql.Named("ns", b.ns), sql.Named("now", timeArg(b.now()))).Scan(&t)
	}); err != nil {
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
