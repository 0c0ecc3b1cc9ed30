package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
)

// TestSchedules: a schedule put through the API ticks on the server's
// worker, its runs say which tick they are for, and pause, resume,
// trigger and delete do what they say.
func TestSchedules(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		body := map[string]any{"workflowName": "echo", "cron": "* * * * * *", "input": map[string]any{"from": "schedule"}, "overlap": "allow_all", "catchupWindow": "30s", "priority": 3}
		var put api.Schedule
		s.must(http.StatusOK, "PUT", "/v1/schedules/every-second", body).decode(t, &put)
		if put.Name != "every-second" || put.WorkflowName != "echo" || put.TimeZone != "UTC" || put.Overlap != "allow_all" || put.CatchupWindow != "30s" || put.Priority != 3 ||
			put.Paused || put.NextFireAt == nil || len(put.Upcoming) != api.UpcomingTicks || !put.Upcoming[0].Equal(*put.NextFireAt) ||
			put.Upcoming[1].Sub(put.Upcoming[0]) != time.Second || string(put.Input) != `{"from":"schedule"}` {
			t.Fatalf("PUT answered %+v", put)
		}

		var got api.Schedule
		s.until("the first tick's run", func() bool {
			s.must(http.StatusOK, "GET", "/v1/schedules/every-second", nil).decode(t, &got)
			return got.Started >= 1
		})
		run := s.waitStatus(*got.LastRunID, "completed")
		if run.Schedule == nil || run.Schedule.Name != "every-second" || !run.Schedule.ScheduledAt.Equal(*got.LastFireAt) || run.Schedule.Triggered ||
			string(run.Output) != `{"from":"schedule"}` {
			t.Fatalf("the tick's run: %+v (schedule %+v), want it to record tick %v", run, run.Schedule, got.LastFireAt)
		}

		var paused api.Schedule
		s.must(http.StatusOK, "POST", "/v1/schedules/every-second/pause", nil).decode(t, &paused)
		if !paused.Paused || paused.NextFireAt != nil || len(paused.Upcoming) != 0 {
			t.Fatalf("paused: %+v, want no next tick", paused)
		}
		var trig api.Run
		s.must(http.StatusCreated, "POST", "/v1/schedules/every-second/trigger", nil).decode(t, &trig)
		if trig.Schedule == nil || !trig.Schedule.Triggered || trig.WorkflowName != "echo" || trig.Priority != 3 {
			t.Fatalf("trigger answered %+v (schedule %+v)", trig, trig.Schedule)
		}
		var resumed api.Schedule
		s.must(http.StatusOK, "POST", "/v1/schedules/every-second/resume", nil).decode(t, &resumed)
		if resumed.Paused || resumed.NextFireAt == nil || !resumed.NextFireAt.After(paused.UpdatedAt) {
			t.Fatalf("resumed: %+v, want a next tick after the pause", resumed)
		}

		// A second schedule, then the list in name order, a page at a time.
		s.must(http.StatusOK, "PUT", "/v1/schedules/"+url.PathEscape("a/nightly"), map[string]any{"workflowName": "echo", "cron": "0 2 * * *", "timeZone": "Europe/Paris", "paused": true})
		var page api.List[api.Schedule]
		s.must(http.StatusOK, "GET", "/v1/schedules?limit=1", nil).decode(t, &page)
		if len(page.Data) != 1 || page.Data[0].Name != "a/nightly" || !page.HasMore || page.Cursor == nil {
			t.Fatalf("first page: %+v", page)
		}
		s.must(http.StatusOK, "GET", "/v1/schedules?limit=1&cursor="+url.QueryEscape(*page.Cursor), nil).decode(t, &page)
		if len(page.Data) != 1 || page.Data[0].Name != "every-second" || page.HasMore {
			t.Fatalf("second page: %+v", page)
		}

		s.must(http.StatusNoContent, "DELETE", "/v1/schedules/every-second", nil)
		for _, r := range []struct{ method, path string }{
			{"GET", "/v1/schedules/every-second"}, {"DELETE", "/v1/schedules/every-second"},
			{"POST", "/v1/schedules/every-second/pause"}, {"POST", "/v1/schedules/every-second/resume"}, {"POST", "/v1/schedules/every-second/trigger"},
		} {
			if e := s.must(http.StatusNotFound, r.method, r.path, nil).apiError(t); e.Code != api.CodeNotFound || e.Field != "name" {
				t.Errorf("%s %s of a deleted schedule: %+v", r.method, r.path, e)
			}
		}
		// The runs stay.
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID, nil)
	})
}

// TestScheduleBadRequests: each bad field answers 400 naming it, and
// stores nothing.
func TestScheduleBadRequests(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		for _, c := range []struct {
			body, field, says string
		}{
			{`{"workflowName":"echo","cron":"0 25 * * *"}`, "cron", "above maximum"},
			{`{"workflowName":"echo","cron":"every day"}`, "cron", "every day"},
			{`{"workflowName":"echo","cron":"@daily","timeZone":"Mars/Olympus"}`, "timeZone", "IANA"},
			{`{"workflowName":"echo","cron":"@daily","timeZone":"Local"}`, "timeZone", "differs from one worker"},
			{`{"workflowName":"echo","cron":"@daily","overlap":"queue"}`, "overlap", "buffer_one"},
			{`{"workflowName":"echo","cron":"@daily","catchupWindow":"soon"}`, "catchupWindow", "duration"},
			{`{"workflowName":"echo","cron":"@daily","catchupWindow":"10ms"}`, "catchupWindow", "at least 1s"},
			{`{"workflowName":"echo","cron":"@daily","catchupWindow":"0s"}`, "catchupWindow", "at least 1s"},
			{`{"workflowName":"echo","cron":"@daily","priority":2147483648}`, "priority", "from -2147483647 to 2147483647"},
			{`{"cron":"@daily"}`, "workflowName", "workflow"},
			{`{"workflowName":"echo","cron":"@daily","tz":"UTC"}`, "tz", "unknown member"},
			{`{"workflowName":"echo","cron":"@daily","input":{"a":"\ud800"}}`, "input", "input"},
			{``, "", "needs a JSON body"},
			// Issue 19: a schedule holds no value a run would be refused,
			// invalid UTF-8 is refused rather than stored as U+FFFD, and
			// @every intervals under a second or not whole seconds are
			// refused rather than run every second.
			{`{"workflowName":"` + strings.Repeat("w", 1_000_000) + `","cron":"@daily"}`, "workflowName", "longer than the limit of 255"},
			{`{"workflowName":"` + strings.Repeat("w", 256) + `","cron":"@daily"}`, "workflowName", "256 bytes"},
			{`{"workflowName":"echo","version":"` + strings.Repeat("v", 256) + `","cron":"@daily"}`, "version", "255"},
			{"{\"workflowName\":\"bad\xffname\",\"cron\":\"@daily\"}", "workflowName", "not valid UTF-8"},
			{"{\"workflowName\":\"echo\",\"version\":\"v\xff\",\"cron\":\"@daily\"}", "version", "not valid UTF-8"},
			{`{"workflowName":"echo","cron":"@every 500ms"}`, "cron", "whole number of seconds, at least 1s"},
			{`{"workflowName":"echo","cron":"@every 0s"}`, "cron", "at least 1s"},
			{`{"workflowName":"echo","cron":"` + strings.Repeat("*", 300) + `"}`, "cron", "longer than the limit of 255"},
		} {
			r := s.do("PUT", "/v1/schedules/bad", c.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("PUT %s answered %d, want 400: %s", c.body, r.status, r.body)
			}
			e := r.apiError(t)
			if e.Code != api.CodeInvalidArgument || e.Field != c.field || !strings.Contains(e.Message, c.says) || len(e.Message) > 2000 {
				t.Errorf("PUT %.200s: %.300v; want field %q saying %q, briefly", c.body, e, c.field, c.says)
			}
		}
		s.must(http.StatusNotFound, "GET", "/v1/schedules/bad", nil)
		if e := s.must(http.StatusBadRequest, "GET", "/v1/schedules?cursor=nope", nil).apiError(t); e.Field != "cursor" {
			t.Errorf("a bad cursor: %+v", e)
		}
		if e := s.must(http.StatusBadRequest, "GET", "/v1/schedules?name=x", nil).apiError(t); e.Field != "name" {
			t.Errorf("an unknown parameter: %+v", e)
		}
		s.must(http.StatusMethodNotAllowed, "POST", "/v1/schedules/bad", `{}`)
	})
}

// TestStartRunRefusesInvalidUTF8: a name, key or version holding invalid
// UTF-8 is refused with 400 naming the member, not stored with each bad
// byte turned into U+FFFD (issue 19).
func TestStartRunRefusesInvalidUTF8(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		for _, c := range []struct{ body, field string }{
			{"{\"workflowName\":\"echo\xff\"}", "workflowName"},
			{"{\"workflowName\":\"echo\",\"version\":\"\xc3(\"}", "version"},
			{"{\"workflowName\":\"echo\",\"idempotencyKey\":\"k\xfe\"}", "idempotencyKey"},
			{"{\"workflowName\":\"echo\",\"input\":{\"a\":\"\xff\"}}", "input"},
			{"{\"work\xffflowName\":\"echo\"}", ""},
		} {
			e := s.must(http.StatusBadRequest, "POST", "/v1/runs", c.body).apiError(t)
			if e.Code != api.CodeInvalidArgument || e.Field != c.field || !strings.Contains(e.Message, "UTF-8") {
				t.Errorf("POST /v1/runs %q: %+v; want 400 on field %q saying UTF-8", c.body, e, c.field)
			}
		}
		var page api.List[api.Run]
		s.must(http.StatusOK, "GET", "/v1/runs", nil).decode(t, &page)
		if len(page.Data) != 0 {
			t.Fatalf("%d runs stored after refused starts: %+v", len(page.Data), page.Data)
		}
	})
}
