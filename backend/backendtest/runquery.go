package backendtest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/runquery"
)

// queryFixture is a namespace holding one run of each kind a query tells
// apart, created a minute apart on a fake clock; list order (newest
// first) is pendingSync, scheduled, child, parent, canceled, completed,
// failed.
type queryFixture struct {
	b                                     backend.Backend
	failed, completed, canceled           *backend.WorkflowRun
	parent, child, scheduled, pendingSync *backend.WorkflowRun
}

func (s *suite) newQueryFixture(t *testing.T) *queryFixture {
	t.Helper()
	clk := newClock()
	b := s.newBackendOn(t, clk)
	f := &queryFixture{b: b}
	w := newWorkerID()
	f.failed = startRun(t, b, w, backend.CreateWorkflowRunParams{
		WorkflowName: "sync-account", Version: ptr("v1"), IdempotencyKey: ptr("key-1"),
		ConcurrencyKey: ptr("acct-42"), Priority: 5,
	})
	clk.Advance(time.Minute)
	f.failed = failRun(t, b, f.failed.ID, w, `{"message":"boom"}`)
	clk.Advance(time.Minute)
	f.completed = startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "invoice", Version: ptr("v2")})
	clk.Advance(time.Minute)
	f.completed = completeRun(t, b, f.completed.ID, w, `1`)
	clk.Advance(time.Minute)
	f.canceled = cancelRun(t, b, createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "invoice"}).ID)
	clk.Advance(time.Minute)
	fam := startFamily(t, b, w)
	f.parent, f.child = getRun(t, b, fam.parent.ID), getRun(t, b, fam.child.ID)
	clk.Advance(time.Minute)
	if ss, ok := b.(backend.ScheduleStore); ok {
		putSchedule(t, ss, backend.PutScheduleParams{Name: "nightly", WorkflowName: "report", Cron: "0 3 * * *", Paused: true})
		run, err := ss.TriggerSchedule(t.Context(), "nightly")
		if err != nil {
			t.Fatalf("TriggerSchedule(nightly): %v", err)
		}
		f.scheduled = run
	} else {
		f.scheduled = createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "report"})
	}
	clk.Advance(time.Minute)
	f.pendingSync = createRun(t, b, backend.CreateWorkflowRunParams{
		WorkflowName: "sync-account", IdempotencyKey: ptr("key-2"), ConcurrencyKey: ptr("acct-7"), Priority: -3,
	})
	for _, r := range []**backend.WorkflowRun{&f.failed, &f.completed, &f.canceled, &f.scheduled} {
		*r = getRun(t, b, (*r).ID) // as stored: the writes' answers need not carry every field
	}
	return f
}

// all is every run of the fixture, in list order.
func (f *queryFixture) all() []*backend.WorkflowRun {
	return []*backend.WorkflowRun{f.pendingSync, f.scheduled, f.child, f.parent, f.canceled, f.completed, f.failed}
}

func queryIDs(runs ...*backend.WorkflowRun) []string { return runIDs(runs) }

func parseQuery(t testing.TB, src string) *runquery.Query {
	t.Helper()
	q, err := runquery.Parse(src)
	if err != nil {
		t.Fatalf("runquery.Parse(%q): %v", src, err)
	}
	return q
}

// requireQuery lists and counts with query src (plus p's other filters)
// and requires want, in list order.
func requireQuery(t *testing.T, b backend.Backend, p backend.ListWorkflowRunsParams, src string, want []string) {
	t.Helper()
	p.Query = parseQuery(t, src)
	page, err := b.ListWorkflowRuns(t.Context(), p)
	if err != nil {
		t.Fatalf("ListWorkflowRuns(query %s): %v", src, err)
	}
	requireIDs(t, "runs listed by "+src, pageRunIDs(page), want)
	n, err := b.CountMatchingRuns(t.Context(), p)
	if err != nil {
		t.Fatalf("CountMatchingRuns(query %s): %v", src, err)
	}
	if n != int64(len(want)) {
		t.Fatalf("CountMatchingRuns(query %s) = %d, want %d", src, n, len(want))
	}
}

func rfc3339(t *time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func testRunQueries(t *testing.T, s *suite) {
	t.Run("paused selects the runs paused and not finished (a finished run is not paused)", func(t *testing.T) {
		t.Parallel()
		f := s.newQueryFixture(t)
		if _, ok := f.b.(backend.RunPauser); !ok {
			t.Skip("the backend does not implement backend.RunPauser")
		}
		pauseRun(t, f.b, f.pendingSync.ID, "hold")
		pauseRun(t, f.b, f.scheduled.ID, "")
		cancelRun(t, f.b, f.scheduled.ID) // paused, then canceled: finished, so not paused
		requireQuery(t, f.b, backend.ListWorkflowRunsParams{}, `paused = true`, queryIDs(f.pendingSync))
		requireQuery(t, f.b, backend.ListWorkflowRunsParams{}, `paused = false AND workflow = "sync-account"`, queryIDs(f.failed))
		requireQuery(t, f.b, backend.ListWorkflowRunsParams{}, `paused != true AND workflow = "report"`, queryIDs(f.scheduled))
	})
	t.Run("every run field and operator selects the runs it names, in list order, and counts them", func(t *testing.T) {
		t.Parallel()
		f := s.newQueryFixture(t)
		all := f.all()
		cases := []struct {
			query string
			want  []*backend.WorkflowRun
		}{
			{`status = "failed"`, []*backend.WorkflowRun{f.failed}},
			{`status == "running"`, []*backend.WorkflowRun{f.parent}},
			{`status != "pending"`, []*backend.WorkflowRun{f.parent, f.canceled, f.completed, f.failed}},
			{`status IN ("completed", "canceled")`, []*backend.WorkflowRun{f.canceled, f.completed}},
			{`status not in ("pending", "running")`, []*backend.WorkflowRun{f.canceled, f.completed, f.failed}},
			{`status = "succeeded"`, []*backend.WorkflowRun{f.completed}}, // the legacy name reads as completed
			{`workflow = "sync-account"`, []*backend.WorkflowRun{f.pendingSync, f.failed}},
			{`workflow STARTS_WITH "sync-"`, []*backend.WorkflowRun{f.pendingSync, f.failed}},
			{`workflow NOT STARTS_WITH "sync-" AND workflow != "invoice"`, []*backend.WorkflowRun{f.scheduled, f.child, f.parent}},
			{`workflow > "parent"`, []*backend.WorkflowRun{f.pendingSync, f.scheduled, f.failed}},
			{`workflow <= "child"`, []*backend.WorkflowRun{f.child}},
			{`id = "` + f.canceled.ID + `"`, []*backend.WorkflowRun{f.canceled}},
			{`id IN ("` + f.canceled.ID + `", "` + f.failed.ID + `", "wrun_nope")`, []*backend.WorkflowRun{f.canceled, f.failed}},
			{`version = "v1"`, []*backend.WorkflowRun{f.failed}},
			{`version IS NOT NULL`, []*backend.WorkflowRun{f.completed, f.failed}},
			{`version IS NULL AND workflow = "invoice"`, []*backend.WorkflowRun{f.canceled}},
			{`version != "v1"`, []*backend.WorkflowRun{f.completed}}, // a NULL version matches no comparison
			{`idempotency_key = "key-2"`, []*backend.WorkflowRun{f.pendingSync}},
			{`idempotency_key IS NULL AND workflow = "invoice"`, []*backend.WorkflowRun{f.canceled, f.completed}},
			{`concurrency_key = "acct-42"`, []*backend.WorkflowRun{f.failed}},
			{`concurrency_key IS NOT NULL`, []*backend.WorkflowRun{f.pendingSync, f.failed}},
			{`priority > 0`, []*backend.WorkflowRun{f.failed}},
			{`priority < 0`, []*backend.WorkflowRun{f.pendingSync}},
			{`priority >= 5 OR priority <= -3`, []*backend.WorkflowRun{f.pendingSync, f.failed}},
			{`priority IN (5, -3)`, []*backend.WorkflowRun{f.pendingSync, f.failed}},
			{`priority NOT IN (0)`, []*backend.WorkflowRun{f.pendingSync, f.failed}},
			{`priority = 99999999999`, nil}, // beyond the column's 32 bits: compared, not an error
			{`parent = "` + f.parent.ID + `"`, []*backend.WorkflowRun{f.child}},
			{`parent IS NOT NULL`, []*backend.WorkflowRun{f.child}},
			{`parent IS NULL AND workflow = "parent"`, []*backend.WorkflowRun{f.parent}},
			{`schedule = "nightly"`, []*backend.WorkflowRun{f.scheduled}},
			{`schedule IS NOT NULL`, []*backend.WorkflowRun{f.scheduled}},
			{`created > "` + rfc3339(&f.completed.CreatedAt) + `"`, []*backend.WorkflowRun{f.pendingSync, f.scheduled, f.child, f.parent, f.canceled}},
			{`created <= "` + rfc3339(&f.completed.CreatedAt) + `"`, []*backend.WorkflowRun{f.completed, f.failed}},
			{`created = "` + rfc3339(&f.canceled.CreatedAt) + `"`, []*backend.WorkflowRun{f.canceled}},
			{`created >= "` + rfc3339(ptr(f.canceled.CreatedAt.Add(500*time.Microsecond))) + `"`, []*backend.WorkflowRun{f.pendingSync, f.scheduled, f.child, f.parent}},
			{`created < "` + rfc3339(ptr(f.canceled.CreatedAt.Add(500*time.Microsecond))) + `"`, []*backend.WorkflowRun{f.canceled, f.completed, f.failed}},
			{`created > "2000-01-01" AND created < "9999-12-31"`, all},
			{`started IS NULL AND workflow = "invoice"`, []*backend.WorkflowRun{f.canceled}},
			{`finished IS NOT NULL`, []*backend.WorkflowRun{f.canceled, f.completed, f.failed}},
			{`finished >= "` + rfc3339(f.completed.FinishedAt) + `"`, []*backend.WorkflowRun{f.canceled, f.completed}},
			{`updated >= "` + rfc3339(&f.pendingSync.UpdatedAt) + `"`, []*backend.WorkflowRun{f.pendingSync}},
			{`NOT workflow = "invoice" AND NOT (status = "pending" OR status = "running")`, []*backend.WorkflowRun{f.failed}},
			{`workflow = "invoice" AND status = "failed" OR priority < 0`, []*backend.WorkflowRun{f.pendingSync}},
			{`workflow = "invoice" AND (status = "failed" OR version = "v2")`, []*backend.WorkflowRun{f.completed}},
			// Values are bound, never spliced into the SQL (temporalio/temporal#11797).
			{`workflow = "x' OR '1'='1"`, nil},
			{`workflow = "?" OR workflow = "$1" OR workflow = ":ns"`, nil},
			{`workflow STARTS_WITH "%"`, nil},
		}
		for _, c := range cases {
			requireQuery(t, f.b, backend.ListWorkflowRunsParams{}, c.query, runIDs(c.want))
		}
		// started: the runs as stored say which were started when (a
		// failed run's started_at is cleared, as OpenWorkflow does).
		var started []*backend.WorkflowRun
		for _, r := range all {
			if r := getRun(t, f.b, r.ID); r.StartedAt != nil {
				started = append(started, r)
			}
		}
		if len(started) < 2 {
			t.Fatalf("the fixture has %d started runs, want at least 2", len(started))
		}
		requireQuery(t, f.b, backend.ListWorkflowRunsParams{}, `started IS NOT NULL`, runIDs(started))
		last := started[0]
		requireQuery(t, f.b, backend.ListWorkflowRunsParams{}, `started < "`+rfc3339(last.StartedAt)+`"`, runIDs(started[1:]))
		requireQuery(t, f.b, backend.ListWorkflowRunsParams{}, `started >= "`+rfc3339(last.StartedAt)+`"`, runIDs(started[:1]))
	})

	t.Run("a query combines with the list's other filters", func(t *testing.T) {
		t.Parallel()
		f := s.newQueryFixture(t)
		requireQuery(t, f.b, backend.ListWorkflowRunsParams{Status: backend.RunPending}, `workflow = "sync-account"`, queryIDs(f.pendingSync))
		requireQuery(t, f.b, backend.ListWorkflowRunsParams{WorkflowName: "invoice"}, `status IS NOT NULL`, queryIDs(f.canceled, f.completed))
		requireQuery(t, f.b, backend.ListWorkflowRunsParams{CreatedBefore: &f.canceled.CreatedAt}, `priority >= 0`, queryIDs(f.completed, f.failed))
		requireQuery(t, f.b, backend.ListWorkflowRunsParams{CreatedAfter: &f.canceled.CreatedAt, OmitPayloads: true}, `workflow != "child"`, queryIDs(f.pendingSync, f.scheduled, f.parent, f.canceled))
	})

	t.Run("a query's pages keep the list's order and cursors, both ways", func(t *testing.T) {
		t.Parallel()
		f := s.newQueryFixture(t)
		p := backend.ListWorkflowRunsParams{Limit: 2, Query: parseQuery(t, `workflow != "parent"`)}
		requirePaginates(t, f.b, p, queryIDs(f.pendingSync, f.scheduled, f.child, f.canceled, f.completed, f.failed))
	})

	t.Run("a search attribute no run has set fails with ErrInvalidArgument and its position", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "a"})
		p := backend.ListWorkflowRunsParams{Query: parseQuery(t, `status = "failed" AND attrs.customer = "c-42"`)}
		_, err := b.ListWorkflowRuns(t.Context(), p)
		requireQueryError(t, "ListWorkflowRuns", err, 1, 23, "attrs.customer")
		_, err = b.CountMatchingRuns(t.Context(), p)
		requireQueryError(t, "CountMatchingRuns", err, 1, 23, "attrs.customer")
	})
}

// requireQueryError requires an error wrapping backend.ErrInvalidArgument
// and a *runquery.Error at line:col whose message names what.
func requireQueryError(t testing.TB, call string, err error, line, col int, what string) {
	t.Helper()
	var qe *runquery.Error
	if !errors.Is(err, backend.ErrInvalidArgument) || !errors.As(err, &qe) {
		t.Fatalf("%s: err = %v, want ErrInvalidArgument with a *runquery.Error", call, err)
	}
	if qe.Pos.Line != line || qe.Pos.Column != col || !strings.Contains(qe.Msg, what) {
		t.Fatalf("%s: error %v, want at %d:%d naming %s", call, qe, line, col, what)
	}
}
