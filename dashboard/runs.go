package dashboard

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
)

// runsFilter is the runs list's query: ?status=&workflow=&query=&limit=
// &cursor= or &before=, and q, a run id to open. Query is a run query
// (docs/queries.md), passed to the API as its q.
type runsFilter struct {
	Status, Workflow string
	Query            string
	Limit            int
	Cursor, Before   string
	Q                string
}

// statuses are the run statuses a filter may name, in the cards' order.
var statuses = []string{"pending", "running", "completed", "failed", "canceled"}

// pageSizes are the list's page sizes.
var pageSizes = []int{25, 50, 100}

func readRunsFilter(q url.Values) runsFilter {
	f := runsFilter{Status: q.Get("status"), Workflow: strings.TrimSpace(q.Get("workflow")), Cursor: q.Get("cursor"), Before: q.Get("before"), Q: strings.TrimSpace(q.Get("q")),
		Query: strings.TrimSpace(q.Get("query"))}
	f.Limit, _ = strconv.Atoi(q.Get("limit"))
	if f.Limit <= 0 {
		f.Limit = 25
	}
	f.Limit = min(f.Limit, 100)
	return f
}

// query is the filter as the dashboard's own URL query; without the page
// position when page is false.
func (f runsFilter) query(page bool) url.Values {
	q := url.Values{}
	if f.Status != "" {
		q.Set("status", f.Status)
	}
	if f.Workflow != "" {
		q.Set("workflow", f.Workflow)
	}
	if f.Query != "" {
		q.Set("query", f.Query)
	}
	if f.Limit != 25 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if page && f.Cursor != "" {
		q.Set("cursor", f.Cursor)
	}
	if page && f.Before != "" {
		q.Set("before", f.Before)
	}
	return q
}

// CountsQuery is the filter for the counts' own URL (their links keep
// the workflow filter).
func (f runsFilter) CountsQuery() string { return f.query(false).Encode() }

// WithStatus is the list with the filter and another status (for the
// cards), from its first page.
func (f runsFilter) WithStatus(status string) string {
	g := f
	g.Status, g.Cursor, g.Before = status, "", ""
	return listURL(g.query(false))
}

func listURL(q url.Values) string {
	if len(q) == 0 {
		return "/"
	}
	return "/?" + q.Encode()
}

// apiQuery is the filter as the API's query of GET /v1/runs.
func (f runsFilter) apiQuery() url.Values {
	q := url.Values{"limit": {strconv.Itoa(f.Limit)}, "resolveData": {"none"}}
	if f.Status != "" {
		q.Set("status", f.Status)
	}
	if f.Workflow != "" {
		q.Set("workflowName", f.Workflow)
	}
	if f.Query != "" {
		q.Set("q", f.Query)
	}
	if f.Cursor != "" {
		q.Set("cursor", f.Cursor)
	} else if f.Before != "" {
		q.Set("before", f.Before)
	}
	return q
}

// runsData is the runs page.
type runsData struct {
	Filter   runsFilter
	Statuses []string
	Sizes    []int
	// Counts is nil until counted (counting every run of a large namespace
	// takes a while: the page then asks for them after it loads).
	Counts   *backend.RunCounts
	Total    int
	Rows     []runRow
	Next     string
	Prev     string
	First    bool
	Live     bool
	Problem  string
	Filtered bool
	// BulkQuery is the run query of the filters, for "Select all
	// matching" (a bulk action over them).
	BulkQuery string
	// QueryError is the API's refusal of the filter's query, shown under
	// the query box; nil when the query ran.
	QueryError *queryProblem
}

// queryProblem is a query the API refused: its message, its position and
// the query's line at fault with a caret under the position.
type queryProblem struct {
	Message      string
	Line, Column int
	Text, Caret  string
}

// queryProblemOf returns the query error of err (a 400 of the API about
// q, with a position), or nil.
func queryProblemOf(query string, err error) *queryProblem {
	var e *api.Error
	if !errors.As(err, &e) || e.Field != "q" || e.Position == nil {
		return nil
	}
	msg := e.Message // "invalid query at 1:23: …": the box says where itself
	if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "invalid query at ") && i >= 0 {
		msg = msg[i+2:]
	}
	p := &queryProblem{Message: msg, Line: e.Position.Line, Column: e.Position.Column}
	if lines := strings.Split(query, "\n"); p.Line >= 1 && p.Line <= len(lines) {
		p.Text = lines[p.Line-1]
		p.Caret = strings.Repeat(" ", max(0, min(p.Column-1, len(p.Text)))) + "^"
	}
	return p
}

// runRow is one run of the list.
type runRow struct {
	Run   api.Run
	State runState
	// ParentRunID is the run that started this one, when it is a child.
	ParentRunID string
}

// Began is when the run began, for its duration (see began).
func (r runRow) Began() *time.Time { return began(&r.Run) }

// Claims counts the run's claims by workers (see claims).
func (r runRow) Claims() int { return claims(&r.Run) }

func (d *Dashboard) runsPage(w http.ResponseWriter, r *http.Request) {
	f := readRunsFilter(r.URL.Query())
	if f.Q != "" {
		d.search(w, r, f)
		return
	}
	data, err := d.loadRuns(r.Context(), f, time.Now())
	if err != nil {
		status := apiStatus(err)
		if status >= 500 {
			d.failAPI(w, r, "Runs could not be listed", err)
			return
		}
		// A filter or cursor the API refused: say so above an empty list
		// (a query's error under its box, with its position).
		data = &runsData{Filter: f, Statuses: statuses, Sizes: pageSizes, Filtered: true, First: true}
		if data.QueryError = queryProblemOf(f.Query, err); data.QueryError == nil {
			data.Problem = err.Error()
		}
	}
	v := d.view(r, "Runs", "runs", data)
	if data.Live {
		q := f.query(false)
		fp := fingerprintRows(data)
		q.Set("since", hex.EncodeToString(fp[:]))
		v.Live = "/live?" + q.Encode()
	}
	d.render(w, r, http.StatusOK, "runs", v)
}

// search opens the run whose id was typed in the search box, or lists
// nothing and says none has it.
func (d *Dashboard) search(w http.ResponseWriter, r *http.Request, f runsFilter) {
	var run api.Run
	err := d.api.get(r.Context(), "/v1/runs/"+url.PathEscape(f.Q), url.Values{"resolveData": {"none"}}, &run)
	if err == nil {
		http.Redirect(w, r, "/runs/"+url.PathEscape(run.ID), http.StatusSeeOther)
		return
	}
	if apiStatus(err) >= 500 {
		d.failAPI(w, r, "The run could not be looked up", err)
		return
	}
	data := &runsData{Filter: f, Statuses: statuses, Sizes: pageSizes, Counts: d.counts.fresh(),
		Problem: "No run has the id " + strconv.Quote(f.Q) + ". The search box takes a whole run id (wrun_…, or a UUID from the TypeScript SDK)."}
	d.render(w, r, http.StatusNotFound, "runs", d.view(r, "Runs", "runs", data))
}

// loadRuns reads one page of the list, the parents of its child runs and
// what its parked runs wait for.
func (d *Dashboard) loadRuns(ctx context.Context, f runsFilter, now time.Time) (*runsData, error) {
	var page api.RunPage
	if err := d.api.get(ctx, "/v1/runs", f.apiQuery(), &page); err != nil {
		return nil, err
	}
	data := &runsData{Filter: f, Statuses: statuses, Sizes: pageSizes, Counts: d.counts.fresh(),
		First: f.Cursor == "" && (f.Before == "" || page.PrevCursor == nil), Filtered: f.Status != "" || f.Workflow != "" || f.Query != "", BulkQuery: bulkQueryOf(f)}
	data.Live = f.Cursor == "" && f.Before == ""
	if data.Counts != nil {
		data.Total = total(data.Counts)
	}
	if page.Cursor != nil {
		g := f
		g.Cursor, g.Before = *page.Cursor, ""
		data.Next = listURL(g.query(true))
	}
	if page.PrevCursor != nil {
		g := f
		g.Cursor, g.Before = "", *page.PrevCursor
		data.Prev = listURL(g.query(true))
	}
	data.Rows = make([]runRow, len(page.Data))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8) // lookups in flight at once
	for i := range page.Data {
		row := &data.Rows[i]
		row.Run = page.Data[i]
		if !row.Run.Parked && row.Run.ParentStepID == nil {
			row.State = describe(&row.Run, nil, now)
			continue
		}
		wg.Add(1)
		go func() { // owned by loadRuns, which waits for it
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var steps []api.Step
			if row.Run.Parked {
				steps = d.lastSteps(ctx, row.Run.ID)
			}
			row.State = describe(&row.Run, steps, now)
			if row.Run.ParentStepID != nil {
				var parent api.Step
				if d.api.get(ctx, "/v1/steps/"+url.PathEscape(*row.Run.ParentStepID), url.Values{"resolveData": {"none"}}, &parent) == nil {
					row.ParentRunID = parent.RunID
				}
			}
		}()
	}
	wg.Wait()
	return data, ctx.Err()
}

// lastSteps reads a parked run's attempts without their outputs, to say
// what it waits for; nil when they cannot be read (the list then says
// only that it waits).
func (d *Dashboard) lastSteps(ctx context.Context, runID string) []api.Step {
	var l api.List[api.Step]
	if err := d.api.get(ctx, "/v1/runs/"+url.PathEscape(runID)+"/steps", url.Values{"limit": {"1000"}, "resolveData": {"none"}}, &l); err != nil {
		return nil
	}
	return l.Data
}

func total(c *backend.RunCounts) int {
	return c.Pending + c.Running + c.Completed + c.Failed + c.Canceled
}

// Count returns the count of a status, for the template.
func (d *runsData) Count(status string) int {
	if d.Counts == nil {
		return 0
	}
	switch status {
	case "pending":
		return d.Counts.Pending
	case "running":
		return d.Counts.Running
	case "completed":
		return d.Counts.Completed
	case "failed":
		return d.Counts.Failed
	case "canceled":
		return d.Counts.Canceled
	}
	return 0
}

// countsCache keeps the last counts by status for a while: on SQLite
// counting is a scan of every run of the namespace (11 ms at 100,000
// runs; PostgreSQL reads counters since go migration 6, well under a
// millisecond), so pages never wait for it. A page shows the counts when
// they are fresh, and otherwise asks for them after it loaded; one count
// at a time runs, whoever asks.
type countsCache struct {
	mu     sync.Mutex
	counts *backend.RunCounts
	at     time.Time
	took   time.Duration
	// running is closed when the count in flight ends.
	running chan struct{}
}

// countsTTL is how long counts are reused: 5 s, or 25 times what the
// last count took when that is longer, so counting costs at most 4% of a
// database connection however many pages are open.
func (c *countsCache) ttl() time.Duration {
	return max(5*time.Second, 25*c.took)
}

// fresh returns the counts if they are younger than the TTL, else nil.
func (c *countsCache) fresh() *backend.RunCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts != nil && time.Since(c.at) < c.ttl() {
		return c.counts
	}
	return nil
}

// get returns fresh counts, counting through the API if they are stale;
// concurrent callers share one count.
func (c *countsCache) get(ctx context.Context, a apiClient) (*backend.RunCounts, error) {
	for {
		c.mu.Lock()
		if c.counts != nil && time.Since(c.at) < c.ttl() {
			defer c.mu.Unlock()
			return c.counts, nil
		}
		if wait := c.running; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		c.running = done
		c.mu.Unlock()

		start := time.Now()
		var counts backend.RunCounts
		err := a.get(context.WithoutCancel(ctx), "/v1/runs/counts", nil, &counts)
		c.mu.Lock()
		c.running = nil
		if err == nil {
			c.counts, c.at, c.took = &counts, time.Now(), time.Since(start)
		}
		c.mu.Unlock()
		close(done)
		if err != nil {
			return nil, err
		}
		return &counts, nil
	}
}

// countsFragment answers the status cards, for a page that rendered
// without counts.
func (d *Dashboard) countsFragment(w http.ResponseWriter, r *http.Request) {
	counts, err := d.counts.get(r.Context(), d.api)
	if err != nil {
		http.Error(w, "the runs could not be counted: "+err.Error(), apiStatus(err))
		return
	}
	f := readRunsFilter(r.URL.Query())
	v := d.view(r, "", "", &runsData{Filter: f, Statuses: statuses, Counts: counts, Total: total(counts)})
	html, err := d.fragment("runs", "counts", v)
	if err != nil {
		d.log.Error("dashboard: render counts", "err", err)
		http.Error(w, "render the counts: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(html))
}
