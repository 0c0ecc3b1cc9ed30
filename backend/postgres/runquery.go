package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/runquery"
)

// runQueryColumns maps each run field of package runquery to the SQL that
// reads it from a row of workflow_runs aliased wr: a column, or for parent
// and schedule a scalar subquery (NULL when the run has none). A field
// added to runquery.Fields is added here (TestRunQueryColumnsCoverEveryField
// fails until it is).
func runQueryColumns(schema string) map[string]string {
	return map[string]string{
		"id":              `wr."id"`,
		"status":          `wr."status"`,
		"workflow":        `wr."workflow_name"`,
		"version":         `wr."version"`,
		"created":         `wr."created_at"`,
		"started":         `wr."started_at"`,
		"finished":        `wr."finished_at"`,
		"updated":         `wr."updated_at"`,
		"idempotency_key": `wr."idempotency_key"`,
		"concurrency_key": `wr."go_concurrency_key"`,
		"priority":        `wr."go_priority"`,
		// Paused, as backend.WorkflowRun.Paused: go migration 12's column,
		// on a run that has not finished.
		"paused": `(wr."go_paused_at" IS NOT NULL AND wr."status" IN ('pending', 'running', 'sleeping'))`,
		// The parent run is the run of the step attempt that started this one.
		"parent": `(SELECT pa."workflow_run_id" FROM ` + schema + `."step_attempts" AS pa
      WHERE pa."namespace_id" = wr."parent_step_attempt_namespace_id" AND pa."id" = wr."parent_step_attempt_id")`,
		// A schedule records each run it started (go migration 7).
		"schedule": `(SELECT sr."schedule_name" FROM ` + schema + `."workflow_schedule_runs" AS sr
      WHERE sr."namespace_id" = wr."namespace_id" AND sr."workflow_run_id" = wr."id" LIMIT 1)`,
	}
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

// queryCompiler writes a runquery tree as a condition on wr, appending
// every value to args as a bind parameter ($n): no literal of the query
// ever reaches the SQL text.
type queryCompiler struct {
	schema  string
	columns map[string]string
	attrs   map[string]runquery.Type
	negated int // how many NOTs enclose the node being written
	args    []any
	sql     strings.Builder
}

// param binds v and returns its placeholder, cast to the SQL type of v's
// Go type: a value's type never depends on what the planner infers from
// the column (so an int64 beyond a 32-bit column's range compares rather
// than failing to encode).
func (c *queryCompiler) param(v any) string {
	c.args = append(c.args, v)
	ph := "$" + strconv.Itoa(len(c.args))
	switch v.(type) {
	case int64:
		return ph + "::bigint"
	case float64:
		return ph + "::double precision"
	case bool:
		return ph + "::boolean"
	case time.Time:
		return ph + "::timestamptz"
	default:
		return ph + "::text"
	}
}

// searchAttributeTypes reads the declared types of the search attributes q
// names; an undeclared one fails with a *runquery.Error at its first use
// (wrapped with backend.ErrInvalidArgument).
func (b *Backend) searchAttributeTypes(ctx context.Context, q querier, query *runquery.Query) (map[string]runquery.Type, error) {
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
	rows, err := q.Query(ctx, b.q.SearchAttributeTypes, b.namespace, names)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, err
		}
		types[name] = runquery.Type(typ)
	}
	if err := rows.Err(); err != nil {
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

// compileRunQuery returns query as a SQL condition on wr whose values are
// args[len(args):] of the returned args.
func (b *Backend) compileRunQuery(ctx context.Context, q querier, query *runquery.Query, args []any) (string, []any, error) {
	attrs, err := b.searchAttributeTypes(ctx, q, query)
	if err != nil {
		return "", nil, err
	}
	return b.compileWithTypes(query, attrs, args)
}

// compileWithTypes is compileRunQuery with the attributes' types known.
func (b *Backend) compileWithTypes(query *runquery.Query, attrs map[string]runquery.Type, args []any) (string, []any, error) {
	schema := quoteIdent(b.schema)
	c := &queryCompiler{schema: schema, columns: runQueryColumns(schema), attrs: attrs, args: args}
	if err := c.node(query.Root); err != nil {
		return "", nil, fmt.Errorf("%w: %w", backend.ErrInvalidArgument, err)
	}
	return c.sql.String(), c.args, nil
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
	col := c.columns[p.Field.Name]
	values := p.Values
	op := p.Op
	if p.Field.Name == "status" {
		var stored []any
		for _, v := range values {
			for _, s := range listedStatuses(backend.RunStatus(v.(string))) {
				stored = append(stored, string(s))
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
	c.compare(col, op, values)
}

// compare writes "expr op values" in PostgreSQL's terms.
func (c *queryCompiler) compare(expr string, op runquery.Op, values []any) {
	switch op {
	case runquery.IsNull, runquery.IsNotNull:
		fmt.Fprintf(&c.sql, "%s %s", expr, op)
	case runquery.In, runquery.NotIn:
		ps := make([]string, len(values))
		for i, v := range values {
			ps[i] = c.param(v)
		}
		fmt.Fprintf(&c.sql, "%s %s (%s)", expr, op, strings.Join(ps, ", "))
	case runquery.StartsWith:
		fmt.Fprintf(&c.sql, "starts_with(%s, %s)", expr, c.param(values[0]))
	case runquery.NotStartsWith:
		fmt.Fprintf(&c.sql, "NOT starts_with(%s, %s)", expr, c.param(values[0]))
	case runquery.Ne:
		fmt.Fprintf(&c.sql, "%s <> %s", expr, c.param(values[0]))
	default:
		fmt.Fprintf(&c.sql, "%s %s %s", expr, op, c.param(values[0]))
	}
}

// attr writes a predicate on a search attribute as an EXISTS over the
// run's rows of go_search_attributes (served by their primary key when
// the plan walks the runs, by the value indexes when it walks the
// attribute): a run without the attribute matches no comparison, only IS
// NULL. A keyword list matches = and IN when any member does; != and NOT
// IN when it is set and no member does.
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
		fmt.Fprintf(&c.sql, `EXISTS (SELECT 1 FROM %s."go_search_attributes" AS sa WHERE sa."namespace_id" = wr."namespace_id" AND sa."workflow_run_id" = wr."id" AND sa."name" = %s`,
			c.schema, c.param(p.Field.Attr))
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

// matchConditions returns the conditions on wr (each "\n  AND …") of a
// list's filters and query, appending their values to *args. A list with
// a query reads OpenWorkflow's (namespace_id, created_at DESC) index in
// list order and tests each run (a run field costs nothing more, a search
// attribute one primary-key probe of go_search_attributes), or, when the
// planner expects an attribute's value to be rare, reads the value index
// and sorts its few runs; docs/queries.md shows both plans.
func (b *Backend) matchConditions(ctx context.Context, p backend.ListWorkflowRunsParams, args *[]any) (string, error) {
	return b.matchConditionsTyped(ctx, p, args, nil)
}

// matchConditionsTyped is matchConditions with the query's attribute
// types already read (nil: read them).
func (b *Backend) matchConditionsTyped(ctx context.Context, p backend.ListWorkflowRunsParams, args *[]any, attrs map[string]runquery.Type) (string, error) {
	var sb strings.Builder
	add := func(cond string, v any) {
		*args = append(*args, v)
		fmt.Fprintf(&sb, "\n  AND "+cond, "$"+strconv.Itoa(len(*args)))
	}
	if p.Status != "" {
		var ss []string
		for _, s := range listedStatuses(p.Status) {
			ss = append(ss, string(s))
		}
		add(`wr."status" = ANY(%s::text[])`, ss)
	}
	if p.WorkflowName != "" {
		add(`wr."workflow_name" = %s`, p.WorkflowName)
	}
	if p.CreatedAfter != nil {
		add(`wr."created_at" >= %s`, *p.CreatedAfter)
	}
	if p.CreatedBefore != nil {
		add(`wr."created_at" < %s`, *p.CreatedBefore)
	}
	if p.Query != nil {
		var cond string
		var all []any
		var err error
		if attrs != nil {
			cond, all, err = b.compileWithTypes(p.Query, attrs, *args)
		} else {
			cond, all, err = b.compileRunQuery(ctx, b.pool, p.Query, *args)
		}
		if err != nil {
			return "", err
		}
		*args = all
		sb.WriteString("\n  AND " + cond)
	}
	return sb.String(), nil
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

// listRunsByAttribute returns the statement and arguments of a page of a
// list whose query requires attrs.x = v (drivingAttribute), read from the
// value's index range in list order (list_runs_by_attribute), or ok false
// when the query requires none.
func (b *Backend) listRunsByAttribute(ctx context.Context, p backend.ListWorkflowRunsParams, after, before *backend.Cursor, limit int) (sql string, args []any, ok bool, err error) {
	attrs, err := b.searchAttributeTypes(ctx, b.pool, p.Query)
	if err != nil {
		return "", nil, false, err
	}
	drive, rest := drivingAttribute(p.Query, attrs)
	if drive == nil {
		return "", nil, false, nil
	}
	typ := attrs[drive.Field.Attr]
	values, err := drive.AttrValues(typ)
	if err != nil {
		return "", nil, false, fmt.Errorf("%w: %w", backend.ErrInvalidArgument, err)
	}
	base := b.q.ListRunsByAttribute
	if p.OmitPayloads {
		base = b.q.ListRunsSummaryByAttribute
	}
	c := &queryCompiler{args: []any{b.namespace}}
	var sb strings.Builder
	sb.WriteString(base)
	fmt.Fprintf(&sb, "\n  AND da.\"name\" = %s AND da.\"%s\" = %s", c.param(drive.Field.Attr), attrColumns[typ], c.param(values[0]))
	q := p
	q.Query = rest
	cond, err := b.matchConditionsTyped(ctx, q, &c.args, attrs)
	if err != nil {
		return "", nil, false, err
	}
	sb.WriteString(cond)
	dir, cur, op := scanDirection(true, after, before)
	if cur != nil {
		c.args = append(c.args, cur.CreatedAt, cur.ID)
		n := len(c.args)
		fmt.Fprintf(&sb, "\n  AND (da.\"run_created_at\", da.\"workflow_run_id\") %s ($%d, $%d)", op, n-1, n)
	}
	fmt.Fprintf(&sb, "\nORDER BY da.\"run_created_at\" %s, da.\"workflow_run_id\" %s\nLIMIT %d", dir, dir, limit+1)
	return sb.String(), c.args, true, nil
}

// CountMatchingRuns implements [backend.Client]: COUNT(*) of the runs
// matching p's filters and query, read from the rows.
func (b *Backend) CountMatchingRuns(ctx context.Context, p backend.ListWorkflowRunsParams) (int64, error) {
	if !backend.ValidText(p.WorkflowName) {
		return 0, nil
	}
	args := []any{b.namespace}
	cond, err := b.matchConditions(ctx, p, &args)
	if err != nil {
		return 0, fmt.Errorf("count matching runs: %w", err)
	}
	var n int64
	err = b.readPool(ctx, func(db *pgxpool.Pool) error {
		return db.QueryRow(ctx, b.q.CountMatchingRuns+cond, args...).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("count matching runs: %w", err)
	}
	return n, nil
}
