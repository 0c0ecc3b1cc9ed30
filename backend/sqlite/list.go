package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// ListWorkflowRuns lists the namespace's runs newest first (created_at
// DESC, id DESC), optionally filtered by status (a legacy status matches
// its current name), workflow name and creation time (at or after
// p.CreatedAfter, before p.CreatedBefore) and p.Query (matchConditions). Pages hold p.Limit runs (100 when
// 0, at most [backend.MaxPageSize]); p.After / p.Before are the Next /
// Prev cursors of a previous page. Setting both, a limit out of range or
// a malformed cursor fails with [backend.ErrInvalidArgument] (see
// [backend.ResolvePage]).
func (b *Backend) ListWorkflowRuns(ctx context.Context, p backend.ListWorkflowRunsParams) (*backend.Page[backend.WorkflowRun], error) {
	lq, err := b.listRunsQuery(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list workflow runs: %w", err)
	}
	page, err := listPage(ctx, b, lq, scanRun, (*backend.WorkflowRun).PayloadBytes,
		func(r *backend.WorkflowRun) backend.Cursor { return backend.Cursor{CreatedAt: r.CreatedAt, ID: r.ID} })
	if err != nil {
		return nil, fmt.Errorf("list workflow runs: %w", err)
	}
	return page, nil
}

// createdBound is t as a bound on created_at (TEXT in
// [backend.TimeLayout], whole milliseconds): rounded up to the next
// millisecond, since a stored time is at or after t exactly when it is at
// or after t's ceiling (and before t exactly when before the ceiling), and
// kept within the years the layout sorts (0000–9999).
func createdBound(t time.Time) string {
	t = t.UTC()
	if c := t.Truncate(time.Millisecond); c.Before(t) {
		t = c.Add(time.Millisecond)
	}
	lo, hi := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)
	switch {
	case t.Before(lo):
		t = lo
	case t.After(hi):
		t = hi
	}
	return timeArg(t)
}

// statusesMatching returns the stored statuses a status filter matches:
// the status itself and the legacy names read as it.
func statusesMatching(s backend.RunStatus) []string {
	switch s.Normalize() {
	case backend.RunRunning:
		return []string{string(backend.RunRunning), string(backend.RunSleeping)}
	case backend.RunCompleted:
		return []string{string(backend.RunCompleted), string(backend.RunSucceeded)}
	}
	return []string{string(s)}
}

// ListStepAttempts lists a run's attempts oldest first (created_at ASC, id
// ASC), paginated like [Backend.ListWorkflowRuns]. A run without attempts,
// or a missing run, gives an empty page.
func (b *Backend) ListStepAttempts(ctx context.Context, p backend.ListStepAttemptsParams) (*backend.Page[backend.StepAttempt], error) {
	base := b.q.ListSteps
	if p.OmitPayloads {
		base = b.q.ListStepsSummary
	}
	page, err := listPage(ctx, b, listQuery{
		base:  base,
		args:  []any{sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID)},
		limit: p.Limit, after: p.After, before: p.Before, maxBytes: p.MaxBytes,
	}, scanStep, (*backend.StepAttempt).PayloadBytes,
		func(a *backend.StepAttempt) backend.Cursor { return backend.Cursor{CreatedAt: a.CreatedAt, ID: a.ID} })
	if err != nil {
		return nil, fmt.Errorf("list step attempts of workflow run %s: %w", p.WorkflowRunID, err)
	}
	return page, nil
}

// listQuery describes one cursor-paginated SELECT.
type listQuery struct {
	// base is the SELECT … WHERE of list_runs or list_steps, which listPage
	// completes.
	base string
	// descending is the table's natural order (runs: newest first).
	descending bool
	// where are more conditions, each ANDed to base's; args are the named
	// arguments of base and where.
	where         []string
	args          []any
	limit         int
	after, before string
	// maxBytes bounds the page's rows by their size (backend.PageBudget);
	// 0 bounds nothing.
	maxBytes int
	// orderBy are the two columns of the order and the cursor, in the
	// list's order; zero: "created_at" and "id".
	orderBy [2]string
}

// listPage runs q as OpenWorkflow's listPaginated does: it fetches one
// row more than the limit, in the natural order after an After cursor or
// in the reverse order before a Before cursor, and derives Next and Prev
// as buildPaginatedResponse: Next exists when a row follows the page (or
// the page was reached backwards), Prev when the page was reached forwards
// with a cursor (or a row precedes it, backwards). With q.maxBytes, the
// first row that does not fit the budget (sized by size) ends the page as
// the extra row does: reading stops there, so a page of large rows holds
// about maxBytes in memory, not limit rows.
func listPage[T any](ctx context.Context, b *Backend, q listQuery, scan func(scanner) (*T, error), size func(*T) int, cursorOf func(*T) backend.Cursor) (*backend.Page[T], error) {
	limit, after, before, err := backend.ResolvePage(q.limit, q.after, q.before)
	if err != nil {
		return nil, err
	}
	hasAfter, hasBefore := after != nil, before != nil

	ascending := !q.descending
	if hasBefore {
		ascending = !ascending
	}
	dir, op := "DESC", "<"
	if ascending {
		dir, op = "ASC", ">"
	}
	where, args := q.where, q.args
	order := q.orderBy
	if order[0] == "" {
		order = [2]string{`"created_at"`, `"id"`}
	}
	if c := cmp.Or(after, before); c != nil {
		where = append(where[:len(where):len(where)], `(`+order[0]+`, `+order[1]+`) `+op+` (:cursor_created_at, :cursor_id)`)
		args = append(args[:len(args):len(args)], sql.Named("cursor_created_at", timeArg(c.CreatedAt)), sql.Named("cursor_id", c.ID))
	}
	args = append(args[:len(args):len(args)], sql.Named("limit", limit+1))
	var query strings.Builder
	query.WriteString(q.base)
	for _, cond := range where {
		query.WriteString("\n  AND " + cond)
	}
	query.WriteString("\nORDER BY " + order[0] + " " + dir + ", " + order[1] + " " + dir + " LIMIT :limit")

	var items []T
	cut := false
	err = b.read(ctx, func() error {
		items, cut = items[:0], false
		budget := backend.PageBudget{Max: q.maxBytes}
		rows, err := b.db.QueryContext(ctx, query.String(), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			item, err := scan(rows)
			if err != nil {
				return err
			}
			items = append(items, *item)
			if !budget.Fits(size(item)) {
				cut = true // item is the extra row: the page ends before it
				break
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	if cut {
		limit = len(items) - 1
	}

	overflow := len(items) > limit
	if hasBefore {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
		if overflow {
			items = items[1:]
		}
	} else if overflow {
		items = items[:limit]
	}
	page := &backend.Page[T]{Data: items}
	if page.Data == nil {
		page.Data = []T{}
	}
	hasNext := hasBefore || overflow
	hasPrev := hasAfter
	if hasBefore {
		hasPrev = overflow
	}
	if n := len(page.Data); n > 0 {
		if hasNext {
			s := cursorOf(&page.Data[n-1]).Encode()
			page.Next = &s
		}
		if hasPrev {
			s := cursorOf(&page.Data[0]).Encode()
			page.Prev = &s
		}
	}
	return page, nil
}

var _ backend.HistoryReader = (*Backend)(nil)

// ListStepHistories implements [backend.HistoryReader] with one query
// (the run ids passed as a JSON array).
func (b *Backend) ListStepHistories(ctx context.Context, workflowRunIDs []string) (map[string][]backend.StepAttempt, error) {
	out := make(map[string][]backend.StepAttempt, len(workflowRunIDs))
	if len(workflowRunIDs) == 0 {
		return out, nil
	}
	ids, err := json.Marshal(workflowRunIDs)
	if err != nil {
		return nil, err
	}
	err = b.read(ctx, func() error {
		clear(out)
		rows, err := b.db.QueryContext(ctx, b.q.ListStepHistories, sql.Named("ns", b.ns), sql.Named("ids", string(ids)))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			s, err := scanStep(rows)
			if err != nil {
				return err
			}
			out[s.WorkflowRunID] = append(out[s.WorkflowRunID], *s)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list step histories of %d workflow runs: %w", len(workflowRunIDs), err)
	}
	return out, nil
}

// listRunsQuery is the listQuery of ListWorkflowRuns: with a query that
// requires attrs.x = v, the value's index range in list order joined to
// the runs (list_runs_by_attribute), else the runs in list order with the
// filters' and the query's conditions.
func (b *Backend) listRunsQuery(ctx context.Context, p backend.ListWorkflowRunsParams) (listQuery, error) {
	base := b.q.ListRuns
	if p.OmitPayloads {
		base = b.q.ListRunsSummary
	}
	var orderBy [2]string
	var driveArgs []any
	if p.Query != nil {
		attrs, err := b.searchAttributeTypes(ctx, p.Query)
		if err != nil {
			return listQuery{}, err
		}
		if drive, rest := drivingAttribute(p.Query, attrs); drive != nil {
			// Read the value's runs in list order (list_runs_by_attribute).
			typ := attrs[drive.Field.Attr]
			values, err := drive.AttrValues(typ)
			if err != nil {
				return listQuery{}, fmt.Errorf("%w: %w", backend.ErrInvalidArgument, err)
			}
			base = b.q.ListRunsByAttribute
			if p.OmitPayloads {
				base = b.q.ListRunsSummaryByAttribute
			}
			base = strings.ReplaceAll(base, "__value__", attrColumns[typ])
			c := &queryCompiler{}
			c.param(values[0]) // a time or bool as stored
			driveArgs = []any{sql.Named("da_name", drive.Field.Attr), sql.Named("da_value", c.args[0].(sql.NamedArg).Value)}
			orderBy = [2]string{`da."da_created"`, `da."da_run"`}
			p.Query = rest
		}
	}
	where, args, err := b.matchConditions(ctx, p)
	if err != nil {
		return listQuery{}, err
	}
	args = append(append(args, sql.Named("ns", b.ns)), driveArgs...)
	return listQuery{
		base: base, descending: true, orderBy: orderBy,
		where: where, args: args,
		limit: p.Limit, after: p.After, before: p.Before, maxBytes: p.MaxBytes,
	}, nil
}
