package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.LimitStore = (*Backend)(nil)

// PutWorkflowLimits implements [backend.LimitStore].
func (b *Backend) PutWorkflowLimits(ctx context.Context, workflowName string, l backend.Limits) (bool, error) {
	if err := checkLimits(workflowName, l); err != nil {
		return false, err
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

// putLimits stores l (zero: removes the limits) in one write
// transaction, which every admitting claim also takes: when the limits
// are new or changed, the workflow's backlog comes under them
// (queue_backlog, count_started_backlog). It returns the different limits
// it replaced, if any.
func (b *Backend) putLimits(ctx context.Context, workflowName string, l backend.Limits, declaredBy *string) (*backend.ReplacedLimits, bool, error) {
	var changed bool
	var replaced *backend.ReplacedLimits
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		changed, replaced = false, nil
		if l.IsZero() {
			removed, _, err := b.deleteLimits(ctx, tx, now, ev, workflowName)
			changed = removed
			return err
		}
		var period any
		if l.RateLimit > 0 {
			period = l.RatePeriod.Milliseconds()
		}
		var by any
		if declaredBy != nil {
			by = *declaredBy
		}
		rows, err := tx.QueryContext(ctx, b.q.PutLimits,
			sql.Named("ns", b.ns), sql.Named("workflow_name", workflowName),
			sql.Named("concurrency", nullInt(l.Concurrency)), sql.Named("per_key", nullInt(l.ConcurrencyPerKey)),
			sql.Named("rate_limit", nullInt(l.RateLimit)), sql.Named("rate_period_ms", period),
			sql.Named("declared_by", by), sql.Named("now", timeArg(now)))
		if err != nil {
			return err
		}
		var text, at sql.NullString
		for rows.Next() {
			changed = true
			if err := rows.Scan(&text, &at); err != nil {
				rows.Close()
				return err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if !changed {
			return nil
		}
		if text.Valid && at.Valid {
			if replaced, err = parseReplaced(text.String, at.String); err != nil {
				return err
			}
		}
		args := []any{sql.Named("ns", b.ns), sql.Named("workflow_name", workflowName), sql.Named("now", timeArg(now))}
		if _, err := tx.ExecContext(ctx, b.q.QueueBacklog, args...); err != nil {
			return fmt.Errorf("queue the runs waiting before the limits: %w", err)
		}
		if _, err := tx.ExecContext(ctx, b.q.CountStartedBacklog, args...); err != nil {
			return fmt.Errorf("count the runs started before the limits: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("put limits of workflow %q: %w", workflowName, err)
	}
	return replaced, changed, nil
}

// parseReplaced decodes workflow_limits.replaced (see go migration 10).
func parseReplaced(text, at string) (*backend.ReplacedLimits, error) {
	var v struct {
		Concurrency       *int64  `json:"concurrency"`
		ConcurrencyPerKey *int64  `json:"concurrencyPerKey"`
		RateLimit         *int64  `json:"rateLimit"`
		RatePeriodMs      *int64  `json:"ratePeriodMs"`
		DeclaredBy        *string `json:"declaredBy"`
	}
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, fmt.Errorf("the limits replaced (%q): %w", text, err)
	}
	n := func(p *int64) sql.NullInt64 {
		if p == nil {
			return sql.NullInt64{}
		}
		return sql.NullInt64{Int64: *p, Valid: true}
	}
	t, err := backend.ParseTime(at)
	if err != nil {
		return nil, fmt.Errorf("the limits replaced: replaced_at: %w", err)
	}
	r := &backend.ReplacedLimits{Limits: limitsOf(n(v.Concurrency), n(v.ConcurrencyPerKey), n(v.RateLimit), n(v.RatePeriodMs)), At: t}
	if v.DeclaredBy != nil {
		r.DeclaredBy = *v.DeclaredBy
	}
	return r, nil
}

// DeleteWorkflowLimits implements [backend.LimitStore].
func (b *Backend) DeleteWorkflowLimits(ctx context.Context, workflowName string) (int, error) {
	var released int
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		var err error
		_, released, err = b.deleteLimits(ctx, tx, now, ev, workflowName)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete limits of workflow %q: %w", workflowName, err)
	}
	return released, nil
}

// deleteLimits removes the limits of workflowName (removed: there were
// some), forgets its admissions and releases its waiting runs, announcing
// work when one is due.
func (b *Backend) deleteLimits(ctx context.Context, tx *txn, now time.Time, ev *events, workflowName string) (removed bool, released int, err error) {
	released = 0
	args := []any{sql.Named("ns", b.ns), sql.Named("workflow_name", workflowName)}
	rows, err := tx.QueryContext(ctx, b.q.DeleteLimits, args...)
	if err != nil {
		return false, 0, err
	}
	removed = rows.Next()
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, 0, err
	}
	if _, err := tx.ExecContext(ctx, b.q.ForgetLimitStarts, args...); err != nil {
		return false, 0, err
	}
	rows, err = tx.QueryContext(ctx, b.q.ReleaseQueuedRuns, append(args, sql.Named("now", timeArg(now)))...)
	if err != nil {
		return false, 0, err
	}
	defer rows.Close()
	due := false
	for rows.Next() {
		var at sql.NullString
		if err := rows.Scan(&at); err != nil {
			return false, 0, err
		}
		if at.Valid { // a run that waited, now an ordinary pending run
			released++
			due = due || at.String <= timeArg(now)
		}
	}
	if err := rows.Err(); err != nil {
		return false, 0, err
	}
	if due {
		ev.workAvailable(b.ns)
	}
	return removed, released, nil
}

// ListWorkflowLimits implements [backend.LimitStore].
func (b *Backend) ListWorkflowLimits(ctx context.Context) ([]backend.WorkflowLimits, error) {
	var out []backend.WorkflowLimits
	err := b.read(ctx, func() error {
		out = nil
		rows, err := b.db.QueryContext(ctx, b.q.ListLimits, sql.Named("ns", b.ns))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var w backend.WorkflowLimits
			var conc, perKey, rate, period sql.NullInt64
			var updated string
			var declaredBy, replaced, replacedAt sql.NullString
			if err := rows.Scan(&w.WorkflowName, &conc, &perKey, &rate, &period, &updated, &declaredBy, &replaced, &replacedAt); err != nil {
				return err
			}
			w.Limits = limitsOf(conc, perKey, rate, period)
			if w.UpdatedAt, err = backend.ParseTime(updated); err != nil {
				return fmt.Errorf("limits of workflow %q: updated_at: %w", w.WorkflowName, err)
			}
			w.DeclaredBy = declaredBy.String
			if replaced.Valid && replacedAt.Valid {
				if w.Replaced, err = parseReplaced(replaced.String, replacedAt.String); err != nil {
					return fmt.Errorf("limits of workflow %q: %w", w.WorkflowName, err)
				}
			}
			out = append(out, w)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list workflow limits: %w", err)
	}
	return out, nil
}

func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

func limitsOf(conc, perKey, rate, period sql.NullInt64) backend.Limits {
	l := backend.Limits{Concurrency: int(conc.Int64), ConcurrencyPerKey: int(perKey.Int64)}
	if rate.Valid && period.Valid {
		l.RateLimit, l.RatePeriod = int(rate.Int64), time.Duration(period.Int64)*time.Millisecond
	}
	return l
}

// capsOf returns p.Caps as a map, and the names whose cap is used up (a
// claim takes none of their runs).
func capsOf(caps []backend.WorkflowCap) (map[string]int, []string) {
	if len(caps) == 0 {
		return nil, nil
	}
	m := make(map[string]int, len(caps))
	var exclude []string
	for _, c := range caps {
		m[c.Name] = c.Max
		if c.Max <= 0 {
			exclude = append(exclude, c.Name)
		}
	}
	return m, exclude
}

// admittedWorkflows returns the distinct names of admit whose cap is not
// used up, sorted.
func admittedWorkflows(admit []string, caps map[string]int) []string {
	out := slices.Clone(admit)
	slices.Sort(out)
	out = slices.Compact(out)
	return slices.DeleteFunc(out, func(name string) bool { c, capped := caps[name]; return capped && c <= 0 })
}

// admissionWindow is how many waiting runs of a workflow a claim for n
// slots looks at first, as PostgreSQL's admissionWindow.
func admissionWindow(n int) int { return n + n/2 + 8 }

// admissionCandidates returns up to about n runs of workflow name that a
// claim may admit, each within its key's room (per-key concurrency and
// rate) as counted now, and records the workflow's limits and counts in st
// for backend.PlanClaim. It looks at the head of the queue first (a window
// of admissionWindow(n) runs in claim order); when that window is full and
// yields fewer than n — its head all of keys without room — it looks key
// by key instead (a loose scan of workflow_runs_go_queue_key_idx), so one
// busy key never holds up the others.
func (b *Backend) admissionCandidates(ctx context.Context, tx *txn, now time.Time, name string, n int, st *backend.AdmissionState) ([]backend.ClaimCandidate, error) {
	args := []any{sql.Named("ns", b.ns), sql.Named("workflow_name", name)}
	var conc, perKey, rate, period sql.NullInt64
	var active int
	err := tx.QueryRowContext(ctx, b.q.AdmissionLimits, args...).Scan(&conc, &perKey, &rate, &period, &active)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil // no limits (any more): nothing waits to be admitted
	}
	if err != nil {
		return nil, err
	}
	l := limitsOf(conc, perKey, rate, period)
	st.Limits[name], st.Active[name] = l, active
	if l.Concurrency > 0 && active >= l.Concurrency {
		return nil, nil
	}
	since := timeArg(now.Add(-l.RatePeriod))
	rooms := map[string]int{}
	noteRoom := func(key string, keyActive, keyStarts int) int {
		k := backend.WorkflowKeyName{Workflow: name, Key: key}
		st.KeyActive[k], st.KeyStarts[k] = keyActive, keyStarts
		r := n
		if l.ConcurrencyPerKey > 0 {
			r = min(r, l.ConcurrencyPerKey-keyActive)
		}
		if l.RateLimit > 0 {
			r = min(r, l.RateLimit-keyStarts)
		}
		rooms[key] = r
		return r
	}
	room := func(key string) (int, error) {
		if r, ok := rooms[key]; ok {
			return r, nil
		}
		var keyActive, keyStarts int
		if err := tx.QueryRowContext(ctx, b.q.AdmissionKeyCounts, append(args, sql.Named("key", key), sql.Named("since", since))...).
			Scan(&keyActive, &keyStarts); err != nil {
			return 0, err
		}
		return noteRoom(key, keyActive, keyStarts), nil
	}

	window := admissionWindow(n)
	rows, err := b.queuedRuns(ctx, tx, true, b.q.AdmissionWindow, append(args, sql.Named("limit", window), sql.Named("since", since))...)
	if err != nil {
		return nil, err
	}
	for _, c := range rows { // the window's keys' counts came with it
		if _, seen := rooms[c.Key]; !seen && c.status == backend.RunPending {
			noteRoom(c.Key, c.keyActive, c.keyStarts)
		}
	}
	var out []backend.ClaimCandidate
	taken := map[string]int{}
	for _, c := range rows {
		if len(out) == n {
			break
		}
		if c.status != backend.RunPending {
			// Ended while it waited, by a writer that did not unqueue it.
			if _, err := tx.ExecContext(ctx, b.q.UnqueueRun, sql.Named("ns", b.ns), sql.Named("run_id", c.ID)); err != nil {
				return nil, err
			}
			continue
		}
		if c.At.After(now) || c.deadline != nil && !c.deadline.After(now) {
			continue
		}
		r, err := room(c.Key)
		if err != nil {
			return nil, err
		}
		if taken[c.Key] < r {
			taken[c.Key]++
			c.WorkflowName = name
			out = append(out, c.ClaimCandidate)
		}
	}
	if len(out) == n || len(rows) < window {
		return out, nil
	}
	// The window was all of keys without room: key by key.
	out = out[:0]
	for from := ""; ; {
		var key sql.NullString
		if err := tx.QueryRowContext(ctx, b.q.AdmissionNextKey, append(args, sql.Named("from", from))...).Scan(&key); err != nil {
			return nil, err
		}
		if !key.Valid {
			break
		}
		from = key.String + "\x00" // the next key above it (keys hold no U+0000)
		r, err := room(key.String)
		if err != nil {
			return nil, err
		}
		if r <= 0 {
			continue
		}
		heads, err := b.queuedRuns(ctx, tx, false, b.q.AdmissionKeyHead,
			append(args, sql.Named("key", key.String), sql.Named("now", timeArg(now)), sql.Named("limit", r))...)
		if err != nil {
			return nil, err
		}
		for _, c := range heads {
			c.WorkflowName = name
			out = append(out, c.ClaimCandidate)
		}
	}
	return out, nil
}

// queuedRun is a waiting run as the admission statements read it.
type queuedRun struct {
	backend.ClaimCandidate
	deadline             *time.Time
	status               backend.RunStatus
	keyActive, keyStarts int // with counts: as admission_key_counts gives them
}

// queuedRuns runs an admission statement returning waiting runs (id, key,
// priority, queued_at, created_at, deadline_at, status and, with counts,
// the key's admitted runs and admissions in the rate period).
func (b *Backend) queuedRuns(ctx context.Context, tx *txn, counts bool, query string, args ...any) ([]queuedRun, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []queuedRun
	for rows.Next() {
		q := queuedRun{ClaimCandidate: backend.ClaimCandidate{Admit: true}}
		var queued, created, status string
		var deadline sql.NullString
		dest := []any{&q.ID, &q.Key, &q.Priority, &queued, &created, &deadline, &status}
		if counts {
			dest = append(dest, &q.keyActive, &q.keyStarts)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		q.status = backend.RunStatus(status)
		if q.At, err = backend.ParseTime(queued); err != nil {
			return nil, fmt.Errorf("run %s: go_queued_at: %w", q.ID, err)
		}
		if q.CreatedAt, err = backend.ParseTime(created); err != nil {
			return nil, fmt.Errorf("run %s: created_at: %w", q.ID, err)
		}
		if q.deadline, err = parseNullTime(deadline); err != nil {
			return nil, fmt.Errorf("run %s: deadline_at: %w", q.ID, err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// recordStart records the admission of run for its workflow's rate limit,
// if it has one.
func (b *Backend) recordStart(ctx context.Context, tx *txn, now time.Time, run *backend.WorkflowRun, st backend.AdmissionState) error {
	if st.Limits[run.WorkflowName].RateLimit == 0 {
		return nil
	}
	key := ""
	if run.ConcurrencyKey != nil {
		key = *run.ConcurrencyKey
	}
	_, err := tx.ExecContext(ctx, b.q.InsertLimitStart, sql.Named("ns", b.ns), sql.Named("workflow_name", run.WorkflowName),
		sql.Named("key", key), sql.Named("now", timeArg(now)), sql.Named("run_id", run.ID))
	if err != nil {
		return fmt.Errorf("record the admission of run %s: %w", run.ID, err)
	}
	return nil
}

// pruneLimitStarts forgets the admissions of the rate-limited workflows of
// admit older than their rate period.
func (b *Backend) pruneLimitStarts(ctx context.Context, tx *txn, now time.Time, admit []string, st backend.AdmissionState) error {
	for _, name := range admit {
		l := st.Limits[name]
		if l.RateLimit == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, b.q.PruneLimitStarts, sql.Named("ns", b.ns), sql.Named("workflow_name", name),
			sql.Named("until", timeArg(now.Add(-l.RatePeriod)))); err != nil {
			return fmt.Errorf("forget the old admissions of workflow %q: %w", name, err)
		}
	}
	return nil
}
