package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// wakeTimeout bounds the follow-up statement that wakes a parent or
// reconciles a park; it runs even if the caller's context ends just after
// the main write committed, since a missed wake-up would leave a parent
// parked until its timeout.
const wakeTimeout = 10 * time.Second

// CreateWorkflowRun implements [backend.Backend]. A keyed create runs in a
// transaction holding pg_advisory_xact_lock on the (namespace, workflow
// name, key) — the same lock OpenWorkflow takes —, returns the oldest run
// with that key created within [backend.IdempotencyPeriod] if there is one,
// and inserts otherwise. A run claimable at once is announced to
// subscribers.
func (b *Backend) CreateWorkflowRun(ctx context.Context, p backend.CreateWorkflowRunParams) (run *backend.WorkflowRun, err error) {
	if err := validateCreate(p); err != nil {
		return nil, fmt.Errorf("create workflow run: %w", err)
	}
	defer func() {
		if err == nil {
			b.stats.wrote(runsTable, 1) // toward its first ANALYZE (statistics.go)
		}
	}()
	runID := id.New(id.PrefixRun)
	var esc escapes
	args := b.insertRunArgs(runID, p, &esc)
	if p.IdempotencyKey == nil && len(p.SearchAttributes) == 0 && p.Singleton == nil && p.Fairness == nil {
		err := b.withEscapes(ctx, &esc, func(q querier) (err error) {
			run, err = queryRun(ctx, q, b.q.InsertRun, args...)
			return err
		})
		if err == nil {
			err = b.decodeRuns(ctx, run)
		}
		if err != nil {
			return run, fmt.Errorf("create workflow run %q: %w", p.WorkflowName, missingParent([]backend.CreateWorkflowRunParams{p}, err))
		}
		return run, nil
	}

	err = b.inTx(ctx, func(tx pgx.Tx) (err error) {
		run, _, err = b.createInTx(ctx, tx, p, &esc, args)
		return err
	})
	if err == nil {
		err = b.decodeRuns(ctx, run)
	}
	if err != nil {
		if p.IdempotencyKey == nil {
			return run, fmt.Errorf("create workflow run %q: %w", p.WorkflowName, missingParent([]backend.CreateWorkflowRunParams{p}, err))
		}
		return run, fmt.Errorf("create workflow run %q with idempotency key %q: %w", p.WorkflowName, *p.IdempotencyKey, err)
	}
	return run, nil
}

// insertRunArgs are the arguments of insert_run for run runID of p, its
// escaped values noted in esc: every path that inserts one run (a create,
// a create in the caller's transaction, a schedule's tick) passes these.
func (b *Backend) insertRunArgs(runID string, p backend.CreateWorkflowRunParams, esc *escapes) []any {
	var claimWorker *string
	var claimLease int64
	if p.Claim != nil {
		claimWorker, claimLease = &p.Claim.WorkerID, durationMs(p.Claim.LeaseDuration)
	}
	return []any{
		b.namespace, runID, p.WorkflowName, p.Version, p.IdempotencyKey,
		esc.jsonOr(b.namespace, tableRuns, runID, "config", p.Config, "{}"),
		esc.json(b.namespace, tableRuns, runID, "context", p.Context),
		esc.json(b.namespace, tableRuns, runID, "input", p.Input),
		p.ParentStepAttemptNamespaceID, p.ParentStepAttemptID,
		msPtr(p.AvailableAt), msPtr(p.DeadlineAt), int32(p.Priority), p.ConcurrencyKey, b.at(),
		claimWorker, claimLease,
	}
}

// idempotencyLockKey is the text OpenWorkflow hashes for the advisory lock
// of a keyed create: JavaScript's JSON.stringify({namespaceId, workflowName,
// idempotencyKey}).
func idempotencyLockKey(namespace, workflowName, key string) string {
	var sb strings.Builder
	sb.WriteString(`{"namespaceId":`)
	writeJSString(&sb, namespace)
	sb.WriteString(`,"workflowName":`)
	writeJSString(&sb, workflowName)
	sb.WriteString(`,"idempotencyKey":`)
	writeJSString(&sb, key)
	sb.WriteString(`}`)
	return sb.String()
}

// writeJSString writes s as JSON.stringify does: only '"', '\\' and control
// characters are escaped (Go's encoding/json also escapes HTML characters
// and U+2028/U+2029, which would change the lock key).
func writeJSString(sb *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	sb.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"':
			sb.WriteString(`\"`)
		case r == '\\':
			sb.WriteString(`\\`)
		case r == '\b':
			sb.WriteString(`\b`)
		case r == '\f':
			sb.WriteString(`\f`)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r < 0x20:
			sb.WriteString(`\u00`)
			sb.WriteByte(hex[r>>4])
			sb.WriteByte(hex[r&0xf])
		default:
			sb.WriteRune(r) // invalid UTF-8 becomes U+FFFD, as in a JS string
		}
	}
	sb.WriteByte('"')
}

// GetWorkflowRun implements [backend.Backend].
func (b *Backend) GetWorkflowRun(ctx context.Context, workflowRunID string) (*backend.WorkflowRun, error) {
	if !backend.ValidText(workflowRunID) { // no stored id has such bytes (and PostgreSQL refuses them)
		return nil, fmt.Errorf("get workflow run %q: %w", workflowRunID, backend.ErrRunNotFound)
	}
	var run *backend.WorkflowRun
	err := b.readPool(ctx, func(db *pgxpool.Pool) (err error) {
		run, err = queryRun(ctx, db, b.q.GetRun, b.namespace, workflowRunID)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("get workflow run %s: %w", workflowRunID, backend.ErrRunNotFound)
	}
	if err == nil {
		err = b.decodeRuns(ctx, run)
	}
	if err != nil {
		return nil, fmt.Errorf("get workflow run %s: %w", workflowRunID, err)
	}
	return run, nil
}

// ListWorkflowRuns implements [backend.Backend]: newest first, filtered by
// status (a legacy status counts as its current name), workflow name and
// creation time (at or after p.CreatedAfter, before p.CreatedBefore).
func (b *Backend) ListWorkflowRuns(ctx context.Context, p backend.ListWorkflowRunsParams) (*backend.Page[backend.WorkflowRun], error) {
	limit, after, before, err := pageParams(p.Limit, p.After, p.Before)
	if err != nil {
		return nil, fmt.Errorf("list workflow runs: %w", err)
	}
	if !backend.ValidText(p.WorkflowName) { // no run has such a name
		return &backend.Page[backend.WorkflowRun]{Data: []backend.WorkflowRun{}}, nil
	}
	sql, args, err := b.listRunsSQL(ctx, p, after, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list workflow runs: %w", err)
	}
	var runs []*backend.WorkflowRun
	err = b.readPool(ctx, func(db *pgxpool.Pool) error {
		qctx, cancel := context.WithCancel(ctx)
		defer cancel()
		rows, err := db.Query(qctx, sql, args...)
		if err != nil {
			return err
		}
		runs, limit, err = collectPage(rows, cancel, scanRun, (*backend.WorkflowRun).PayloadBytes, p.MaxBytes, limit)
		return err
	})
	if err == nil {
		err = b.decodeRuns(ctx, runs...)
	}
	if err != nil {
		return nil, fmt.Errorf("list workflow runs: %w", err)
	}
	return buildPage(runs, limit, after != nil, before != nil, func(r *backend.WorkflowRun) backend.Cursor {
		return backend.Cursor{CreatedAt: r.CreatedAt, ID: r.ID}
	}), nil
}

// listRunsSQL returns the statement and arguments of one page of
// ListWorkflowRuns: with a query, read from the value's index range when
// it requires attrs.x = v (listRunsByAttribute), else the runs in list
// order with the query's conditions; without, listRunsQuery.
func (b *Backend) listRunsSQL(ctx context.Context, p backend.ListWorkflowRunsParams, after, before *backend.Cursor, limit int) (string, []any, error) {
	if p.Query == nil {
		sql, args := b.listRunsQuery(p, after, before, limit)
		return sql, args, nil
	}
	sql, args, byAttr, err := b.listRunsByAttribute(ctx, p, after, before, limit)
	if err != nil || byAttr {
		return sql, args, err
	}
	base := b.q.ListRuns
	if p.OmitPayloads {
		base = b.q.ListRunsSummary
	}
	q := newPageQuery(base, b.namespace)
	cond, err := b.matchConditions(ctx, p, &q.args)
	if err != nil {
		return "", nil, err
	}
	q.sql.WriteString(cond)
	return q.finish("wr", true, after, before, limit), q.args, nil
}

// storedRunStatuses are the values workflow_runs.status holds: the current
// statuses and the legacy ones OpenWorkflow wrote before 0.8.0.
var storedRunStatuses = []backend.RunStatus{
	backend.RunPending, backend.RunRunning, backend.RunSleeping, backend.RunCompleted,
	backend.RunSucceeded, backend.RunFailed, backend.RunCanceled,
}

// listedStatuses are the stored statuses a list filtered by status reads:
// the status itself and the legacy statuses read as it ("completed" is
// also "succeeded", "running" also "sleeping"); with no status, every
// stored status.
func listedStatuses(status backend.RunStatus) []backend.RunStatus {
	if status == "" {
		return storedRunStatuses
	}
	want := status.Normalize()
	var ss []backend.RunStatus
	for _, s := range storedRunStatuses {
		if s.Normalize() == want {
			ss = append(ss, s)
		}
	}
	if len(ss) == 0 {
		ss = append(ss, want) // no run has it; read it anyway, as before
	}
	return ss
}

// listRunsQuery returns the statement and arguments of one page of
// ListWorkflowRuns, the way OpenWorkflow's lists work (see pageQuery): a
// Before cursor scans the other way and buildPage reverses the rows.
//
// Without status or name filter it reads OpenWorkflow's (namespace_id,
// created_at DESC) index, from the created range's end when one is given. A filtered list reads every stored status it covers as its own
// branch, each one index range of OpenWorkflow's (namespace_id, status,
// created_at DESC) or (namespace_id, workflow_name, status, created_at
// DESC) index, in created_at order from the cursor, stopping after
// limit+1 rows and the rows sharing the last one's created_at (FETCH FIRST
// … WITH TIES: the index has no id, and a run among a branch's first
// limit+1 by (created_at, id) is always among its first limit+1 by
// created_at with ties). The planner merges the branches in created_at
// order and sorts each created_at by id, or sorts their few rows: either
// way a page reads at most about limit+1 rows per branch, plus one index
// probe per branch, however many runs the namespace holds. A status filter
// reads one or two branches, a workflow name without status the seven
// stored statuses (so a run whose stored status is none of them, which no
// SDK writes, is not listed by workflow name).
//
// Indexes keyed on the status as read, in (created_at, id) order, would
// make each list one index range, but every run transition would pay for
// them (docs/scale.md); go migration 2 dropped them.
func (b *Backend) listRunsQuery(p backend.ListWorkflowRunsParams, after, before *backend.Cursor, limit int) (string, []any) {
	base := b.q.ListRuns
	if p.OmitPayloads {
		base = b.q.ListRunsSummary
	}
	if p.Status == "" && p.WorkflowName == "" {
		q := newPageQuery(base, b.namespace)
		if p.CreatedAfter != nil {
			q.and(`wr."created_at" >= %s`, *p.CreatedAfter)
		}
		if p.CreatedBefore != nil {
			q.and(`wr."created_at" < %s`, *p.CreatedBefore)
		}
		return q.finish("wr", true, after, before, limit), q.args
	}
	dir, cur, op := scanDirection(true, after, before)
	args := []any{b.namespace}
	param := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var filter strings.Builder
	if p.WorkflowName != "" {
		fmt.Fprintf(&filter, "\n    AND wr.\"workflow_name\" = %s", param(p.WorkflowName))
	}
	if p.CreatedAfter != nil {
		fmt.Fprintf(&filter, "\n    AND wr.\"created_at\" >= %s", param(*p.CreatedAfter))
	}
	if p.CreatedBefore != nil {
		fmt.Fprintf(&filter, "\n    AND wr.\"created_at\" < %s", param(*p.CreatedBefore))
	}
	if cur != nil {
		fmt.Fprintf(&filter, "\n    AND (wr.\"created_at\", wr.\"id\") %s (%s, %s)", op, param(cur.CreatedAt), param(cur.ID))
	}
	var sql strings.Builder
	sql.WriteString("SELECT wr.*\nFROM (") // the branches select the run columns, in order
	for i, s := range listedStatuses(p.Status) {
		if i > 0 {
			sql.WriteString("\nUNION ALL")
		}
		fmt.Fprintf(&sql, "\n  (%s\n    AND wr.\"status\" = %s%s\n  ORDER BY wr.\"created_at\" %s\n  FETCH FIRST %d ROWS WITH TIES)",
			strings.ReplaceAll(strings.TrimSpace(base), "\n", "\n  "), param(string(s)), filter.String(), dir, limit+1)
	}
	sql.WriteString("\n) AS wr" + orderAndLimit("wr", dir, limit))
	return sql.String(), args
}

// CountWorkflowRuns implements [backend.Backend] by summing the counters
// that the triggers of go migration 6 keep for every writer of
// workflow_runs, the TypeScript SDK's included: exact, and as fast with a
// million runs as with none. When the namespace has more than
// foldCountRowsAbove counter rows it then folds those of ended sessions
// (fold_run_counts); the counts it returns do not depend on the fold,
// whose failure is ignored (the next count tries again).
func (b *Backend) CountWorkflowRuns(ctx context.Context) (backend.RunCounts, error) {
	var counts backend.RunCounts
	var total int
	err := b.readPool(ctx, func(db *pgxpool.Pool) error {
		counts, total = backend.RunCounts{}, 0
		rows, err := db.Query(ctx, b.q.CountRuns, b.namespace)
		if err != nil {
			return err
		}
		var status string
		var n, slots int
		_, err = pgx.ForEachRow(rows, []any{&status, &n, &slots}, func() error {
			counts.Add(backend.RunStatus(status), n)
			total += slots
			return nil
		})
		return err
	})
	if err != nil {
		return backend.RunCounts{}, fmt.Errorf("count workflow runs: %w", err)
	}
	if total > foldCountRowsAbove {
		_, _ = b.pool.Exec(ctx, b.q.FoldRunCounts, b.namespace)
	}
	return counts, nil
}

// foldCountRowsAbove is how many counter rows a namespace may have (a row
// per session that wrote runs and status) before CountWorkflowRuns folds
// those of ended sessions.
const foldCountRowsAbove = 1000

// ClaimWorkflowRuns implements [backend.Backend] with one statement (see
// sqlClaimRuns): deadline sweep, then up to len(p.WorkerIDs) candidates
// locked FOR UPDATE SKIP LOCKED, so concurrent claimers never take the same
// run. The runs are returned in claim order: the i-th has worker id
// p.WorkerIDs[i].
func (b *Backend) ClaimWorkflowRuns(ctx context.Context, p backend.ClaimWorkflowRunsParams) ([]*backend.WorkflowRun, error) {
	if p.WorkerIDs == nil {
		p.WorkerIDs = []string{} // with none, the statement only runs its deadline sweep
	}
	var names []string
	var versions []*string
	if p.Workflows != nil {
		names, versions = make([]string, len(p.Workflows)), make([]*string, len(p.Workflows))
		for i, k := range p.Workflows {
			names[i], versions[i] = k.Name, k.Version
		}
	}
	if len(p.WorkerIDs) > 0 && (len(p.Admit) > 0 || len(p.Caps) > 0) {
		return b.claimLimited(ctx, p, names, versions)
	}
	// One statement, its own implicit transaction, committed asynchronously
	// when it claimed a run (sqlClaimRuns, step 4).
	rows, err := b.pool.Query(ctx, b.q.ClaimRuns, b.namespace, p.WorkerIDs, durationMs(p.LeaseDuration), names, versions, durationMs(max(p.Lookahead, 0)), b.at())
	var runs []*backend.WorkflowRun
	if err == nil {
		runs, err = pgx.CollectRows(rows, scanRun)
	}
	if err == nil {
		// A failed lookup leaves the runs claimed: their leases run out.
		err = b.decodeRuns(ctx, runs...)
	}
	if err != nil {
		return nil, fmt.Errorf("claim workflow runs: %w", err)
	}
	return runs, nil
}

// ExtendWorkflowRunLease implements [backend.Backend].
func (b *Backend) ExtendWorkflowRunLease(ctx context.Context, p backend.ExtendWorkflowRunLeaseParams) error {
	var paused bool
	err := b.pool.QueryRow(ctx, b.q.ExtendLease, b.namespace, p.WorkflowRunID, p.WorkerID, durationMs(p.LeaseDuration), b.at()).Scan(&paused)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return b.fenceError(ctx, "extend lease", p.WorkflowRunID, p.WorkerID)
	case err != nil:
		return fmt.Errorf("extend lease of workflow run %s: %w", p.WorkflowRunID, err)
	case paused:
		return fmt.Errorf("extend lease of workflow run %s: renewed, but the run is paused: start no further step and hand it back: %w",
			p.WorkflowRunID, backend.ErrRunPaused)
	}
	return nil
}

// ReleaseWorkflowRuns implements [backend.Backend]; each released run is
// announced.
func (b *Backend) ReleaseWorkflowRuns(ctx context.Context, workerIDs []string) (int, error) {
	var n int
	if err := b.pool.QueryRow(ctx, b.q.ReleaseWorkerRuns, b.namespace, workerIDs, b.at()).Scan(&n); err != nil {
		return 0, fmt.Errorf("release the runs of workers %v: %w", workerIDs, err)
	}
	return n, nil
}

// CancelWorkflowRun implements [backend.Backend]. The cancellation is
// announced as finished and wakes a parked parent.
func (b *Backend) CancelWorkflowRun(ctx context.Context, workflowRunID string) (*backend.WorkflowRun, error) {
	if !backend.ValidText(workflowRunID) {
		return nil, fmt.Errorf("cancel workflow run %q: %w", workflowRunID, backend.ErrRunNotFound)
	}
	run, err := b.writeRun(ctx, nil, b.q.CancelRun, b.namespace, workflowRunID, b.at())
	if errors.Is(err, pgx.ErrNoRows) {
		existing, err := b.GetWorkflowRun(ctx, workflowRunID)
		if err != nil {
			return nil, fmt.Errorf("cancel: %w", err)
		}
		if existing.Status == backend.RunCanceled {
			return existing, nil
		}
		return nil, fmt.Errorf("cannot cancel workflow run %s with status %s: %w", workflowRunID, existing.Status, backend.ErrRunTerminal)
	}
	if run == nil {
		return nil, fmt.Errorf("cancel workflow run %s: %w", workflowRunID, err)
	}
	if werr := b.wakeParent(ctx, run); werr != nil {
		return run, werr
	}
	if err != nil {
		return run, fmt.Errorf("cancel workflow run %s: %w", workflowRunID, err)
	}
	return run, nil
}

// RetryWorkflowRun implements [backend.Client] with one statement
// (retry_run in sql/runs.sql): the run update and the retry mark land
// together or not at all, and the run is announced as work. A missing run
// gives an error wrapping [backend.ErrRunNotFound], one that is not failed
// (a concurrent retry came first, say) [backend.ErrRunNotFailed].
func (b *Backend) RetryWorkflowRun(ctx context.Context, p backend.RetryWorkflowRunParams) (*backend.WorkflowRun, error) {
	if !backend.ValidText(p.WorkflowRunID) {
		return nil, fmt.Errorf("retry workflow run %q: %w", p.WorkflowRunID, backend.ErrRunNotFound)
	}
	run, err := b.writeRun(ctx, nil, b.q.RetryRun, b.namespace, p.WorkflowRunID, id.New(id.PrefixStep), msPtr(p.DeadlineAt), b.at())
	if errors.Is(err, pgx.ErrNoRows) {
		existing, err := b.GetWorkflowRun(ctx, p.WorkflowRunID)
		if err != nil {
			return nil, fmt.Errorf("retry: %w", err)
		}
		if existing.Status.Normalize() == backend.RunFailed {
			return nil, fmt.Errorf("cannot retry workflow run %s: its history marks it never to be retried forward: %w", p.WorkflowRunID, backend.ErrRunNotRetryable)
		}
		return nil, fmt.Errorf("cannot retry workflow run %s with status %s: %w", p.WorkflowRunID, existing.Status, backend.ErrRunNotFailed)
	}
	if err != nil {
		return run, fmt.Errorf("retry workflow run %s: %w", p.WorkflowRunID, err)
	}
	return run, nil
}

// wakeParent makes run's parent due now if it is parked waiting on run. It
// is a separate statement, after run's terminal write committed.
func (b *Backend) wakeParent(ctx context.Context, run *backend.WorkflowRun) error {
	if run.ParentStepAttemptNamespaceID == nil || run.ParentStepAttemptID == nil {
		return nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wakeTimeout)
	defer cancel()
	_, err := b.pool.Exec(wctx, b.q.WakeParent, *run.ParentStepAttemptNamespaceID, *run.ParentStepAttemptID,
		run.NamespaceID, run.ID, b.at())
	if err != nil {
		return fmt.Errorf("workflow run %s finished but its parent could not be woken: %w", run.ID, err)
	}
	return nil
}

// querier is what pool, connection and transaction have in common.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// writeRun runs a write returning at most one run (pgx.ErrNoRows when
// none), recording the escaped values it stores (e may be nil), and
// decodes the run read back. A failed decoding returns the run (the write
// applied) with the error.
func (b *Backend) writeRun(ctx context.Context, e *escapes, sql string, args ...any) (*backend.WorkflowRun, error) {
	var run *backend.WorkflowRun
	err := b.withEscapes(ctx, e, func(q querier) (err error) {
		run, err = queryRun(ctx, q, sql, args...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return run, b.decodeRuns(ctx, run)
}

// queryRun runs a query returning at most one run; pgx.ErrNoRows when none.
// Its JSON values are as stored (see decodeRuns).
func queryRun(ctx context.Context, q querier, sql string, args ...any) (*backend.WorkflowRun, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectExactlyOneRow(rows, scanRun)
}

// NextDueAt implements [backend.DueTimer] with one query of three
// index-ordered probes (see sqlNextDue).
func (b *Backend) NextDueAt(ctx context.Context) (time.Time, bool, error) {
	var t *time.Time
	var dbNow time.Time
	if err := b.pool.QueryRow(ctx, b.q.NextDue, b.namespace, b.at()).Scan(&t, &dbNow); err != nil {
		return time.Time{}, false, fmt.Errorf("next due run: %w", err)
	}
	if t == nil {
		return time.Time{}, false, nil
	}
	// Claims compare available_at with the database's clock: say when that
	// is by ours, so a worker whose clock runs ahead of the database's does
	// not wake, claim nothing and ask again in a loop until they agree.
	return b.now().Add(t.Sub(dbNow)).UTC(), true, nil
}
