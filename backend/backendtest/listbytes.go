package backendtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

// testListBounds specifies what bounds the cost of one list page:
// OmitPayloads (no input or output read) and MaxBytes (a page ends early,
// and the next one carries on from the row it ended before).
func testListBounds(t *testing.T, s *suite) {
	testReadStreamBound(t, s)
	t.Run("OmitPayloads lists runs without input and output, the rest as stored", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		done := startRun(t, b, w, backend.CreateWorkflowRunParams{Input: json.RawMessage(`{"big":"` + strings.Repeat("i", 2000) + `"}`)})
		completeRun(t, b, done.ID, w, `{"out":"`+strings.Repeat("o", 2000)+`"}`)
		pending := createRun(t, b, backend.CreateWorkflowRunParams{Input: json.RawMessage(`[1,2,3]`)})

		full := listRuns(t, b, backend.ListWorkflowRunsParams{})
		light := listRuns(t, b, backend.ListWorkflowRunsParams{OmitPayloads: true})
		requireIDs(t, "runs listed without payloads", pageRunIDs(light), []string{pending.ID, done.ID})
		requireIDs(t, "runs listed with payloads", pageRunIDs(full), []string{pending.ID, done.ID})
		if full.Data[1].Input == nil || full.Data[1].Output == nil {
			t.Fatalf("the list without OmitPayloads gave input %s and output %s, want both", full.Data[1].Input, full.Data[1].Output)
		}
		for i := range light.Data {
			want := full.Data[i]
			want.Input, want.Output = nil, nil
			requireRun(t, fmt.Sprintf("run %d listed without payloads", i), &light.Data[i], &want)
			if light.Data[i].Input != nil || light.Data[i].Output != nil {
				t.Fatalf("run %s listed with OmitPayloads has input %s and output %s, want neither", light.Data[i].ID, light.Data[i].Input, light.Data[i].Output)
			}
		}
	})

	t.Run("OmitPayloads lists step attempts without output, the rest as stored", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		step := createStep(t, b, run.ID, w, "load", backend.StepFunction, "")
		if _, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: w, Output: json.RawMessage(`"` + strings.Repeat("o", 2000) + `"`)}); err != nil {
			t.Fatalf("CompleteStepAttempt: %v", err)
		}
		full := listSteps(t, b, backend.ListStepAttemptsParams{WorkflowRunID: run.ID})
		light := listSteps(t, b, backend.ListStepAttemptsParams{WorkflowRunID: run.ID, OmitPayloads: true})
		requireIDs(t, "attempts listed without payloads", pageStepIDs(light), []string{step.ID})
		if full.Data[0].Output == nil {
			t.Fatal("the list without OmitPayloads gave no output, want the step's")
		}
		want := full.Data[0]
		want.Output = nil
		requireStep(t, "attempt listed without payloads", &light.Data[0], &want)
		if light.Data[0].Output != nil {
			t.Fatalf("attempt listed with OmitPayloads has output %s, want none", light.Data[0].Output)
		}
	})

	t.Run("MaxBytes ends run pages early and pages on with no run lost or repeated", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		var ids []string
		for _, n := range []int{100, 300, 50, 400, 200, 100, 900, 10} {
			ids = append(ids, createRun(t, b, backend.CreateWorkflowRunParams{Input: json.RawMessage(`"` + strings.Repeat("x", n) + `"`)}).ID)
		}
		all := listRuns(t, b, backend.ListWorkflowRunsParams{})
		requireIDs(t, "the whole list", pageRunIDs(all), reversed(ids))
		sizes := make([]int, len(all.Data))
		for i := range all.Data {
			sizes[i] = all.Data[i].PayloadBytes()
		}
		const maxBytes = 500
		list := func(after, before string) ([]string, *string, *string) {
			page := listRuns(t, b, backend.ListWorkflowRunsParams{MaxBytes: maxBytes, Limit: 3, After: after, Before: before})
			return pageRunIDs(page), page.Next, page.Prev
		}
		requireBudgetPages(t, list, pageRunIDs(all), sizes, 3, maxBytes)
	})

	t.Run("MaxBytes ends attempt pages early and pages on with no attempt lost or repeated", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		for i, n := range []int{600, 20, 20, 300, 300, 10} {
			step := createStep(t, b, run.ID, w, fmt.Sprintf("s%d", i), backend.StepFunction, "")
			if _, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: w, Output: json.RawMessage(`"` + strings.Repeat("o", n) + `"`)}); err != nil {
				t.Fatalf("CompleteStepAttempt: %v", err)
			}
		}
		all := listSteps(t, b, backend.ListStepAttemptsParams{WorkflowRunID: run.ID})
		sizes := make([]int, len(all.Data))
		for i := range all.Data {
			sizes[i] = all.Data[i].PayloadBytes()
		}
		const maxBytes = 400
		list := func(after, before string) ([]string, *string, *string) {
			page := listSteps(t, b, backend.ListStepAttemptsParams{WorkflowRunID: run.ID, MaxBytes: maxBytes, Limit: 4, After: after, Before: before})
			return pageStepIDs(page), page.Next, page.Prev
		}
		requireBudgetPages(t, list, pageStepIDs(all), sizes, 4, maxBytes)
	})
}

// budgetPages splits ids (sizes[i] bytes each) into pages of at most
// limit rows read from the first, each ending before the row that would
// take it beyond maxBytes (a page holds one row at least): the pages a
// list bounded by MaxBytes gives going forward.
func budgetPages(ids []string, sizes []int, limit, maxBytes int) [][]string {
	var pages [][]string
	for i := 0; i < len(ids); {
		j, used := i, 0
		for j < len(ids) && j-i < limit && (j == i || used+sizes[j] <= maxBytes) {
			used += sizes[j]
			j++
		}
		pages = append(pages, ids[i:j])
		i = j
	}
	return pages
}

// requireBudgetPages walks a list bounded by limit and maxBytes forward
// from its start, requiring the pages budgetPages computes from want (the
// whole list in order) and sizes, then backward from its end with the
// Prev cursors, requiring pages cut the same way from the other end; both
// walks must give every row once.
func requireBudgetPages(t testing.TB, list func(after, before string) (ids []string, next, prev *string), want []string, sizes []int, limit, maxBytes int) {
	t.Helper()
	forward := budgetPages(want, sizes, limit, maxBytes)
	if len(forward) < 3 {
		t.Fatalf("the test's rows make %d pages; want at least 3 for the budget to matter", len(forward))
	}
	after := ""
	var prev *string
	for i, wantPage := range forward {
		ids, next, p := list(after, "")
		requireIDs(t, fmt.Sprintf("page %d going forward", i), ids, wantPage)
		last := i == len(forward)-1
		if (next == nil) != last || (p != nil) != (i > 0) {
			t.Fatalf("page %d going forward: next set = %v, prev set = %v; want %v, %v", i, next != nil, p != nil, !last, i > 0)
		}
		if !last {
			after = *next
		}
		prev = p
	}
	// Backward: pages are cut from the cursor's side, so they are those of
	// the reversed list, each reversed back.
	rwant, rsizes := slices.Clone(want), slices.Clone(sizes)
	slices.Reverse(rwant)
	slices.Reverse(rsizes)
	lastPage := forward[len(forward)-1]
	back := budgetPages(rwant[len(lastPage):], rsizes[len(lastPage):], limit, maxBytes)
	var seen []string
	for i, wantPage := range back {
		wantPage = slices.Clone(wantPage)
		slices.Reverse(wantPage)
		ids, next, p := list("", *prev)
		requireIDs(t, fmt.Sprintf("page %d going back", i), ids, wantPage)
		first := i == len(back)-1
		if next == nil || (p == nil) != first {
			t.Fatalf("page %d going back: next set = %v, prev set = %v; want true, %v", i, next != nil, p != nil, !first)
		}
		seen = append(ids, seen...)
		prev = p
	}
	requireIDs(t, "rows of the pages going back, then the last page", append(seen, lastPage...), want)
}

// testReadStreamBound specifies ReadStreamParams.MaxBytes.
func testReadStreamBound(t *testing.T, s *suite) {
	t.Run("ReadStream with MaxBytes stops at the first chunk beyond the budget and returns it last", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		streamStore(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		wr := newWriter(run, w)
		for _, n := range []int{100, 300, 200, 50, 400} {
			wr.append(t, b, "out", strings.Repeat("c", n))
		}
		wr.close(t, b, "out")
		for _, c := range []struct {
			after    int64
			want     []int64
			wantDone bool
		}{
			{0, []int64{1, 2, 3}, false}, // 100+300 fit 450; chunk 3 (200) does not
			{2, []int64{3, 4, 5}, false}, // 200+50 fit; chunk 5 (400) does not
			{4, []int64{5, 6}, true},     // a page's first chunk always fits; the empty close too
			{5, []int64{6}, true},        // the close alone
			{6, []int64{}, true},         // past the end
		} {
			chunks, done, err := streamStore(t, b).ReadStream(t.Context(), backend.ReadStreamParams{WorkflowRunID: run.ID, Stream: "out", AfterSeq: c.after, Limit: 10, MaxBytes: 450})
			if err != nil {
				t.Fatalf("ReadStream(after %d, MaxBytes 450): %v", c.after, err)
			}
			got := []int64{}
			for _, ch := range chunks {
				got = append(got, ch.Seq)
			}
			if !slices.Equal(got, c.want) || done != c.wantDone {
				t.Fatalf("ReadStream(after %d, MaxBytes 450) = chunks %v (done %v), want %v (done %v)", c.after, got, done, c.want, c.wantDone)
			}
		}
	})
}
