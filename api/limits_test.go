package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
)

// TestListsLeavePayloadsOutByDefault: every list answers without inputs,
// outputs and metadata unless asked with resolveData=all (issue 19: a page
// of 1000 runs with 1 MB inputs was 1 GB), while single reads keep them.
func TestListsLeavePayloadsOutByDefault(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		run := s.start("add", map[string]int{"A": 2, "B": 3})
		s.waitStatus(run.ID, "completed")
		tok := "tok-" + strings.ReplaceAll(t.Name(), "/", "-")
		hooked := s.start("approval", map[string]any{"Token": tok, "N": 1})
		s.until("the hook exists", func() bool { return s.hookExists(tok) })

		lists := []struct {
			path    string
			members []string // the payload members of each record
		}{
			{"/v1/runs", []string{"input", "output"}},
			{"/v1/runs/" + run.ID + "/steps", []string{"output"}},
			{"/v1/runs/" + run.ID + "/history", []string{"data"}},
			{"/v1/runs/" + hooked.ID + "/hooks", []string{"metadata"}},
		}
		for _, l := range lists {
			count := func(query string) int {
				var page struct{ Data []map[string]json.RawMessage }
				s.must(http.StatusOK, "GET", l.path+query, nil).decode(t, &page)
				if len(page.Data) == 0 {
					t.Fatalf("GET %s%s listed nothing", l.path, query)
				}
				n := 0
				for _, rec := range page.Data {
					for _, m := range l.members {
						if v, ok := rec[m]; ok && string(v) != "null" {
							n++
						}
					}
				}
				return n
			}
			if n := count(""); n != 0 {
				t.Errorf("GET %s answered %d payloads (%v) by default, want none", l.path, n, l.members)
			}
			if n := count("?resolveData=none"); n != 0 {
				t.Errorf("GET %s?resolveData=none answered %d payloads, want none", l.path, n)
			}
			if n := count("?resolveData=all"); n == 0 {
				t.Errorf("GET %s?resolveData=all answered no payload (%v), want them", l.path, l.members)
			}
			r := s.must(http.StatusBadRequest, "GET", l.path+"?resolveData=everything", nil)
			var e api.Error
			r.decode(t, &e)
			if e.Field != "resolveData" {
				t.Errorf("GET %s?resolveData=everything: error on %q, want resolveData", l.path, e.Field)
			}
		}
		// A single read keeps its data by default.
		var got api.Run
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID, nil).decode(t, &got)
		if string(got.Input) != `{"A":2,"B":3}` || string(got.Output) != "5" {
			t.Errorf("GET /v1/runs/{id}: input %s output %s, want both", got.Input, got.Output)
		}
	})
}

// TestListByteBudget: with resolveData=all a page ends before the run that
// would take its inputs beyond Options.MaxListBytes, and the cursor
// carries on from that run: every run listed once, in order.
func TestListByteBudget(t *testing.T) {
	const budget = 1000
	eachBackend(t, api.Options{MaxListBytes: budget}, func(t *testing.T, s *server) {
		later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		sizes := []int{100, 700, 50, 300, 900, 20, 20, 1500, 400, 10}
		var want []string // newest first, as the list answers
		for _, n := range sizes {
			run := s.start("echo", strings.Repeat("x", n), "startAt", later)
			want = append([]string{run.ID}, want...)
		}
		var got []string
		short := 0 // pages the budget ended before the limit
		cursor := ""
		for page := 0; ; page++ {
			q := url.Values{"resolveData": {"all"}, "limit": {"4"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			var p api.RunPage
			s.must(http.StatusOK, "GET", "/v1/runs?"+q.Encode(), nil).decode(t, &p)
			bytes := 0
			for _, r := range p.Data {
				if len(r.Input) == 0 {
					t.Fatalf("page %d: run %s without its input under resolveData=all", page, r.ID)
				}
				bytes += len(r.Input)
				got = append(got, r.ID)
			}
			if len(p.Data) > 1 && bytes > budget {
				t.Fatalf("page %d holds %d runs with %d bytes of input, above the budget of %d", page, len(p.Data), bytes, budget)
			}
			if p.HasMore != (p.Cursor != nil) {
				t.Fatalf("page %d: hasMore %v with cursor %v", page, p.HasMore, p.Cursor)
			}
			if !p.HasMore {
				break
			}
			if len(p.Data) < 4 {
				short++
			}
			cursor = *p.Cursor
		}
		if !slices.Equal(got, want) {
			t.Fatalf("the pages listed %v, want every run once, newest first: %v", got, want)
		}
		if short == 0 {
			t.Fatal("no page ended before its limit: the test's inputs do not exercise the budget")
		}
	})
}

// TestScheduleListByteBudget: schedules are listed with their inputs,
// within the page's byte budget.
func TestScheduleListByteBudget(t *testing.T) {
	eachBackend(t, api.Options{MaxListBytes: 1000}, func(t *testing.T, s *server) {
		var want []string
		for i := range 5 {
			name := fmt.Sprintf("big-%d", i)
			s.must(http.StatusOK, "PUT", "/v1/schedules/"+name, map[string]any{
				"workflowName": "echo", "cron": "0 2 * * *", "paused": true, "input": strings.Repeat("s", 600)})
			want = append(want, name)
		}
		var got []string
		cursor := ""
		for {
			q := url.Values{"limit": {"10"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			var p api.List[api.Schedule]
			s.must(http.StatusOK, "GET", "/v1/schedules?"+q.Encode(), nil).decode(t, &p)
			if len(p.Data) != 1 && p.HasMore {
				t.Fatalf("a page of %d schedules of 600-byte inputs, want 1 under a budget of 1000", len(p.Data))
			}
			for _, sc := range p.Data {
				got = append(got, sc.Name)
			}
			if !p.HasMore {
				break
			}
			cursor = *p.Cursor
		}
		if !slices.Equal(got, want) {
			t.Fatalf("the pages listed %v, want %v", got, want)
		}
	})
}
