package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/runquery"
)

// runQueryColumns maps each run field of package runquery to the SQL that
// reads it from the row of workflow_runs being listed: a column, or for
// parent and schedule a scalar subquery (NULL when the run has none). A
// field added to runquery.Fields is added here (TestRunQueryColumnsCoverEveryField
// fails until it is).
var runQueryColumns = map[string]string{
	"id":              `"workflow_runs"."id"`,
	"status":          `"workflow_runs"."status"`,
	"workflow":        `"workflow_runs"."workflow_name"`,
	"version":         `"workflow_runs"."version"`,
	"created":         `"workflow_runs"."created_at"`,
	"started":         `"workflow_runs"."started_at"`,
	"finished":        `"workflow_runs"."finished_at"`,
	"updated":         `"workflow_runs"."updated_at"`,
	"idempotency_key": `"workflow_runs"."idempotency_key"`,
	"concurrency_key": `"workflow_runs"."go_concurrency_key"`,
	"priority":        `"workflow_runs"."go_priority"`,
	// Paused, as backend.WorkflowRun.Paused: go migration 12's column, on
	// a run that has not finished (0 or 1, as a bool is bound).
	"paused": `("workflow_runs"."go_paused_at" IS NOT NULL AND "workflow_runs"."status" IN ('pending', 'running', 'sleeping'))`,
	// The parent run is the run of the step attempt that started this one.
	"parent": `(SELECT pa."workflow_run_id" FROM "step_attempts" AS pa
      WHERE pa."namespace_id" = "workflow_runs"."parent_step_attempt_namespace_id" AND pa."id" = "workflow_runs"."parent_step_attempt_id")`,
	// A schedule records each run it started (go migration 7).
	"schedule": `(SELECT sr."schedule_name" FROM "workflow_schedule_runs" AS sr
      WHERE sr."namespace_id" = "workflow_runs"."namespace_id" AND sr."workflow_run_id" = "workflow_runs"."id" LIMIT 1)`,
}

// attrColumns is the value column of go_search_attributes for each type.
var attrColumns = map[runquery.Type]string{
	runquery.Keyword:     "keyword",
	runquery.KeywordList: "keyword",
	runquery.Int:         "int",
	runquery.Float:       "float",
	runquery.Bool:        "bool",
	runquery.Time:        "time",
}

// queryCompiler writes a runquery tree as a condition on the listed
// workflow_runs row, binding every value as a named parameter (:qN): no
// literal of the query ever reaches the SQL text.
type queryCompiler struct {
	attrs   map[string]runquery.Type
	negated int // how many NOTs enclose the node being written
	args    []any
	n       int
	sql     strings.Builder
}

// param binds v (a time as TEXT in backend.TimeLayout, a bool as 0/1, as
// this backend stores them) and returns its placeholder.
func (c *queryCompiler) param(v any) string {
	c.n++
	name := "q" + strconv.Itoa(c.n)
	switch x := v.(type) {
	case time.Time:
		v = queryTime(x)
	case bool:
		v = 0
		if x {
			v = 1
		}
	}
	c.args = append(c.args, sql.Named(name, v))
	return ":" + name
}

// queryTime is t as the TEXT it compares with: whole milliseconds as
// stored; a time between two milliseconds with all nine digits, which
// sorts between them and equals no stored time.
func queryTime(t time.Time) string {
	t = t.UTC()
	if t.Truncate(time.Millisecond).Equal(t) {
		return timeArg(t)
	}
	return t.Format("2006-01-02T15:04:05.000000000Z")
}

// searchAttributeTypes reads the declared types of the search attributes
// query names; an undeclared one fails with a *runquery.Error at its first
// use (wrapped with backend.ErrInvalidArgument).
func (b *Backend) searchAttributeTypes(ctx context.Context, query *runquery.Query) (map[string]runquery.Type, error) {
	var names []string
	runquery.Walk(query.Root, func(p *runquery.Predicate) {
		if p.Field.Attr != "" && !slices.Contains(names, p.Field.Attr) {
			names = append(names, p.Field.Attr)
		}
	})
	types := map[string]runquery.Type{}
	if len(names) == 0 {
		return types, nil
	}
	js, _ := json.Marshal(names)
	err := b.read(ctx, func() error {
		rows, err := b.db.QueryContext(ctx, b.q.SearchAttributeTypes, sql.Named("ns", b.ns), sql.Named("names", string(js)))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name, typ string
			if err := rows.Scan(&name, &typ); err != nil {
				return err
			}
			types[name] = runquery.Type(typ)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	var missing error
	runquery.Walk(query.Root, func(p *runquery.Predicate) {
		if _, ok := types[p.Field.Attr]; p.Field.Attr != "" && !ok && missing == nil {
			missing = fmt.Errorf("%w: %w", backend.ErrInvalidArgument,
				runquery.Errorf(p.Field.Pos, "unknown search attribute %s: no run of this namespace has set it", p.Field))
		}
	})
	return types, missing
}

// matchConditions returns the conditions (without a leading AND) of a
// list's filters other than its query — status, workflow name, creation
// range — and of its query, with their arguments.
func (b *Backend) matchConditions(ctx context.Context, p backend.ListWorkflowRunsParams) ([]string, []any, error) {
	var where []string
	var args []any
	if p.Status != "" {
		statuses := statusesMatching(p.Status)
		in := make([]string, len(statuses))
		for i, s := range statuses {
			name := fmt.Sprintf("status%d", i)
			in[i] = ":" + name
			args = append(args, sql.Named(name, s))
		}
		where = append(where, `"status" IN (`+strings.Join(in, ", ")+`)`)
	}
	if p.WorkflowName != "" {
		where = append(where, `"workflow_name" = :workflow_name`)
		args = append(args, sql.Named("workflow_name", p.WorkflowName))
	}
	if p.CreatedAfter != nil {
		where = append(where, `"created_at" >= :created_after`)
		args = append(args, sql.Named("created_after", createdBound(*p.CreatedAfter)))
	}
	if p.CreatedBefore != nil {
		where = append(where, `"created_at" < :created_before`)
		args = append(args, sql.Named("created_before", createdBound(*p.CreatedBefore)))
	}
	if p.Query != nil {
		attrs, err := b.searchAttributeTypes(ctx, p.Query)
		if err != nil {
			return nil, nil, err
		}
		c := &queryCompiler{attrs: attrs}
		if err := c.node(p.Query.Root); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", backend.ErrInvalidArgument, err)
		}
		where = append(where, c.sql.String())
		args = append(args, c.args...)
	}
	return where, args, nil
}

// CountMatchingRuns implements [backend.Client]: COUNT(*) of the runs
// matching p's filters and query, read from the rows.
func (b *Backend) CountMatchingRuns(ctx context.Context, p backend.ListWorkflowRunsParams) (int64, error) {
	where, args, err := b.matchConditions(ctx, p)
	if err != nil {
		return 0, fmt.Errorf("count matching runs: %w", err)
	}
	query := b.q.CountMatchingRuns
	for _, cond := range where {
		query += "\n  AND " + cond
	}
	args = append(args, sql.Named("ns", b.ns))
	var n int64
	err = b.read(ctx, func() error {
		return b.db.QueryRowContext(ctx, query, args...).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("count matching runs: %w", err)
	}
	return n, nil
}

func (c *queryCompiler) node(n runquery.Node) error {
	switch n := n.(type) {
	case *runquery.And:
		return c.join(n.Terms, " AND ")
	case *runquery.Or:
		return c.join(n.Terms, " OR ")
	case *runquery.Not:
		c.sql.WriteString("NOT ")
		c.negated++
		defer func() { c.negated-- }()
		return c.join([]runquery.Node{n.X}, "")
	case *runquery.Predicate:
		if n.Field.Attr != "" {
			return c.attr(n)
		}
		c.field(n)
		return nil
	}
	return fmt.Errorf("unknown query node %T", n)
}

func (c *queryCompiler) join(terms []runquery.Node, sep string) error {
	c.sql.WriteString("(")
	for i, t := range terms {
		if i > 0 {
			c.sql.WriteString(sep)
		}
		if err := c.node(t); err != nil {
			return err
		}
	}
	c.sql.WriteString(")")
	return nil
}

// field writes a predicate on a run field. status compares with every
// stored status read as the value (a legacy "succeeded" is "completed").
func (c *queryCompiler) field(p *runquery.Predicate) {
	values, op := p.Values, p.Op
	if p.Field.Name == "status" {
		var stored []any
		for _, v := range values {
			for _, s := range statusesMatching(backend.RunStatus(v.(string))) {
				stored = append(stored, s)
			}
		}
		values = stored
		switch op {
		case runquery.Eq:
			op = runquery.In
		case runquery.Ne:
			op = runquery.NotIn
		}
	}
	c.compare(runQueryColumns[p.Field.Name], op, values)
}

// compare writes "expr op values" in SQLite's terms. A time between two
// milliseconds bounds a stored time (whole milliseconds) as its ceiling
// does: > t is >= ceil(t), <= t is < ceil(t).
func (c *queryCompiler) compare(expr string, op runquery.Op, values []any) {
	if len(values) == 1 {
		if t, ok := values[0].(time.Time); ok && !t.Truncate(time.Millisecond).Equal(t) {
			switch op {
			case runquery.Gt, runquery.Ge:
				fmt.Fprintf(&c.sql, "%s >= %s", expr, c.param(t.Truncate(time.Millisecond).Add(time.Millisecond)))
				return
			case runquery.Lt, runquery.Le:
				fmt.Fprintf(&c.sql, "%s < %s", expr, c.param(t.Truncate(time.Millisecond).Add(time.Millisecond)))
				return
			}
		}
	}
	switch op {
	case runquery.IsNull, runquery.IsNotNull:
		fmt.Fprintf(&c.sql, "%s %s", expr, op)
	case runquery.In, runquery.NotIn:
		ps := make([]string, len(values))
		for i, v := range values {
			ps[i] = c.param(v)
		}
		fmt.Fprintf(&c.sql, "%s %s (%s)", expr, op, strings.Join(ps, ", "))
	case runquery.StartsWith, runquery.NotStartsWith:
		ph := c.param(values[0])
		not := ""
		if op == runquery.NotStartsWith {
			not = "NOT "
		}
		fmt.Fprintf(&c.sql, "%s(substr(%s, 1, length(%s)) = %s)", not, expr, ph, ph)
	case runquery.Ne:
		fmt.Fprintf(&c.sql, "%s <> %s", expr, c.param(values[0]))
	default:
		fmt.Fprintf(&c.sql, "%s %s %s", expr, op, c.param(values[0]))
	}
}

// attr writes a predicate on a search attribute as an EXISTS over the
// run's rows of go_search_attributes, as the PostgreSQL backend does: a
// run without the attribute matches no comparison, only IS NULL; a
// keyword list matches = and IN when any member does, != and NOT IN when
// it is set and no member does.
func (c *queryCompiler) attr(p *runquery.Predicate) error {
	typ := c.attrs[p.Field.Attr]
	values, err := p.AttrValues(typ)
	if err != nil {
		return err
	}
	exists := func(negate bool, op runquery.Op, vals []any) {
		if negate {
			c.sql.WriteString("NOT ")
		}
		fmt.Fprintf(&c.sql, `EXISTS (SELECT 1 FROM "go_search_attributes" AS sa WHERE sa."namespace_id" = "workflow_runs"."namespace_id" AND sa."workflow_run_id" = "workflow_runs"."id" AND sa."name" = %s`,
			c.param(p.Field.Attr))
		if op != "" {
			c.sql.WriteString(" AND ")
			c.compare(`sa."`+attrColumns[typ]+`"`, op, vals)
		}
		c.sql.WriteString(")")
	}
	switch {
	case p.Op == runquery.IsNull:
		exists(true, "", nil)
		return nil
	case p.Op == runquery.IsNotNull:
		exists(false, "", nil)
		return nil
	}
	// Under NOT, a run without the attribute must stay unknown (NULL),
	// as a NULL column does, so the comparison is guarded by the
	// attribute being set; elsewhere unknown and false select the same.
	if c.negated > 0 {
		c.sql.WriteString("(CASE WHEN ")
		exists(false, "", nil)
		c.sql.WriteString(" THEN ")
	} else {
		c.sql.WriteString("(")
	}
	if typ == runquery.KeywordList && (p.Op == runquery.Ne || p.Op == runquery.NotIn) {
		if c.negated == 0 {
			exists(false, "", nil)
			c.sql.WriteString(" AND ")
		}
		exists(true, runquery.In, values)
	} else {
		exists(false, p.Op, values)
	}
	if c.negated > 0 {
		c.sql.WriteString(" END)")
	} else {
		c.sql.WriteString(")")
	}
	return nil
}

// drivingAttribute returns the predicate attrs.x = v on a scalar
// attribute that the whole query requires (the query itself, or a term of
// its top-level AND), and the query without it (nil when nothing is
// left); nil when there is none.
func drivingAttribute(q *runquery.Query, attrs map[string]runquery.Type) (*runquery.Predicate, *runquery.Query) {
	isDriving := func(n runquery.Node) *runquery.Predicate {
		p, ok := n.(*runquery.Predicate)
		if !ok || p.Field.Attr == "" || p.Op != runquery.Eq || attrs[p.Field.Attr] == runquery.KeywordList {
			return nil
		}
		return p
	}
	if p := isDriving(q.Root); p != nil {
		return p, nil
	}
	and, ok := q.Root.(*runquery.And)
	if !ok {
		return nil, nil
	}
	for i, t := range and.Terms {
		if p := isDriving(t); p != nil {
			rest := append(append([]runquery.Node{}, and.Terms[:i]...), and.Terms[i+1:]...)
			var root runquery.Node = &runquery.And{Terms: rest}
			if len(rest) == 1 {
				root = rest[0]
			}
			return p, &runquery.Query{Source: q.Source, Root: root}
		}
	}
	return nil, nil
}
