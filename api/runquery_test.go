package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
)

func listQuery(s *server, q string, extra ...string) response {
	s.t.Helper()
	v := url.Values{"q": {q}}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	return s.do("GET", "/v1/runs?"+v.Encode(), nil)
}

func TestRunQueries(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		c42 := s.start("unregistered-sync", 1, "searchAttributes", map[string]any{
			"customer": "c-42", "tags": []string{"eu", "vip"}, "amount": 12, "ratio": 0.5, "vip": true, "due": "2026-11-01T09:30:00Z"})
		c7 := s.start("unregistered-sync", 2, "searchAttributes", map[string]any{"customer": "c-7"})
		other := s.start("unregistered-other", 3)
		if want := (map[string]any{"customer": "c-42", "tags": []any{"eu", "vip"}, "amount": float64(12), "ratio": 0.5, "vip": true, "due": "2026-11-01T09:30:00Z"}); !reflect.DeepEqual(jsonOf(t, c42.SearchAttributes), want) {
			t.Fatalf("started run's searchAttributes = %v, want %v", jsonOf(t, c42.SearchAttributes), want)
		}

		t.Run("GET /v1/runs?q= lists the runs the query selects, with their attributes", func(t *testing.T) {
			var page api.RunPage
			r := listQuery(s, `status = "pending" AND workflow = "unregistered-sync" AND attrs.customer = "c-42" AND created > "2026-01-01"`)
			if r.status != http.StatusOK {
				t.Fatalf("answered %d: %s", r.status, r.body)
			}
			r.decode(t, &page)
			if len(page.Data) != 1 || page.Data[0].ID != c42.ID || page.Data[0].SearchAttributes["customer"] != "c-42" {
				t.Fatalf("page = %+v, want run %s with its attributes", page.Data, c42.ID)
			}
			listQuery(s, `attrs.customer STARTS_WITH "c-"`, "limit", "1").decode(t, &page)
			if len(page.Data) != 1 || page.Data[0].ID != c7.ID || !page.HasMore {
				t.Fatalf("first page of one = %+v, want %s and more", page.Data, c7.ID)
			}
			listQuery(s, `attrs.customer STARTS_WITH "c-"`, "limit", "1", "cursor", *page.Cursor).decode(t, &page)
			if len(page.Data) != 1 || page.Data[0].ID != c42.ID {
				t.Fatalf("second page = %+v, want %s", page.Data, c42.ID)
			}
		})

		t.Run("GET /v1/runs/count?q= counts them", func(t *testing.T) {
			for q, want := range map[string]int64{
				`attrs.tags = "vip"`:                  1,
				`workflow STARTS_WITH "unregistered"`: 3,
				`attrs.customer IS NULL`:              -1, // every run but the two, and the worker's own none: checked below
				``:                                    -1,
			} {
				var n api.RunCount
				r := s.must(http.StatusOK, "GET", "/v1/runs/count?"+url.Values{"q": {q}}.Encode(), nil)
				r.decode(t, &n)
				if want >= 0 && n.Count != want {
					t.Fatalf("count of %q = %d, want %d", q, n.Count, want)
				}
				if want < 0 && n.Count < 1 {
					t.Fatalf("count of %q = %d, want at least the run %s", q, n.Count, other.ID)
				}
			}
			var n api.RunCount
			s.must(http.StatusOK, "GET", "/v1/runs/count?"+url.Values{"q": {`attrs.customer != "c-42"`}, "workflowName": {"unregistered-sync"}}.Encode(), nil).decode(t, &n)
			if n.Count != 1 {
				t.Fatalf("count with a workflowName filter = %d, want 1", n.Count)
			}
		})

		t.Run("a bad query answers 400 naming its position, never 5xx", func(t *testing.T) {
			for _, c := range []struct {
				q         string
				line, col int
				contains  string
			}{
				{`status = "failed" AND colour = "red"`, 1, 23, `unknown field "colour"`},
				{`status = "failed" AND`, 1, 22, "unexpected"},
				{"workflow = \"a\"\nAND priority = \"high\"", 2, 16, "priority has type int"},
				{`attrs.nobody = "x"`, 1, 1, "unknown search attribute attrs.nobody"},
				{`attrs.amount = "twelve"`, 1, 16, "attrs.amount has type int"},
				{`attrs.tags > "a"`, 1, 12, "operator > is not supported"},
				{`created > "last week"`, 1, 11, "RFC 3339"},
				{strings.Repeat("(", 5000), 1, 1, "allowed"},
			} {
				for _, path := range []string{"/v1/runs?", "/v1/runs/count?"} {
					r := s.do("GET", path+url.Values{"q": {c.q}}.Encode(), nil)
					if r.status != http.StatusBadRequest {
						t.Fatalf("%s q=%q answered %d, want 400: %s", path, c.q, r.status, r.body)
					}
					e := r.apiError(t)
					if e.Field != "q" || e.Position == nil || e.Position.Line != c.line || e.Position.Column != c.col || !strings.Contains(e.Message, c.contains) {
						t.Fatalf("%s q=%q: error %+v (position %+v), want field q at %d:%d containing %q", path, c.q, e, e.Position, c.line, c.col, c.contains)
					}
				}
			}
		})

		t.Run("a bad search attribute at start answers 400 naming it", func(t *testing.T) {
			for body, contains := range map[string]string{
				`{"workflowName":"w","searchAttributes":{"amount":"twelve"}}`:   `"amount"`,
				`{"workflowName":"w","searchAttributes":{"bad-name":1}}`:        `"bad-name"`,
				`{"workflowName":"w","searchAttributes":{"o":{"nested":true}}}`: `"o"`,
				`{"workflowName":"w","searchAttributes":{"l":[1,2]}}`:           `"l"`,
			} {
				r := s.do("POST", "/v1/runs", body)
				if r.status != http.StatusBadRequest {
					t.Fatalf("POST %s answered %d, want 400: %s", body, r.status, r.body)
				}
				if e := r.apiError(t); e.Field != "searchAttributes" || !strings.Contains(e.Message, contains) {
					t.Fatalf("POST %s: error %+v, want field searchAttributes naming %s", body, e, contains)
				}
			}
		})

		t.Run("GET /v1/runs/{id} shows the attributes", func(t *testing.T) {
			var run api.Run
			s.must(http.StatusOK, "GET", "/v1/runs/"+c7.ID, nil).decode(t, &run)
			if !reflect.DeepEqual(jsonOf(t, run.SearchAttributes), map[string]any{"customer": "c-7"}) {
				t.Fatalf("searchAttributes = %v", run.SearchAttributes)
			}
			var bare api.Run
			s.must(http.StatusOK, "GET", "/v1/runs/"+other.ID, nil).decode(t, &bare)
			if bare.SearchAttributes != nil {
				t.Fatalf("a run without attributes shows %v", bare.SearchAttributes)
			}
		})
	})
}

// jsonOf is v as decoded JSON (numbers float64, arrays []any).
func jsonOf(t testing.TB, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
