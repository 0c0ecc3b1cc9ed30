package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.LimitStore = (*Backend)(nil)

// PutWorkflowLimits implements [backend.LimitStore]: one upsert that
// returns a row only when the stored limits changed, and brings the
// workflow's backlog under them (put_limits).
func (b *Backend) PutWorkflowLimits(ctx context.Context, workflowName string, l backend.Limits) (bool, error) {
	if err := checkLimits(workflowName, l); err != nil {
		return false, err
	}
	if l.IsZero() {
		removed, _, err := b.deleteLimits(ctx, workflowName)
		return removed, err
	}
	_, changed, err := b.putLimits(ctx, workflowName, l, nil)
	return changed, err
}

var _ backend.LimitDeclarer = (*Backend)(nil)

// DeclareWorkflowLimits implements [backend.LimitDeclarer].
func (b *Backend) DeclareWorkflowLimits(ctx context.Context, workflowName string, l backend.Limits, declaredBy string) (*backend.ReplacedLimits, bool, error) {
	if err := checkLimits(workflowName, l); err != nil {
		return nil, false, err
	}
	if l.IsZero() {
		return nil, false, fmt.Errorf("declare limits of workflow %q: %w: no limits (a declaration never removes stored limits; DeleteWorkflowLimits does)", workflowName, backend.ErrInvalidArgument)
	}
	if !backend.ValidText(declaredBy) {
		return nil, false, fmt.Errorf("declare limits of workflow %q: %w: declared by %q is not valid text", workflowName, backend.ErrInvalidArgument, declaredBy)
	}
	return b.putLimits(ctx, workflowName, l, &declaredBy)
}

// putLimits stores l for workflowName under the workflow's admission lock
// (lock_admission then put_limits, one round trip and one implicit
// transaction), so that no claim admits its runs while put_limits brings
// the backlog under the new limits. It returns the different limits it
// replaced, if any.
func (b *Backend) putLimits(ctx context.Context, workflowName string, l backend.Limits, declaredBy *string) (*backend.ReplacedLimits, bool, error) {
	batch := &pgx.Batch{}
	batch.Queue(b.q.LockAdmission, []string{b.admissionLockKey(workflowName)})
	batch.Queue(b.q.PutLimits, b.namespace, workflowName,
		nullInt(l.Concurrency), nullInt(l.ConcurrencyPerKey), nullInt(l.RateLimit), nullPeriod(l), declaredBy, b.at())
	br := b.pool.SendBatch(ctx, batch)
	_, err := br.Exec()
	var replaced *backend.ReplacedLimits
	changed := false
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			for rows.Next() {
				changed = true
				var text *string
				var at *time.Time
				var queued, counted int64
				if err = rows.Scan(&text, &at, &queued, &counted); err != nil {
					break
				}
				if text != nil && at != nil {
					replaced, err = parseReplaced(*text, *at)
				}
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, false, fmt.Errorf("put limits of workflow %q: %w", workflowName, err)
	}
	return replaced, changed, nil
}

// parseReplaced decodes workflow_limits.replaced (see go migration 10).
func parseReplaced(text string, at time.Time) (*backend.ReplacedLimits, error) {
	var v struct {
		Concurrency       *int32  `json:"concurrency"`
		ConcurrencyPerKey *int32  `json:"concurrencyPerKey"`
		RateLimit         *int32  `json:"rateLimit"`
		RatePeriodMs      *int64  `json:"ratePeriodMs"`
		DeclaredBy        *string `json:"declaredBy"`
	}
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, fmt.Errorf("the limits replaced (%q): %w", text, err)
	}
	r := &backend.ReplacedLimits{Limits: limitsOf(v.Concurrency, v.ConcurrencyPerKey, v.RateLimit, v.RatePeriodMs), At: at.UTC()}
	if v.DeclaredBy != nil {
		r.DeclaredBy = *v.DeclaredBy
	}
	return r, nil
}

// DeleteWorkflowLimits implements [backend.LimitStore].
func (b *Backend) DeleteWorkflowLimits(ctx context.Context, workflowName string) (int, error) {
	if !backend.ValidText(workflowName) {
		return 0, nil // names no stored row
	}
	_, released, err := b.deleteLimits(ctx, workflowName)
	return released, err
}

// deleteLimits removes the limits of workflowName (removed: there were
// some) and releases its waiting runs.
func (b *Backend) deleteLimits(ctx context.Context, workflowName string) (removed bool, released int, err error) {
	err = b.pool.QueryRow(ctx, b.q.DeleteLimits, b.namespace, workflowName, b.at()).Scan(&removed, &released)
	if err != nil {
		return false, 0, fmt.Errorf("delete limits of workflow %q: %w", workflowName, err)
	}
	return removed, released, nil
}

// ListWorkflowLimits implements [backend.LimitStore].
func (b *Backend) ListWorkflowLimits(ctx context.Context) ([]backend.WorkflowLimits, error) {
	rows, err := b.pool.Query(ctx, b.q.ListLimits, b.namespace)
	if err != nil {
		return nil, fmt.Errorf("list workflow limits: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (backend.WorkflowLimits, error) {
		var w backend.WorkflowLimits
		var conc, perKey, rate *int32
		var period *int64
		var declaredBy, replaced *string
		var replacedAt *time.Time
		if err := row.Scan(&w.WorkflowName, &conc, &perKey, &rate, &period, &w.UpdatedAt, &declaredBy, &replaced, &replacedAt); err != nil {
			return w, err
		}
		w.Limits = limitsOf(conc, perKey, rate, period)
		w.UpdatedAt = w.UpdatedAt.UTC()
		if declaredBy != nil {
			w.DeclaredBy = *declaredBy
		}
		if replaced != nil && replacedAt != nil {
			r, err := parseReplaced(*replaced, *replacedAt)
			if err != nil {
				return w, fmt.Errorf("limits of workflow %q: %w", w.WorkflowName, err)
			}
			w.Replaced = r
		}
		return w, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list workflow limits: %w", err)
	}
	return out, nil
}

// checkLimits validates what PutWorkflowLimits stores.
func checkLimits(workflowName string, l backend.Limits) error {
	if workflowName == "" {
		return fmt.Errorf("put workflow limits: %w: empty workflow name", backend.ErrInvalidArgument)
	}
	if !backend.ValidText(workflowName) {
		return fmt.Errorf("put workflow limits: %w: workflow name %q is not valid text", backend.ErrInvalidArgument, workflowName)
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("put limits of workflow %q: %w", workflowName, err)
	}
	return nil
}

func nullInt(n int) *int32 {
	if n == 0 {
		return nil
	}
	v := int32(n)
	return &v
}

func nullPeriod(l backend.Limits) *int64 {
	if l.RateLimit == 0 {
		return nil
	}
	v := l.RatePeriod.Milliseconds()
	return &v
}

func limitsOf(conc, perKey, rate *int32, period *int64) backend.Limits {
	var l backend.Limits
	if conc != nil {
		l.Concurrency = int(*conc)
	}
	if perKey != nil {
		l.ConcurrencyPerKey = int(*perKey)
	}
	if rate != nil && period != nil {
		l.RateLimit, l.RatePeriod = int(*rate), time.Duration(*period)*time.Millisecond
	}
	return l
}

// admissionLockKey is the text whose hash is the advisory lock a claim
// admitting runs of workflowName holds (see lock_admission): per schema,
// namespace and workflow, so claims of other workflows never wait for it.
func (b *Backend) admissionLockKey(workflowName string) string {
	return "openworkflow-go:admission:" + b.schema + ":" + b.namespace + ":" + workflowName
}

// admissionWindow is how many waiting runs of a workflow a claim for n
// slots looks at first (admission_queue): enough that the usual mix of
// keys yields n admissible runs, few enough that the keys' counts it reads
// stay cheap; when it is all of keys without room, the claim looks key by
// key instead (admission_queue_by_key).
func admissionWindow(n int) int { return n + n/2 + 8 }

// claimLimited is ClaimWorkflowRuns for a claim that admits runs of
// limited workflows (p.Admit) or caps some workflows (p.Caps). First, one
// round trip: the admission locks of p.Admit's workflows, then
// claim_admitting, which picks among the ordinary candidates and the
// admissible runs at the head of each admitted workflow's queue, in one
// implicit transaction. When that claims fewer runs than there are worker
// ids and the claim admits workflows (a queue's head may be all of keys
// without room), the rest of the worker ids go to claimLimitedOn, which
// looks key by key where needed.
func (b *Backend) claimLimited(ctx context.Context, p backend.ClaimWorkflowRunsParams, names []string, versions []*string) ([]*backend.WorkflowRun, error) {
	n := len(p.WorkerIDs)
	caps := make(map[string]int, len(p.Caps))
	var exclude, capNames []string
	var capMax []int32
	for _, c := range p.Caps {
		caps[c.Name] = c.Max
		capNames, capMax = append(capNames, c.Name), append(capMax, int32(max(c.Max, 0)))
		if c.Max <= 0 {
			exclude = append(exclude, c.Name)
		}
	}
	admit := slices.Clone(p.Admit)
	slices.Sort(admit)
	admit = slices.Compact(admit)
	admit = slices.DeleteFunc(admit, func(name string) bool { c, capped := caps[name]; return capped && c <= 0 })

	at := b.at()
	batch := &pgx.Batch{}
	batch.Queue(b.q.GenericPlans)
	if len(admit) > 0 {
		batch.Queue(b.q.LockAdmission, b.admissionLockKeys(admit))
	}
	batch.Queue(b.q.ClaimAdmitting, b.namespace, p.WorkerIDs, durationMs(p.LeaseDuration), names, versions,
		durationMs(max(p.Lookahead, 0)), exclude, admit, capNames, capMax, admissionWindow(n), at)
	br := b.pool.SendBatch(ctx, batch)
	_, err := br.Exec()
	if err == nil && len(admit) > 0 {
		_, err = br.Exec()
	}
	var runs []*backend.WorkflowRun
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			runs, err = pgx.CollectRows(rows, scanRun)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && len(runs) < n && len(admit) > 0 {
		rest := slices.DeleteFunc(slices.Clone(p.WorkerIDs), func(id string) bool {
			return slices.ContainsFunc(runs, func(r *backend.WorkflowRun) bool { return r.WorkerID != nil && *r.WorkerID == id })
		})
		var more []*backend.WorkflowRun
		more, err = b.claimKeyByKey(ctx, p, rest, names, versions, admit, exclude, caps, runs)
		runs = append(runs, more...)
	}
	if err == nil {
		err = b.decodeRuns(ctx, runs...)
	}
	if err != nil {
		return nil, fmt.Errorf("claim workflow runs (admitting %v): %w", p.Admit, err)
	}
	return runs, nil
}

// admissionLockKeys returns the lock keys of the workflows admit, sorted.
func (b *Backend) admissionLockKeys(admit []string) []string {
	keys := make([]string, len(admit))
	for i, name := range admit {
		keys[i] = b.admissionLockKey(name)
	}
	slices.Sort(keys)
	return keys
}

// claimKeyByKey claims for the worker ids rest with claimLimitedOn, on a
// connection of its own, with the caps less the runs already claimed.
func (b *Backend) claimKeyByKey(ctx context.Context, p backend.ClaimWorkflowRunsParams, rest, names []string, versions []*string,
	admit, exclude []string, caps map[string]int, claimed []*backend.WorkflowRun) ([]*backend.WorkflowRun, error) {
	if len(caps) > 0 {
		left := make(map[string]int, len(caps))
		for name, c := range caps {
			left[name] = c
		}
		for _, r := range claimed {
			if c, capped := left[r.WorkflowName]; capped {
				left[r.WorkflowName] = c - 1
				if c-1 <= 0 && !slices.Contains(exclude, r.WorkflowName) {
					exclude = append(exclude, r.WorkflowName)
				}
			}
		}
		caps = left
		admit = slices.DeleteFunc(slices.Clone(admit), func(name string) bool { c, capped := caps[name]; return capped && c <= 0 })
	}
	q := p
	q.WorkerIDs = rest
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// A connection released inside a transaction (an error below) is
	// destroyed by the pool, which ends the transaction.
	defer conn.Release()
	return b.claimLimitedOn(ctx, conn.Conn(), q, names, versions, len(rest), admit, exclude, caps)
}

// claimLimitedOn is claimLimited's transaction on conn.
func (b *Backend) claimLimitedOn(ctx context.Context, conn *pgx.Conn, p backend.ClaimWorkflowRunsParams, names []string, versions []*string,
	n int, admit, exclude []string, caps map[string]int) ([]*backend.WorkflowRun, error) {
	at := b.at()
	batch := &pgx.Batch{}
	batch.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	if len(admit) > 0 {
		batch.Queue(b.q.LockAdmission, b.admissionLockKeys(admit))
	}
	batch.Queue(b.q.ClaimCandidatesLocked, b.namespace, n, names, versions, durationMs(max(p.Lookahead, 0)), exclude, at)
	for _, name := range admit {
		batch.Queue(b.q.AdmissionQueue, b.namespace, name, n, admissionWindow(n), at)
	}
	br := conn.SendBatch(ctx, batch)
	_, err := br.Exec()
	var cands []backend.ClaimCandidate
	var st backend.AdmissionState
	var byKey []string
	if err == nil {
		cands, st, byKey, err = b.readAdmission(br, admit, n)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if len(byKey) > 0 {
		batch := &pgx.Batch{}
		for _, name := range byKey {
			batch.Queue(b.q.AdmissionQueueByKey, b.namespace, name, n, at)
		}
		br := conn.SendBatch(ctx, batch)
		for _, name := range byKey {
			queued, err := readQueue(br, name, &st, nil, n)
			if err != nil {
				br.Close()
				return nil, err
			}
			cands = append(cands, queued...)
		}
		if err := br.Close(); err != nil {
			return nil, err
		}
	}
	chosen := backend.PlanClaim(cands, st, caps, n)
	batch = &pgx.Batch{}
	if len(chosen) > 0 {
		ids, workers, admits := make([]string, len(chosen)), make([]string, len(chosen)), make([]bool, len(chosen))
		for i, c := range chosen {
			ids[i], workers[i], admits[i] = c.ID, p.WorkerIDs[i], c.Admit
		}
		batch.Queue(b.q.ClaimChosen, b.namespace, ids, workers, admits, durationMs(p.LeaseDuration), at)
	}
	var rated []string
	for _, name := range admit {
		if st.Limits[name].RateLimit > 0 {
			rated = append(rated, name)
		}
	}
	if len(rated) > 0 {
		batch.Queue(b.q.PruneLimitStarts, b.namespace, rated, at)
	}
	batch.Queue("COMMIT") // the sweep's failures too, when nothing was chosen
	br = conn.SendBatch(ctx, batch)
	var runs []*backend.WorkflowRun
	if len(chosen) > 0 {
		rows, qerr := br.Query()
		if err = qerr; err == nil {
			runs, err = pgx.CollectRows(rows, scanRun)
		}
	}
	for range len(rated) {
		if err == nil {
			_, err = br.Exec()
		}
	}
	if err == nil {
		_, err = br.Exec() // COMMIT
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && conn.PgConn().TxStatus() != 'I' {
		err = fmt.Errorf("the claim's transaction did not end (status %q)", conn.PgConn().TxStatus())
	}
	return runs, err
}

// readAdmission reads the results of claimLimited's first batch: the lock,
// the ordinary candidates, and one admission_queue per workflow of admit.
// byKey lists the workflows whose window was full of keys without room.
func (b *Backend) readAdmission(br pgx.BatchResults, admit []string, n int) (cands []backend.ClaimCandidate, st backend.AdmissionState, byKey []string, err error) {
	if len(admit) > 0 {
		if _, err := br.Exec(); err != nil {
			return nil, st, nil, fmt.Errorf("take the admission locks of %v: %w", admit, err)
		}
	}
	rows, err := br.Query()
	if err != nil {
		return nil, st, nil, err
	}
	var vtime int64
	cands, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (backend.ClaimCandidate, error) {
		var c backend.ClaimCandidate
		var rank, priority int32
		err := row.Scan(&c.ID, &c.WorkflowName, &rank, &priority, &c.At, &c.CreatedAt, &c.Pass, &vtime)
		c.Rank, c.Priority = int(rank), int(priority)
		return c, err
	})
	if err != nil {
		return nil, st, nil, fmt.Errorf("select claim candidates: %w", err)
	}
	st = backend.AdmissionState{
		Limits: map[string]backend.Limits{}, Active: map[string]int{},
		KeyActive: map[backend.WorkflowKeyName]int{}, KeyStarts: map[backend.WorkflowKeyName]int{},
		VTime: vtime, // with no candidate, 0: the admitted runs are then all alike
	}
	for _, name := range admit {
		var full bool
		queued, err := readQueue(br, name, &st, &full, n)
		if err != nil {
			return nil, st, nil, fmt.Errorf("admission of workflow %q: %w", name, err)
		}
		l := st.Limits[name]
		if full && len(queued) < n && (l.Concurrency == 0 || st.Active[name]+len(queued) < l.Concurrency) {
			byKey = append(byKey, name)
		}
		cands = append(cands, queued...)
	}
	return cands, st, byKey, nil
}

// readQueue reads one admission_queue or admission_queue_by_key result
// for workflow name into st and returns its candidates (Admit set); full,
// when not nil, says whether the window of a claim for n slots was full.
func readQueue(br pgx.BatchResults, name string, st *backend.AdmissionState, full *bool, n int) ([]backend.ClaimCandidate, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []backend.ClaimCandidate
	for rows.Next() {
		var (
			scanned, active      int64
			conc, perKey, rate   *int32
			id, key              *string
			priority             *int32
			queuedAt, createdAt  *time.Time
			keyActive, keyStarts *int64
		)
		if err := rows.Scan(&scanned, &active, &conc, &perKey, &rate, &id, &key, &priority, &queuedAt, &createdAt, &keyActive, &keyStarts); err != nil {
			return nil, err
		}
		if full != nil {
			*full = scanned >= int64(admissionWindow(n))
		}
		// The rate is enforced by its count (key_starts); its period is
		// only the count's window, so none is needed here.
		l := limitsOf(conc, perKey, rate, nil)
		if rate != nil {
			l.RateLimit = int(*rate)
		}
		st.Limits[name], st.Active[name] = l, int(active)
		if id == nil {
			continue // the one row of a workflow with nothing to admit
		}
		k := backend.WorkflowKeyName{Workflow: name, Key: *key}
		st.KeyActive[k], st.KeyStarts[k] = int(*keyActive), int(*keyStarts)
		out = append(out, backend.ClaimCandidate{
			ID: *id, WorkflowName: name, Key: *key, Priority: int(*priority),
			At: queuedAt.UTC(), CreatedAt: createdAt.UTC(), Admit: true, Pass: st.VTime,
		})
	}
	return out, rows.Err()
}
