package backendtest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// attrStore returns b's SearchAttributeStore, skipping the test when b
// does not implement it.
func attrStore(t *testing.T, b backend.Backend) backend.SearchAttributeStore {
	t.Helper()
	as, ok := b.(backend.SearchAttributeStore)
	if !ok {
		t.Skip("the backend does not implement backend.SearchAttributeStore")
	}
	return as
}

func attrsOf(t testing.TB, as backend.SearchAttributeStore, runID string) backend.SearchAttributes {
	t.Helper()
	m, err := as.SearchAttributesOf(t.Context(), []string{runID})
	if err != nil {
		t.Fatalf("SearchAttributesOf(%s): %v", runID, err)
	}
	return m[runID]
}

func requireAttrs(t testing.TB, what string, got, want backend.SearchAttributes) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: search attributes = %#v, want %#v", what, got, want)
	}
}

func upsert(t testing.TB, as backend.SearchAttributeStore, runID string, attrs backend.SearchAttributes) {
	t.Helper()
	if err := as.UpsertSearchAttributes(t.Context(), backend.UpsertSearchAttributesParams{WorkflowRunID: runID, Attributes: attrs}); err != nil {
		t.Fatalf("UpsertSearchAttributes(%s, %v): %v", runID, attrs, err)
	}
}

func requireAttrError(t testing.TB, what string, err error, name string) {
	t.Helper()
	if !errors.Is(err, backend.ErrInvalidSearchAttribute) || !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("%s: err = %v, want ErrInvalidSearchAttribute (and ErrInvalidArgument)", what, err)
	}
	if !strings.Contains(err.Error(), name) {
		t.Fatalf("%s: error %q does not name %s", what, err, name)
	}
}

var attrTime = time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC)

func testSearchAttributes(t *testing.T, s *suite) {
	t.Run("attributes of every type set at start read back with their types", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		as := attrStore(t, b)
		attrs := backend.SearchAttributes{
			"customer": "c-42", "tags": []string{"eu", "vip"}, "retries": 3, "score": 0.75,
			"urgent": true, "due": attrTime, "empty": []string{},
		}
		run := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "w", SearchAttributes: attrs})
		requireAttrs(t, "run "+run.ID, attrsOf(t, as, run.ID), backend.SearchAttributes{
			"customer": "c-42", "tags": []string{"eu", "vip"}, "retries": int64(3), "score": 0.75,
			"urgent": true, "due": attrTime,
		})
		other := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "w"})
		got, err := as.SearchAttributesOf(t.Context(), []string{run.ID, other.ID, "wrun_missing"})
		if err != nil || len(got) != 1 || got[run.ID] == nil {
			t.Fatalf("SearchAttributesOf(three runs) = %v, %v; want only %s's", got, err, run.ID)
		}
		types, err := as.SearchAttributeTypes(t.Context())
		if err != nil {
			t.Fatalf("SearchAttributeTypes: %v", err)
		}
		want := map[string]string{"customer": "keyword", "tags": "keyword_list", "retries": "int", "score": "float", "urgent": "bool", "due": "time", "empty": "keyword_list"}
		if fmt.Sprint(types) != fmt.Sprint(want) {
			t.Fatalf("SearchAttributeTypes = %v, want %v", types, want)
		}
	})

	t.Run("the first value of a name fixes its type; another type fails the create, which inserts nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		as := attrStore(t, b)
		createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "w", SearchAttributes: backend.SearchAttributes{"n": 1, "due": attrTime, "f": 1.5, "tags": []string{"a"}}})
		_, err := b.CreateWorkflowRun(t.Context(), backend.CreateWorkflowRunParams{WorkflowName: "bad", SearchAttributes: backend.SearchAttributes{"n": "one"}})
		requireAttrError(t, "an int attribute given a string", err, `"n"`)
		_, err = b.CreateWorkflowRun(t.Context(), backend.CreateWorkflowRunParams{WorkflowName: "bad", SearchAttributes: backend.SearchAttributes{"n": 1.5}})
		requireAttrError(t, "an int attribute given a fraction", err, `"n"`)
		_, err = b.CreateWorkflowRun(t.Context(), backend.CreateWorkflowRunParams{WorkflowName: "bad", SearchAttributes: backend.SearchAttributes{"due": "tomorrow"}})
		requireAttrError(t, "a time attribute given a word", err, `"due"`)
		if n, err := b.CountMatchingRuns(t.Context(), backend.ListWorkflowRunsParams{WorkflowName: "bad"}); err != nil || n != 0 {
			t.Fatalf("runs of the refused creates = %d, %v; want 0", n, err)
		}
		// What converts is converted: an int to a float, an RFC 3339 string to a time, a keyword to a one-member list.
		run := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "w", SearchAttributes: backend.SearchAttributes{"f": 2, "due": "2026-11-01T09:30:00Z", "tags": "b"}})
		requireAttrs(t, "converted values", attrsOf(t, as, run.ID), backend.SearchAttributes{"f": 2.0, "due": attrTime, "tags": []string{"b"}})
	})

	t.Run("bad names, values and sizes are refused before anything is written", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		many := backend.SearchAttributes{}
		for i := range backend.MaxSearchAttributes + 1 {
			many[fmt.Sprintf("a%d", i)] = i
		}
		cases := []struct {
			name  string
			attrs backend.SearchAttributes
			names string
		}{
			{"a name with a dash", backend.SearchAttributes{"customer-id": "x"}, `"customer-id"`},
			{"a name that is a keyword", backend.SearchAttributes{"AND": "x"}, `"AND"`},
			{"an unsupported Go type", backend.SearchAttributes{"m": map[string]int{}}, `"m"`},
			{"a keyword with a NUL byte", backend.SearchAttributes{"k": "a\x00b"}, `"k"`},
			{"a value over 2 KiB", backend.SearchAttributes{"k": strings.Repeat("x", backend.MaxSearchAttributeValueBytes+1)}, `"k"`},
			{"more than 100 attributes", many, "101 attributes"},
		}
		for _, c := range cases {
			_, err := b.CreateWorkflowRun(t.Context(), backend.CreateWorkflowRunParams{WorkflowName: "w", SearchAttributes: c.attrs})
			requireAttrError(t, c.name, err, c.names)
		}
		if n, err := b.CountMatchingRuns(t.Context(), backend.ListWorkflowRunsParams{}); err != nil || n != 0 {
			t.Fatalf("runs after refused creates = %d, %v; want 0", n, err)
		}
	})

	t.Run("an upsert sets the names given, removes those set to nil and keeps the others", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		as := attrStore(t, b)
		run := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "w", SearchAttributes: backend.SearchAttributes{"customer": "c-1", "stage": "new", "tags": []string{"a", "b"}}})
		upsert(t, as, run.ID, backend.SearchAttributes{"stage": "paid", "tags": nil, "amount": 12.5})
		requireAttrs(t, "after the upsert", attrsOf(t, as, run.ID), backend.SearchAttributes{"customer": "c-1", "stage": "paid", "amount": 12.5})
		requireQuery(t, b, backend.ListWorkflowRunsParams{}, `attrs.stage = "paid" AND attrs.tags IS NULL`, []string{run.ID})

		err := as.UpsertSearchAttributes(t.Context(), backend.UpsertSearchAttributesParams{WorkflowRunID: run.ID, Attributes: backend.SearchAttributes{"stage": 3, "customer": "c-2"}})
		requireAttrError(t, "an upsert of another type", err, `"stage"`)
		requireAttrs(t, "after the refused upsert", attrsOf(t, as, run.ID), backend.SearchAttributes{"customer": "c-1", "stage": "paid", "amount": 12.5})

		err = as.UpsertSearchAttributes(t.Context(), backend.UpsertSearchAttributesParams{WorkflowRunID: "wrun_missing", Attributes: backend.SearchAttributes{"stage": "x"}})
		requireErrorIs(t, "an upsert of a missing run", err, backend.ErrRunNotFound)

		// The totals count what the run already holds.
		for i := range 3 {
			batch := backend.SearchAttributes{}
			for j := range 40 {
				batch[fmt.Sprintf("k%d_%d", i, j)] = j
			}
			err = as.UpsertSearchAttributes(t.Context(), backend.UpsertSearchAttributesParams{WorkflowRunID: run.ID, Attributes: batch})
			if i < 2 && err != nil {
				t.Fatalf("upsert %d of 40 attributes: %v", i, err)
			}
		}
		requireAttrError(t, "an upsert beyond 100 attributes", err, "attributes")
		if got := len(attrsOf(t, as, run.ID)); got != 83 {
			t.Fatalf("attributes after the refused upsert = %d, want 83", got)
		}
	})

	t.Run("batch, keyed and reused creates store the attributes of the runs they insert", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		as := attrStore(t, b)
		first := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "w", IdempotencyKey: ptr("k"), SearchAttributes: backend.SearchAttributes{"v": 1}})
		runs, err := b.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{
			{WorkflowName: "w", SearchAttributes: backend.SearchAttributes{"v": 2}},
			{WorkflowName: "w", IdempotencyKey: ptr("k"), SearchAttributes: backend.SearchAttributes{"v": 3}},
			{WorkflowName: "w"},
			{WorkflowName: "w", IdempotencyKey: ptr("k2"), SearchAttributes: backend.SearchAttributes{"v": 4}},
		})
		if err != nil {
			t.Fatalf("CreateWorkflowRuns: %v", err)
		}
		if runs[1].ID != first.ID {
			t.Fatalf("the keyed entry made run %s, want the reused %s", runs[1].ID, first.ID)
		}
		requireAttrs(t, "the reused run", attrsOf(t, as, first.ID), backend.SearchAttributes{"v": int64(1)})
		requireAttrs(t, "the batch's plain run", attrsOf(t, as, runs[0].ID), backend.SearchAttributes{"v": int64(2)})
		requireAttrs(t, "the batch's run without attributes", attrsOf(t, as, runs[2].ID), nil)
		requireAttrs(t, "the batch's keyed run", attrsOf(t, as, runs[3].ID), backend.SearchAttributes{"v": int64(4)})

		_, err = b.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{
			{WorkflowName: "batch-bad", SearchAttributes: backend.SearchAttributes{"v": 5}},
			{WorkflowName: "batch-bad", SearchAttributes: backend.SearchAttributes{"v": "five"}},
		})
		requireAttrError(t, "a batch with a value of another type", err, `"v"`)
		if n, err := b.CountMatchingRuns(t.Context(), backend.ListWorkflowRunsParams{WorkflowName: "batch-bad"}); err != nil || n != 0 {
			t.Fatalf("runs of the refused batch = %d, %v; want 0", n, err)
		}
	})

	t.Run("queries select by attributes of every type and operator", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		mk := func(attrs backend.SearchAttributes) string {
			return createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "w", SearchAttributes: attrs}).ID
		}
		r1 := mk(backend.SearchAttributes{"grp": "g", "customer": "c-42", "tags": []string{"eu", "vip"}, "n": 1, "x": 0.5, "ok": true, "due": attrTime})
		r2 := mk(backend.SearchAttributes{"grp": "g", "customer": "c-7", "tags": []string{"us"}, "n": 20, "x": 2.5, "ok": false, "due": attrTime.Add(48 * time.Hour)})
		r3 := mk(backend.SearchAttributes{"grp": "g", "customer": "d-1", "n": -5})
		r4 := mk(nil)
		cases := []struct {
			query string
			want  []string
		}{
			{`attrs.customer = "c-42"`, []string{r1}},
			{`attrs.customer != "c-42"`, []string{r3, r2}},
			{`attrs.customer IN ("c-7", "d-1", "zzz")`, []string{r3, r2}},
			{`attrs.customer NOT IN ("c-7")`, []string{r3, r1}},
			{`attrs.customer STARTS_WITH "c-"`, []string{r2, r1}},
			{`attrs.customer NOT STARTS_WITH "c-"`, []string{r3}},
			{`attrs.customer > "c-5"`, []string{r3, r2}},
			{`attrs.customer IS NULL`, []string{r4}},
			{`attrs.tags = "vip"`, []string{r1}},
			{`attrs.tags IN ("us", "eu")`, []string{r2, r1}},
			{`attrs.tags != "vip"`, []string{r2}},
			{`attrs.tags NOT IN ("vip", "us")`, nil},
			{`attrs.tags IS NOT NULL`, []string{r2, r1}},
			{`attrs.n > 0`, []string{r2, r1}},
			{`attrs.n <= 1`, []string{r3, r1}},
			{`attrs.n IN (20, -5)`, []string{r3, r2}},
			{`attrs.n != 1`, []string{r3, r2}},
			{`attrs.x >= 0.5 AND attrs.x < 2.5`, []string{r1}},
			{`attrs.x > 1`, []string{r2}},
			{`attrs.ok = true`, []string{r1}},
			{`attrs.ok = FALSE`, []string{r2}},
			{`attrs.ok != true`, []string{r2}},
			{`attrs.due > "2026-11-02"`, []string{r2}},
			{`attrs.due = "2026-11-01T09:30:00Z"`, []string{r1}},
			{`attrs.due < "2026-11-01T10:30:00+01:00"`, []string{}}, // 09:30 UTC is not before itself
			{`attrs.due <= "2026-11-01T10:30:00+01:00"`, []string{r1}},
			{`NOT attrs.customer = "c-42"`, []string{r3, r2}}, // a run without the attribute is unknown, as a NULL column
			{`NOT attrs.tags != "vip"`, []string{r1}},
			{`NOT (attrs.tags NOT IN ("vip") OR attrs.n > 100)`, []string{r1}},
			{`NOT NOT attrs.customer = "c-42"`, []string{r1}},
			{`attrs.customer = "c-42" AND status = "pending" OR attrs.n < 0`, []string{r3, r1}},
			{`attrs.customer = "c' OR 1=1 --"`, nil},
		}
		for _, c := range cases {
			requireQuery(t, b, backend.ListWorkflowRunsParams{}, c.query, c.want)
		}
		p := backend.ListWorkflowRunsParams{Limit: 1, Query: parseQuery(t, `attrs.n IS NOT NULL`)}
		requirePaginates(t, b, p, []string{r3, r2, r1})
		// A query that requires attrs.x = v may be read from the value's
		// index range (PostgreSQL does): the same pages and cursors.
		for _, limit := range []int{1, 2} {
			p = backend.ListWorkflowRunsParams{Limit: limit, Query: parseQuery(t, `attrs.grp = "g"`)}
			requirePaginates(t, b, p, []string{r3, r2, r1})
			p = backend.ListWorkflowRunsParams{Limit: limit, OmitPayloads: true, Query: parseQuery(t, `status = "pending" AND attrs.grp = "g" AND attrs.n > -10`)}
			requirePaginates(t, b, p, []string{r3, r2, r1})
		}
		requireQuery(t, b, backend.ListWorkflowRunsParams{WorkflowName: "w"}, `attrs.grp = "g" AND NOT attrs.customer = "c-7"`, []string{r3, r1})
		requireQuery(t, b, backend.ListWorkflowRunsParams{}, `attrs.grp = "h"`, nil)
	})

	t.Run("a query value of another type than the attribute's fails with its position", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "w", SearchAttributes: backend.SearchAttributes{"n": 1, "tags": []string{"a"}}})
		_, err := b.ListWorkflowRuns(t.Context(), backend.ListWorkflowRunsParams{Query: parseQuery(t, `status = "pending" AND attrs.n = "one"`)})
		requireQueryError(t, "an int attribute compared with a string", err, 1, 34, "attrs.n")
		_, err = b.CountMatchingRuns(t.Context(), backend.ListWorkflowRunsParams{Query: parseQuery(t, "attrs.tags\n  > \"a\"")})
		requireQueryError(t, "a keyword list ordered", err, 2, 3, "attrs.tags")
	})

	t.Run("a run's attributes are deleted with it", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		as := attrStore(t, b)
		if _, ok := b.(backend.RunPruner); !ok {
			t.Skip("the backend does not implement backend.RunPruner")
		}
		w := newWorkerID()
		old := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "w", SearchAttributes: backend.SearchAttributes{"customer": "c-1"}})
		completeRun(t, b, old.ID, w, `1`)
		clk.Advance(retention + time.Hour)
		kept := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "w", SearchAttributes: backend.SearchAttributes{"customer": "c-1"}})
		pruneAll(t, b, clk, backend.PruneWorkflowRunsParams{})
		requireGone(t, b, "the pruned run", old.ID)
		got, err := as.SearchAttributesOf(t.Context(), []string{old.ID, kept.ID})
		if err != nil || got[old.ID] != nil || got[kept.ID] == nil {
			t.Fatalf("attributes after pruning = %v, %v; want the kept run's only", got, err)
		}
		requireQuery(t, b, backend.ListWorkflowRunsParams{}, `attrs.customer = "c-1"`, []string{kept.ID})
	})
}
