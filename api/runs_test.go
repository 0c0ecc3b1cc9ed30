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
	"github.com/openworkflow-go/openworkflow/backend"
)

func TestStartGetAndResolveData(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		run := s.start("add", map[string]int{"A": 2, "B": 3}, "idempotencyKey", "k-1")
		if !strings.HasPrefix(run.ID, "wrun_") || run.WorkflowName != "add" || run.Status != "pending" {
			t.Fatalf("started %+v", run)
		}
		done := s.waitStatus(run.ID, "completed")
		if string(done.Output) != "5" || string(done.Input) != `{"A":2,"B":3}` {
			t.Fatalf("completed run: input %s output %s", done.Input, done.Output)
		}
		// The same idempotency key and input (the same JSON value, written
		// otherwise) answers 200 with the first run; another input 409,
		// naming the run, rather than 201 and the input silently dropped
		// (issue 19).
		var again api.Run
		s.must(http.StatusOK, "POST", "/v1/runs", `{"idempotencyKey":"k-1","input":{"B":3.0,"A":2},"workflowName":"add"}`).decode(t, &again)
		if again.ID != run.ID {
			t.Fatalf("idempotent start made run %s, want %s", again.ID, run.ID)
		}
		e := s.must(http.StatusConflict, "POST", "/v1/runs", map[string]any{"workflowName": "add", "input": map[string]int{"A": 9, "B": 9}, "idempotencyKey": "k-1"}).apiError(t)
		if e.Code != api.CodeIdempotencyConflict || e.Field != "idempotencyKey" || !strings.Contains(e.Message, run.ID) || !strings.Contains(e.Message, "new key") {
			t.Fatalf("a reused key with another input: %+v; want 409 idempotency_conflict naming run %s", e, run.ID)
		}
		// resolveData=none blanks input and output; an unknown value is "all".
		var blank map[string]json.RawMessage
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID+"?resolveData=none", nil).decode(t, &blank)
		if _, ok := blank["input"]; ok {
			t.Errorf("resolveData=none kept input: %s", blank["input"])
		}
		if _, ok := blank["output"]; ok {
			t.Errorf("resolveData=none kept output: %s", blank["output"])
		}
		var full api.Run
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID+"?resolveData=skip-step-inputs", nil).decode(t, &full)
		if string(full.Output) != "5" {
			t.Errorf("an unknown resolveData hid the output: %s", full.Output)
		}
		var steps api.List[api.Step]
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID+"/steps?resolveData=none", nil).decode(t, &steps)
		if len(steps.Data) != 1 || steps.Data[0].StepName != "sum" || steps.Data[0].Output != nil {
			t.Errorf("steps with resolveData=none: %+v", steps.Data)
		}
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID+"/steps?resolveData=all", nil).decode(t, &steps)
		if len(steps.Data) != 1 || string(steps.Data[0].Output) != "5" || steps.Data[0].Status != "completed" {
			t.Errorf("steps: %+v", steps.Data)
		}
		var hist api.List[api.Event]
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID+"/history", nil).decode(t, &hist)
		var types []string
		for _, e := range hist.Data {
			types = append(types, e.Type)
		}
		want := []string{"run_created", "run_started", "step_started", "step_completed", "run_completed"}
		if !slices.Equal(types, want) {
			t.Errorf("history %v, want %v", types, want)
		}
	})
}

func TestStartValuesRoundTrip(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		for _, in := range []string{`null`, `0`, `""`, `false`, `[]`, `{"a":{"b":[1,null,"x"]}}`, `"nul \u0000 byte"`, `12345678901234567890`, `"\ud83d\ude00 ☃"`} {
			run := s.start("echo", json.RawMessage(in))
			done := s.waitStatus(run.ID, "completed")
			var want, got any
			_ = json.Unmarshal([]byte(in), &want)
			if err := json.Unmarshal(done.Output, &got); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("echo %s gave %s", in, done.Output)
			}
			if in == `12345678901234567890` && string(done.Output) != in {
				t.Errorf("a big integer came back as %s", done.Output)
			}
		}
	})
}

func TestStartDelayedAndDeadline(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		run := s.start("add", map[string]int{"A": 1}, "startAt", at.Format(time.RFC3339Nano), "deadlineAt", at.Add(time.Hour).Format(time.RFC3339))
		if run.AvailableAt == nil || !run.AvailableAt.Equal(at) {
			t.Errorf("startAt %v stored as availableAt %v", at, run.AvailableAt)
		}
		if run.DeadlineAt == nil || !run.DeadlineAt.Equal(at.Add(time.Hour).Truncate(time.Second)) {
			t.Errorf("deadlineAt stored as %v", run.DeadlineAt)
		}
		delayed := s.start("add", map[string]int{"A": 1}, "delaySeconds", 3600)
		if delayed.AvailableAt == nil || delayed.AvailableAt.Before(time.Now().Add(59*time.Minute)) {
			t.Errorf("delaySeconds 3600 stored as availableAt %v", delayed.AvailableAt)
		}
		// Still pending: a delayed run is not claimed before its time.
		var got api.Run
		s.must(http.StatusOK, "GET", "/v1/runs/"+delayed.ID, nil).decode(t, &got)
		if got.Status != "pending" {
			t.Errorf("a run delayed by an hour is %s", got.Status)
		}
	})
}

func TestStartWithPriorityAndConcurrencyKey(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		run := s.start("add", map[string]int{"A": 1}, "priority", -4, "concurrencyKey", "customer-7")
		if run.Priority != -4 || run.ConcurrencyKey == nil || *run.ConcurrencyKey != "customer-7" {
			t.Errorf("started with priority -4 and key customer-7: priority %d key %v", run.Priority, run.ConcurrencyKey)
		}
		done := s.waitStatus(run.ID, "completed")
		if done.Priority != -4 || done.ConcurrencyKey == nil || done.QueuedAt != nil || done.AdmittedAt != nil {
			t.Errorf("completed run: priority %d key %v queued %v admitted %v; want -4, customer-7, not limited",
				done.Priority, done.ConcurrencyKey, done.QueuedAt, done.AdmittedAt)
		}
		plain := s.start("add", map[string]int{"A": 1}, "concurrencyKey", "")
		if plain.Priority != 0 || plain.ConcurrencyKey != nil {
			t.Errorf("a start without priority and with an empty key: priority %d key %v; want 0, null", plain.Priority, plain.ConcurrencyKey)
		}
	})
}

// TestStartSingleton: POST /v1/runs with a singleton, in each mode, on a
// workflow no worker executes (so the key's first run stays active).
func TestStartSingleton(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		skip := map[string]any{"key": "k", "mode": "skip"}
		first := s.start("unregistered-singleton", 1, "singleton", skip)
		if first.SingletonSkipped {
			t.Fatal("the key's first run is marked skipped")
		}
		var again api.Run
		s.must(http.StatusOK, "POST", "/v1/runs", map[string]any{"workflowName": "unregistered-singleton", "input": 2, "singleton": skip}).decode(t, &again)
		if again.ID != first.ID || !again.SingletonSkipped {
			t.Fatalf("second skip start answered run %s (skipped %v), want %s skipped", again.ID, again.SingletonSkipped, first.ID)
		}
		r := s.do("POST", "/v1/runs", map[string]any{"workflowName": "unregistered-singleton", "singleton": map[string]any{"key": "k", "mode": "skip", "errorOnSkip": true}})
		if r.status != http.StatusConflict || !strings.Contains(string(r.body), string(api.CodeSingletonSkipped)) || !strings.Contains(string(r.body), first.ID) {
			t.Fatalf("skip start with errorOnSkip answered %d %s, want 409 singleton_skipped naming %s", r.status, r.body, first.ID)
		}
		queued := s.start("unregistered-singleton", 3, "singleton", map[string]any{"key": "k", "mode": "queue"})
		if queued.Status != "pending" || queued.AvailableAt != nil {
			t.Fatalf("queue start behind an active run: status %s available at %v, want pending and held", queued.Status, queued.AvailableAt)
		}
		fresh := s.start("unregistered-singleton", 4, "singleton", map[string]any{"key": "k", "mode": "cancel"})
		for _, id := range []string{first.ID, queued.ID} {
			var got api.Run
			s.must(http.StatusOK, "GET", "/v1/runs/"+id, nil).decode(t, &got)
			if got.Status != "canceled" {
				t.Errorf("run %s of the key is %s after a cancel start, want canceled", id, got.Status)
			}
		}
		if fresh.Status != "pending" || fresh.AvailableAt == nil {
			t.Errorf("cancel start: status %s available at %v, want pending and due", fresh.Status, fresh.AvailableAt)
		}
	})
}

// TestListPagination: limit 2 over 5 runs gives 2, 2, 1 with no overlap or
// gap; a filter survives into the next page; an empty list is data: [],
// hasMore: false, cursor: null.
func TestListPagination(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		var ids []string
		for i := range 5 {
			ids = append(ids, s.start("add", map[string]int{"A": i, "B": 0}, "startAt", time.Now().Add(time.Hour).Format(time.RFC3339)).ID)
		}
		for i := range 3 { // runs of another workflow, interleaved, that the filter must skip
			s.start("echo", i, "startAt", time.Now().Add(time.Hour).Format(time.RFC3339))
		}
		// Newest first.
		slices.Reverse(ids)
		var got []string
		var sizes []int
		cursor := ""
		for page := 0; ; page++ {
			if page > 5 {
				t.Fatal("pagination does not end")
			}
			q := url.Values{"limit": {"2"}, "workflowName": {"add"}, "status": {"pending"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			var l api.List[api.Run]
			s.must(http.StatusOK, "GET", "/v1/runs?"+q.Encode(), nil).decode(t, &l)
			sizes = append(sizes, len(l.Data))
			for _, r := range l.Data {
				if r.WorkflowName != "add" {
					t.Errorf("the filter was lost on page %d: %s", page, r.WorkflowName)
				}
				got = append(got, r.ID)
			}
			if l.HasMore != (l.Cursor != nil) {
				t.Errorf("hasMore %v with cursor %v", l.HasMore, l.Cursor)
			}
			if !l.HasMore {
				break
			}
			cursor = *l.Cursor
		}
		if !slices.Equal(sizes, []int{2, 2, 1}) || !slices.Equal(got, ids) {
			t.Errorf("pages of sizes %v gave %v, want 2,2,1 giving %v", sizes, got, ids)
		}
		// And back, newer pages through prevCursor and before: the last
		// page leads to the middle one, then to the first, which has no
		// prevCursor.
		q := url.Values{"limit": {"2"}, "workflowName": {"add"}, "status": {"pending"}, "cursor": {cursor}}
		var last api.RunPage
		s.must(http.StatusOK, "GET", "/v1/runs?"+q.Encode(), nil).decode(t, &last)
		var back []string
		for page := last; page.PrevCursor != nil; {
			if len(back) > 5 {
				t.Fatal("walking back does not end")
			}
			q.Del("cursor")
			q.Set("before", *page.PrevCursor)
			page = api.RunPage{}
			s.must(http.StatusOK, "GET", "/v1/runs?"+q.Encode(), nil).decode(t, &page)
			var pageIDs []string
			for _, r := range page.Data {
				pageIDs = append(pageIDs, r.ID)
			}
			back = append(pageIDs, back...)
		}
		if !slices.Equal(back, ids[:4]) {
			t.Errorf("walking back from the last page gave %v, want %v", back, ids[:4])
		}
		q.Set("cursor", cursor)
		if e := s.must(http.StatusBadRequest, "GET", "/v1/runs?"+q.Encode(), nil).apiError(t); e.Field != "before" {
			t.Errorf("cursor and before together: %+v", e)
		}
		// An empty list.
		r := s.must(http.StatusOK, "GET", "/v1/runs?workflowName=nothing-of-this-name", nil)
		var raw map[string]json.RawMessage
		r.decode(t, &raw)
		if string(raw["data"]) != "[]" || string(raw["hasMore"]) != "false" || string(raw["cursor"]) != "null" {
			t.Errorf("empty list answered %s", r.body)
		}
		// Created range: the runs created from the third one on.
		var all api.List[api.Run]
		s.must(http.StatusOK, "GET", "/v1/runs?workflowName=add", nil).decode(t, &all)
		from := all.Data[2].CreatedAt
		var ranged api.List[api.Run]
		s.must(http.StatusOK, "GET", "/v1/runs?workflowName=add&createdAfter="+url.QueryEscape(from.Format(time.RFC3339Nano)), nil).decode(t, &ranged)
		for _, r := range ranged.Data {
			if r.CreatedAt.Before(from) {
				t.Errorf("createdAfter %v listed a run created at %v", from, r.CreatedAt)
			}
		}
		if len(ranged.Data) < 3 {
			t.Errorf("createdAfter the third newest run listed %d runs", len(ranged.Data))
		}
		// Counts by status.
		var counts backend.RunCounts
		s.must(http.StatusOK, "GET", "/v1/runs/counts", nil).decode(t, &counts)
		if counts.Pending != 8 {
			t.Errorf("counts %+v, want 8 pending", counts)
		}
	})
}

func TestCancel(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		run := s.start("add", map[string]int{"A": 1}, "delaySeconds", 600)
		var canceled api.Run
		s.must(http.StatusOK, "POST", "/v1/runs/"+run.ID+"/cancel", nil).decode(t, &canceled)
		if canceled.Status != "canceled" || canceled.FinishedAt == nil {
			t.Fatalf("canceled run: %+v", canceled)
		}
		// Idempotent.
		s.must(http.StatusOK, "POST", "/v1/runs/"+run.ID+"/cancel", "{}")
		done := s.start("add", map[string]int{"A": 1})
		s.waitStatus(done.ID, "completed")
		e := s.must(http.StatusConflict, "POST", "/v1/runs/"+done.ID+"/cancel", nil).apiError(t)
		if e.Code != api.CodeRunTerminal {
			t.Errorf("cancel of a completed run: %+v", e)
		}
	})
}

// TestErrors walks the error statuses: each answers JSON {code, message,
// field?} with the right status, and none is a 500.
func TestErrors(t *testing.T) {
	eachBackend(t, api.Options{MaxBodyBytes: 4096}, func(t *testing.T, s *server) {
		cases := []struct {
			name, method, path string
			body               any
			status             int
			code               api.Code
			field              string
		}{
			{"not JSON", "POST", "/v1/runs", `{"workflowName":`, 400, api.CodeInvalidArgument, ""},
			{"no body", "POST", "/v1/runs", nil, 400, api.CodeInvalidArgument, ""},
			{"two values", "POST", "/v1/runs", `{"workflowName":"add"} {}`, 400, api.CodeInvalidArgument, ""},
			{"an array", "POST", "/v1/runs", `[]`, 400, api.CodeInvalidArgument, ""},
			{"no workflow", "POST", "/v1/runs", `{"input":1}`, 400, api.CodeInvalidArgument, "workflowName"},
			{"unknown member", "POST", "/v1/runs", `{"workflowName":"add","inptu":1}`, 400, api.CodeInvalidArgument, "inptu"},
			{"wrong type", "POST", "/v1/runs", `{"workflowName":7}`, 400, api.CodeInvalidArgument, "workflowName"},
			{"bad time", "POST", "/v1/runs", `{"workflowName":"add","startAt":"tomorrow"}`, 400, api.CodeInvalidArgument, "startAt"},
			{"negative delay", "POST", "/v1/runs", `{"workflowName":"add","delaySeconds":-1}`, 400, api.CodeInvalidArgument, "delaySeconds"},
			{"both delays", "POST", "/v1/runs", `{"workflowName":"add","delaySeconds":1,"startAt":"2030-01-01T00:00:00Z"}`, 400, api.CodeInvalidArgument, "delaySeconds"},
			{"bad deadline", "POST", "/v1/runs", `{"workflowName":"add","deadlineAt":"soon"}`, 400, api.CodeInvalidArgument, "deadlineAt"},
			{"empty key", "POST", "/v1/runs", `{"workflowName":"add","idempotencyKey":""}`, 400, api.CodeInvalidArgument, "idempotencyKey"},
			{"bad name text", "POST", "/v1/runs", "{\"workflowName\":\"a\\u0000b\"}", 400, api.CodeInvalidArgument, "workflowName"},
			{"limit above 1000", "GET", "/v1/runs?limit=1001", nil, 400, api.CodeInvalidArgument, "limit"},
			{"limit zero", "GET", "/v1/runs?limit=0", nil, 400, api.CodeInvalidArgument, "limit"},
			{"limit not a number", "GET", "/v1/runs?limit=ten", nil, 400, api.CodeInvalidArgument, "limit"},
			{"bad status", "GET", "/v1/runs?status=done", nil, 400, api.CodeInvalidArgument, "status"},
			{"bad cursor", "GET", "/v1/runs?cursor=not-a-cursor", nil, 400, api.CodeInvalidArgument, "cursor"},
			{"unknown parameter", "GET", "/v1/runs?stauts=failed", nil, 400, api.CodeInvalidArgument, "stauts"},
			{"bad createdAfter", "GET", "/v1/runs?createdAfter=yesterday", nil, 400, api.CodeInvalidArgument, "createdAfter"},
			{"empty range", "GET", "/v1/runs?createdAfter=2030-01-01T00:00:00Z&createdBefore=2029-01-01T00:00:00Z", nil, 400, api.CodeInvalidArgument, "createdBefore"},
			{"bad query string", "GET", "/v1/runs?limit=%zz", nil, 400, api.CodeInvalidArgument, ""},
			{"bad step cursor", "GET", "/v1/runs/wrun_x/steps?cursor=%25%25", nil, 404, api.CodeNotFound, ""},
			{"unknown run", "GET", "/v1/runs/wrun_00000000000000000000000000", nil, 404, api.CodeNotFound, ""},
			{"unknown run steps", "GET", "/v1/runs/wrun_00000000000000000000000000/steps", nil, 404, api.CodeNotFound, ""},
			{"unknown run history", "GET", "/v1/runs/wrun_00000000000000000000000000/history", nil, 404, api.CodeNotFound, ""},
			{"unknown run cancel", "POST", "/v1/runs/wrun_00000000000000000000000000/cancel", nil, 404, api.CodeNotFound, ""},
			{"unknown run retry", "POST", "/v1/runs/wrun_00000000000000000000000000/retry", nil, 404, api.CodeNotFound, ""},
			{"unknown run hooks", "GET", "/v1/runs/wrun_00000000000000000000000000/hooks", nil, 404, api.CodeNotFound, ""},
			{"unknown run streams", "GET", "/v1/runs/wrun_00000000000000000000000000/streams", nil, 404, api.CodeNotFound, ""},
			{"unknown run stream", "GET", "/v1/runs/wrun_00000000000000000000000000/streams/out", nil, 404, api.CodeNotFound, ""},
			{"unknown route", "GET", "/v1/nothing", nil, 404, api.CodeNotFound, ""},
			{"unknown token", "POST", "/v1/hooks/no-such-token", `{"ok":true}`, 404, api.CodeHookNotFound, "token"},
			{"unknown token get", "GET", "/v1/hooks/no-such-token", nil, 404, api.CodeHookNotFound, "token"},
			{"unknown webhook", "POST", "/v1/webhooks/no-such-token", "hello", 404, api.CodeHookNotFound, "token"},
			{"long token", "POST", "/v1/hooks/" + strings.Repeat("t", 300), `1`, 400, api.CodeInvalidArgument, "token"},
			{"bad hook payload", "POST", "/v1/hooks/some-token", `{"a":`, 400, api.CodeInvalidArgument, ""},
			{"wrong method", "DELETE", "/v1/runs", nil, 405, api.CodeMethodNotAllowed, ""},
			{"wrong method cancel", "GET", "/v1/runs/wrun_x/cancel", nil, 405, api.CodeMethodNotAllowed, ""},
			{"cancel body", "POST", "/v1/runs/wrun_x/cancel", `{"why":"x"}`, 400, api.CodeInvalidArgument, "why"},
			{"too large", "POST", "/v1/runs", `{"workflowName":"add","input":"` + strings.Repeat("x", 5000) + `"}`, 413, api.CodePayloadTooLarge, ""},
			{"too large hook", "POST", "/v1/hooks/some-token", `"` + strings.Repeat("x", 5000) + `"`, 413, api.CodePayloadTooLarge, ""},
			{"too large webhook", "PUT", "/v1/webhooks/some-token", strings.Repeat("x", 5000), 413, api.CodePayloadTooLarge, ""},
			{"too large signal", "POST", "/v1/signals", `{"signal":"s","data":"` + strings.Repeat("x", 5000) + `"}`, 413, api.CodePayloadTooLarge, ""},
			{"signal without name", "POST", "/v1/signals", `{"data":1}`, 400, api.CodeInvalidArgument, "signal"},
			{"signal bad key", "POST", "/v1/signals", `{"signal":"s","idempotencyKey":""}`, 400, api.CodeInvalidArgument, "idempotencyKey"},
			{"bad stream cursor", "GET", "/v1/runs/wrun_x/streams/out?cursor=-1", nil, 400, api.CodeInvalidArgument, "cursor"},
			{"bad Last-Event-ID", "GET", "/v1/runs/wrun_x/streams/out", nil, 400, api.CodeInvalidArgument, "Last-Event-ID"},
			{"retry bad deadline", "POST", "/v1/runs/wrun_x/retry", `{"deadlineAt":3}`, 400, api.CodeInvalidArgument, "deadlineAt"},
			{"priority beyond 32 bits", "POST", "/v1/runs", `{"workflowName":"add","priority":2147483648}`, 400, api.CodeInvalidArgument, "priority"},
			{"fractional priority", "POST", "/v1/runs", `{"workflowName":"add","priority":1.5}`, 400, api.CodeInvalidArgument, "priority"},
			{"concurrency key not text", "POST", "/v1/runs", "{\"workflowName\":\"add\",\"concurrencyKey\":\"a\\u0000\"}", 400, api.CodeInvalidArgument, "concurrencyKey"},
			{"concurrency key too long", "POST", "/v1/runs", `{"workflowName":"add","concurrencyKey":"` + strings.Repeat("k", 1025) + `"}`, 400, api.CodeInvalidArgument, "concurrencyKey"},
			{"singleton without mode", "POST", "/v1/runs", `{"workflowName":"add","singleton":{"key":"k"}}`, 400, api.CodeInvalidArgument, "singleton"},
			{"singleton unknown mode", "POST", "/v1/runs", `{"workflowName":"add","singleton":{"key":"k","mode":"Skip"}}`, 400, api.CodeInvalidArgument, "singleton"},
			{"singleton key too long", "POST", "/v1/runs", `{"workflowName":"add","singleton":{"mode":"skip","key":"` + strings.Repeat("k", 1025) + `"}}`, 400, api.CodeInvalidArgument, "singleton"},
			{"singleton unknown field", "POST", "/v1/runs", `{"workflowName":"add","singleton":{"mode":"skip","keys":"k"}}`, 400, api.CodeInvalidArgument, "keys"},
		}
		for _, c := range cases {
			var header []string
			if c.name == "bad Last-Event-ID" {
				header = []string{"Accept", "text/event-stream", "Last-Event-ID", "x"}
			}
			r := s.do(c.method, c.path, c.body, header...)
			if r.status != c.status {
				t.Errorf("%s: %s %s answered %d, want %d: %s", c.name, c.method, c.path, r.status, c.status, r.body)
				continue
			}
			e := r.apiError(t)
			if e.Code != c.code || e.Field != c.field {
				t.Errorf("%s: answered %+v, want code %s field %q", c.name, e, c.code, c.field)
			}
		}
		// The 405 says what is allowed.
		if r := s.do("DELETE", "/v1/runs", nil); r.header.Get("Allow") != "POST, GET" {
			t.Errorf("405 Allow: %q", r.header.Get("Allow"))
		}
	})
}

// TestGetStep: a step is found by its id alone, so a child's parentStepId
// leads to its parent run; an unknown id is a 404.
func TestGetStep(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		run := s.start("add", map[string]int{"A": 2, "B": 3})
		s.waitStatus(run.ID, "completed")
		var steps api.List[api.Step]
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID+"/steps", nil).decode(t, &steps)
		if len(steps.Data) != 1 {
			t.Fatalf("steps: %+v", steps.Data)
		}
		var step api.Step
		s.must(http.StatusOK, "GET", "/v1/steps/"+steps.Data[0].ID, nil).decode(t, &step)
		if step.RunID != run.ID || step.StepName != "sum" || string(step.Output) != "5" || step.Abandoned {
			t.Errorf("step by id: %+v", step)
		}
		var blank api.Step
		s.must(http.StatusOK, "GET", "/v1/steps/"+steps.Data[0].ID+"?resolveData=none", nil).decode(t, &blank)
		if blank.Output != nil || blank.ID != step.ID {
			t.Errorf("resolveData=none: %+v", blank)
		}
		if e := s.must(http.StatusNotFound, "GET", "/v1/steps/step_nothing", nil).apiError(t); e.Code != api.CodeNotFound {
			t.Errorf("unknown step: %+v", e)
		}
	})
}
