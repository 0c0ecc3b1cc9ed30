package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// CreateWorkflowRuns implements [backend.Batcher]. Every entry is validated
// first (a bad one fails the call, naming its index, before anything is
// written). Runs without an idempotency key are inserted by one statement
// (INSERT … SELECT FROM unnest of one array per column, which measured as
// fast as COPY into a temporary table for 5,000 runs — within noise — while
// needing one statement instead of a temporary table and four; see
// docs/scale.md); when no entry has a key, the runs are not read back but
// built from their inputs and the insert's clock (insertedRun). Keyed
// entries take CreateWorkflowRun's path — the advisory lock on (namespace,
// workflow name, key), then the oldest run within
// [backend.IdempotencyPeriod] or an insert — one by one, in lock-key order
// so concurrent batches cannot deadlock, in the same transaction, so a key
// repeated within the batch yields one run. One pg_notify announces
// the batch if any run is claimable now.
func (b *Backend) CreateWorkflowRuns(ctx context.Context, ps []backend.CreateWorkflowRunParams) (created []*backend.WorkflowRun, err error) {
	if len(ps) == 0 {
		return []*backend.WorkflowRun{}, nil
	}
	defer func() {
		if err == nil {
			b.stats.wrote(runsTable, len(created)) // toward its first ANALYZE (statistics.go)
		}
	}()
	var plain, keyed []int
	withAttrs := false // runs with search attributes take the transaction
	for i, p := range ps {
		withAttrs = withAttrs || len(p.SearchAttributes) > 0
		if err := validateCreate(p); err != nil {
			return nil, fmt.Errorf("create workflow runs: entry %d: %w", i, err)
		}
		if p.Singleton != nil {
			return nil, fmt.Errorf("create workflow runs: entry %d: %w", i, backend.ErrSingletonBatch)
		}
		if p.IdempotencyKey == nil {
			plain = append(plain, i)
		} else {
			keyed = append(keyed, i)
		}
	}
	runs := make([]*backend.WorkflowRun, len(ps))
	if len(keyed) == 0 && !withAttrs {
		// One round trip, one implicit transaction: insert, then notify
		// and read the clock that stamped the runs, which are built from
		// their inputs rather than read back.
		var esc escapes
		ids, args := b.runArrays(ps, plain, &esc)
		at := b.at() // one clock for the insert and the time it returns
		batch := &pgx.Batch{}
		batch.Queue(b.q.InsertRunsUnread, append(args, at)...)
		batch.Queue(b.q.NotifyWorkIfDue, b.namespace, earliestAvailable(ps, plain), at)
		recorded := b.queueRecord(batch, &esc)
		var fair int
		if fairIDs, fairKeys, fairWeights, ok := fairArrays(ids, ps, plain); ok {
			fair = queueSetFairness(batch, b.q.SetFairness, b.namespace, fairIDs, fairKeys, fairWeights, at)
		}
		br := b.pool.SendBatch(ctx, batch)
		var inserted int
		var queued []string
		err := br.QueryRow().Scan(&inserted, &queued)
		if err == nil && inserted != len(plain) {
			err = fmt.Errorf("inserted %d runs, want %d", inserted, len(plain))
		}
		var now time.Time
		if err == nil {
			err = br.QueryRow().Scan(&now, nil)
		}
		if err == nil && recorded {
			_, err = br.Exec()
		}
		for range fair {
			if err == nil {
				_, err = br.Exec()
			}
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("create %d workflow runs: %w", len(ps), missingParent(ps, err))
		}
		waiting := make(map[string]bool, len(queued))
		for _, id := range queued {
			waiting[id] = true
		}
		for k, i := range plain {
			runs[i] = b.insertedRun(ids[k], ps[i], now, waiting[ids[k]])
		}
		return runs, nil
	}

	sort.SliceStable(keyed, func(a, c int) bool {
		return idempotencyLockKey(b.namespace, ps[keyed[a]].WorkflowName, *ps[keyed[a]].IdempotencyKey) <
			idempotencyLockKey(b.namespace, ps[keyed[c]].WorkflowName, *ps[keyed[c]].IdempotencyKey)
	})
	var esc escapes
	err = b.inTx(ctx, func(tx pgx.Tx) error {
		esc = escapes{}
		var inserted []int // positions in ps
		for _, i := range keyed {
			p := ps[i]
			if _, err := tx.Exec(ctx, b.q.LockIdempotencyKey, idempotencyLockKey(b.namespace, p.WorkflowName, *p.IdempotencyKey)); err != nil {
				return err
			}
			existing, err := queryRun(ctx, tx, b.q.GetRunByIdempotencyKey,
				b.namespace, p.WorkflowName, *p.IdempotencyKey, durationMs(backend.IdempotencyPeriod), b.at())
			if err == nil {
				existing.Reused = true
				runs[i] = existing
				continue
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			_, args := b.runArrays(ps, []int{i}, &esc)
			rows, err := tx.Query(ctx, b.q.InsertRunsReadBack, append(args, b.at())...)
			if err != nil {
				return err
			}
			if runs[i], err = pgx.CollectExactlyOneRow(rows, scanRun); err != nil {
				return err
			}
			inserted = append(inserted, i)
		}
		if len(plain) > 0 {
			_, args := b.runArrays(ps, plain, &esc)
			rows, err := tx.Query(ctx, b.q.InsertRunsReadBack, append(args, b.at())...)
			if err != nil {
				return err
			}
			got, err := pgx.CollectRows(rows, scanRun)
			if err != nil {
				return err
			}
			if len(got) != len(plain) {
				return fmt.Errorf("inserted %d runs, want %d", len(got), len(plain))
			}
			for k, i := range plain {
				runs[i] = got[k]
			}
			inserted = append(inserted, plain...)
		}
		if len(inserted) == 0 {
			return nil
		}
		for _, i := range inserted {
			if len(ps[i].SearchAttributes) > 0 {
				if err := b.writeSearchAttributes(ctx, tx, runs[i].ID, runs[i].CreatedAt, ps[i].SearchAttributes, false); err != nil {
					return fmt.Errorf("entry %d: %w", i, err)
				}
			}
		}
		if err := b.recordEscapes(ctx, tx, &esc); err != nil {
			return err
		}
		insertedIDs := make([]string, len(inserted))
		for k, i := range inserted {
			insertedIDs[k] = runs[i].ID
		}
		if fairIDs, keys, weights, ok := fairArrays(insertedIDs, ps, inserted); ok {
			batch := &pgx.Batch{}
			queueSetFairness(batch, b.q.SetFairness, b.namespace, fairIDs, keys, weights, b.at())
			if err := tx.SendBatch(ctx, batch).Close(); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, b.q.NotifyWorkIfDue, b.namespace, earliestAvailable(ps, inserted), b.at())
		return err
	})
	if err == nil {
		err = b.decodeRuns(ctx, runs...)
	}
	if err != nil {
		return nil, fmt.Errorf("create %d workflow runs (%d with idempotency keys): %w", len(ps), len(keyed), missingParent(ps, err))
	}
	return runs, nil
}

// missingParent turns the violation of workflow_runs_parent_step_attempt_fk
// (an entry naming a parent step attempt that does not exist) into an
// error wrapping backend.ErrInvalidArgument that names the entry; other
// errors are returned as they are. Nothing was inserted: the statement,
// or the transaction, failed as a whole.
func missingParent(ps []backend.CreateWorkflowRunParams, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23503" || pgErr.ConstraintName != "workflow_runs_parent_step_attempt_fk" {
		return err
	}
	for i, p := range ps {
		if p.ParentStepAttemptID != nil && strings.Contains(pgErr.Detail, *p.ParentStepAttemptID) {
			return fmt.Errorf("entry %d: %w: parent step attempt %s does not exist", i, backend.ErrInvalidArgument, *p.ParentStepAttemptID)
		}
	}
	return fmt.Errorf("%w: a parent step attempt does not exist (%s)", backend.ErrInvalidArgument, pgErr.Detail)
}

// validateCreate checks one entry as CreateWorkflowRun does.
func validateCreate(p backend.CreateWorkflowRunParams) error { return p.Validate() }

// runArrays returns new run ids for ps[idx...] and the arguments of
// sqlInsertRuns: one array per column. The escaped values are noted in e.
func (b *Backend) runArrays(ps []backend.CreateWorkflowRunParams, idx []int, e *escapes) ([]string, []any) {
	n := len(idx)
	ids := make([]string, n)
	names := make([]string, n)
	versions, keys := make([]*string, n), make([]*string, n)
	configs, contexts, inputs := make([]*string, n), make([]*string, n), make([]*string, n)
	parentNS, parentID := make([]*string, n), make([]*string, n)
	availableAt, deadlineAt := make([]*time.Time, n), make([]*time.Time, n)
	priorities, concurrencyKeys := make([]int32, n), make([]*string, n)
	for k, i := range idx {
		p := ps[i]
		ids[k] = id.New(id.PrefixRun)
		names[k] = p.WorkflowName
		versions[k], keys[k] = p.Version, p.IdempotencyKey
		configs[k] = e.jsonText(b.namespace, tableRuns, ids[k], "config", p.Config)
		contexts[k] = e.jsonText(b.namespace, tableRuns, ids[k], "context", p.Context)
		inputs[k] = e.jsonText(b.namespace, tableRuns, ids[k], "input", p.Input)
		parentNS[k], parentID[k] = p.ParentStepAttemptNamespaceID, p.ParentStepAttemptID
		availableAt[k], deadlineAt[k] = msPtr(p.AvailableAt), msPtr(p.DeadlineAt)
		priorities[k], concurrencyKeys[k] = int32(p.Priority), p.ConcurrencyKey
	}
	return ids, []any{b.namespace, ids, names, versions, keys, configs, contexts, inputs,
		parentNS, parentID, availableAt, deadlineAt, priorities, concurrencyKeys}
}

// earliestAvailable is the earliest available_at of the runs ps[idx...]
// (truncated to milliseconds as stored); nil when one has none, being
// available as soon as it is inserted.
func earliestAvailable(ps []backend.CreateWorkflowRunParams, idx []int) *time.Time {
	var earliest *time.Time
	for _, i := range idx {
		at := msPtr(ps[i].AvailableAt)
		if at == nil {
			return nil
		}
		if earliest == nil || at.Before(*earliest) {
			earliest = at
		}
	}
	return earliest
}

// insertedRun is the run sqlInsertRunsUnread stored for p under id, its
// clock now, queued when it waits for admission: what reading it back
// would return, except that its JSON is the bytes given rather than
// PostgreSQL's jsonb rendering of them (same values; key order and spacing
// may differ).
func (b *Backend) insertedRun(id string, p backend.CreateWorkflowRunParams, now time.Time, queued bool) *backend.WorkflowRun {
	now = now.UTC()
	r := &backend.WorkflowRun{
		NamespaceID: b.namespace, ID: id, WorkflowName: p.WorkflowName, Version: p.Version,
		Status: backend.RunPending, Config: p.Config, Context: p.Context, Input: p.Input,
		ParentStepAttemptNamespaceID: p.ParentStepAttemptNamespaceID, ParentStepAttemptID: p.ParentStepAttemptID,
		AvailableAt: msPtr(p.AvailableAt), DeadlineAt: msPtr(p.DeadlineAt),
		CreatedAt: now, UpdatedAt: now,
	}
	if r.Config == nil {
		r.Config = json.RawMessage(`{}`)
	}
	if r.AvailableAt == nil {
		r.AvailableAt = &now
	}
	r.Priority = p.Priority
	if p.ConcurrencyKey != nil && *p.ConcurrencyKey != "" {
		r.ConcurrencyKey = p.ConcurrencyKey
	}
	if queued {
		r.QueuedAt, r.AvailableAt = r.AvailableAt, nil
	}
	return r
}
