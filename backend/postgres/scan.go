package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
)

// scanRun reads one row of {{run_columns}}. Legacy statuses are read with
// their current names and times in UTC. JSON values are as stored: the
// caller decodes escaped ones (decodeRuns).
func scanRun(row pgx.CollectableRow) (*backend.WorkflowRun, error) {
	var r backend.WorkflowRun
	var status string
	err := row.Scan(
		&r.NamespaceID, &r.ID, &r.WorkflowName, &r.Version, &status,
		&r.IdempotencyKey, (*[]byte)(&r.Config), (*[]byte)(&r.Context), (*[]byte)(&r.Input),
		(*[]byte)(&r.Output), (*[]byte)(&r.Error),
		&r.Attempts, &r.ParentStepAttemptNamespaceID, &r.ParentStepAttemptID,
		&r.WorkerID, &r.AvailableAt, &r.DeadlineAt, &r.StartedAt, &r.FinishedAt,
		&r.CreatedAt, &r.UpdatedAt,
		&r.Priority, &r.ConcurrencyKey, &r.QueuedAt, &r.AdmittedAt,
		&r.PausedAt, &r.PauseReason,
	)
	if err != nil {
		return nil, err
	}
	r.Status = backend.RunStatus(status).Normalize()
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	utc(r.AvailableAt, r.DeadlineAt, r.StartedAt, r.FinishedAt, r.QueuedAt, r.AdmittedAt, r.PausedAt)
	if r.ConcurrencyKey != nil && *r.ConcurrencyKey == "" {
		r.ConcurrencyKey = nil // the key a limited run started without one is stored under
	}
	return &r, nil
}

// scanStep reads one row of {{step_columns}}, JSON values as stored (see
// decodeSteps).
func scanStep(row pgx.CollectableRow) (*backend.StepAttempt, error) {
	var s backend.StepAttempt
	var kind, status string
	err := row.Scan(
		&s.NamespaceID, &s.ID, &s.WorkflowRunID, &s.StepName, &kind,
		&status, (*[]byte)(&s.Config), (*[]byte)(&s.Context), (*[]byte)(&s.Output), (*[]byte)(&s.Error),
		&s.ChildWorkflowRunNamespaceID, &s.ChildWorkflowRunID, &s.StartedAt,
		&s.FinishedAt, &s.CreatedAt, &s.UpdatedAt,
	)
	if err != nil {
		return nil, err
	}
	s.Kind = backend.StepKind(kind)
	s.Status = backend.StepStatus(status).Normalize()
	s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	utc(s.StartedAt, s.FinishedAt)
	return &s, nil
}

func utc(ts ...*time.Time) {
	for _, t := range ts {
		if t != nil {
			*t = t.UTC()
		}
	}
}

// pageQuery completes a list query (base, whose WHERE already filters the
// namespace) with extra conditions, the cursor condition, the order and
// limit+1, the way OpenWorkflow's lists work: the natural order is
// ascending or descending (desc), a Before cursor reverses the scan and the
// rows are reversed back by buildPage.
type pageQuery struct {
	sql  strings.Builder
	args []any
}

func newPageQuery(base string, args ...any) *pageQuery {
	p := &pageQuery{args: args}
	p.sql.WriteString(base)
	return p
}

// and adds the condition cond, whose %s is the placeholder of the next
// parameter, v.
func (p *pageQuery) and(cond string, v any) {
	p.args = append(p.args, v)
	fmt.Fprintf(&p.sql, "\n  AND "+cond, "$"+strconv.Itoa(len(p.args)))
}

// finish adds the cursor, order and limit. alias is the table alias.
func (p *pageQuery) finish(alias string, desc bool, after, before *backend.Cursor, limit int) string {
	dir, cur, op := scanDirection(desc, after, before)
	if cur != nil {
		p.args = append(p.args, cur.CreatedAt, cur.ID)
		n := len(p.args)
		fmt.Fprintf(&p.sql, "\n  AND (%s.\"created_at\", %s.\"id\") %s ($%d, $%d)", alias, alias, op, n-1, n)
	}
	p.sql.WriteString(orderAndLimit(alias, dir, limit))
	return p.sql.String()
}

// scanDirection is how a page is read: the scan's order (ASC or DESC),
// the cursor it starts after (nil for the first page) and the comparison
// that keeps the rows past it. The natural order is descending when desc;
// a Before cursor scans the other way, from it (buildPage reverses the
// rows back).
func scanDirection(desc bool, after, before *backend.Cursor) (dir string, cur *backend.Cursor, op string) {
	cur = after
	if before != nil {
		desc, cur = !desc, before
	}
	if desc {
		return "DESC", cur, "<"
	}
	return "ASC", cur, ">"
}

// orderAndLimit ends a page's statement: (created_at, id) in dir, and one
// row more than limit, which tells buildPage whether a next page exists.
func orderAndLimit(alias, dir string, limit int) string {
	return fmt.Sprintf("\nORDER BY %s.\"created_at\" %s, %s.\"id\" %s\nLIMIT %d", alias, dir, alias, dir, limit+1)
}

// pageParams validates and decodes the pagination inputs.
func pageParams(limit int, after, before string) (int, *backend.Cursor, *backend.Cursor, error) {
	return backend.ResolvePage(limit, after, before)
}

// collectPage reads the rows of a page (limit+1 at most, in scan order),
// bounded by maxBytes (backend.PageBudget, rows sized by size): the first
// row that does not fit is kept as the extra row and reading stops there,
// so the page ends before it and buildPage pages on from it. It returns
// the rows and the limit buildPage is to apply.
//
// Stopping early calls cancel, the cancellation of the query's context:
// closing the rows would otherwise read the rest of the result (up to a
// thousand large rows, sent by the server only to be dropped here); pgx
// closes the connection instead, and the pool replaces it.
func collectPage[T any](rows pgx.Rows, cancel context.CancelFunc, scan func(pgx.CollectableRow) (*T, error), size func(*T) int, maxBytes, limit int) ([]*T, int, error) {
	defer rows.Close()
	budget := backend.PageBudget{Max: maxBytes}
	var out []*T
	for rows.Next() {
		t, err := scan(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, t)
		if !budget.Fits(size(t)) {
			cancel()
			return out, len(out) - 1, nil // every row kept was read whole
		}
	}
	return out, limit, rows.Err()
}

// buildPage trims the over-fetched row and sets the cursors, as
// OpenWorkflow's buildPaginatedResponse: rows came in scan order (reversed
// for a Before cursor); there is a next page when more rows followed or we
// came from a later page (Before), and a previous page when more rows
// preceded (Before) or we came from an earlier page (After).
func buildPage[T any](rows []*T, limit int, hasAfter, hasBefore bool, key func(*T) backend.Cursor) *backend.Page[T] {
	overflow := len(rows) > limit
	if overflow {
		rows = rows[:limit] // drop the extra row, the farthest from the cursor
	}
	if hasBefore {
		for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
			rows[i], rows[j] = rows[j], rows[i]
		}
	}
	page := &backend.Page[T]{Data: make([]T, 0, len(rows))}
	for _, r := range rows {
		page.Data = append(page.Data, *r)
	}
	hasNext := hasBefore || overflow
	hasPrev := hasAfter
	if hasBefore {
		hasPrev = overflow
	}
	if n := len(rows); n > 0 {
		if hasNext {
			s := key(rows[n-1]).Encode()
			page.Next = &s
		}
		if hasPrev {
			s := key(rows[0]).Encode()
			page.Prev = &s
		}
	}
	return page
}
