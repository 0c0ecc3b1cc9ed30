package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
)

// Each request decoder has a fuzz target: whatever the bytes, the API
// answers, never with a 5xx, and an error answer is a JSON {code,
// message}. CI runs each for a few seconds (.ci/run); the seeds run with
// every `go test`.

// fuzzHandler is the API over a SQLite database of the fuzz target's own.
func fuzzHandler(f *testing.F) http.Handler {
	b := backends[0].open(f)
	return api.New(ow.NewClient(b), api.Options{MaxBodyBytes: 64 << 10})
}

// serveFuzz serves one request and checks the answer.
func serveFuzz(t *testing.T, h http.Handler, req *http.Request) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	serveFuzzAnswer(t, req, rec)
}

// serveFuzzAnswer checks the answer rec to req: below 500, not refused by
// the access guard, and an error answer is a JSON {code, message}.
func serveFuzzAnswer(t *testing.T, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%s %s answered %d: %s", req.Method, req.URL, rec.Code, rec.Body)
	}
	if rec.Code == http.StatusForbidden || rec.Code == http.StatusUnsupportedMediaType {
		t.Fatalf("%s %s answered %d (%s): the access guard refused it, so the fuzz input never reached the handler", req.Method, req.URL, rec.Code, rec.Body)
	}
	if rec.Code >= 400 {
		var e api.Error
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code == "" || e.Message == "" {
			t.Fatalf("%s %s answered %d with %q", req.Method, req.URL, rec.Code, rec.Body)
		}
	}
}

// newRequest builds a request, or nil when the fuzzer's bytes make no
// URL at all (the HTTP server would refuse it before the API).
func newRequest(method, target, body string) *http.Request {
	u, err := url.Parse(target)
	if err != nil {
		return nil
	}
	req := httptest.NewRequest("GET", "/", strings.NewReader(body))
	req.Method, req.URL, req.RequestURI = method, u, u.RequestURI()
	// A loopback Host and a JSON body, so that the access guard (no token:
	// loopback only; JSON bodies as application/json) lets the fuzzer's
	// bytes through to the decoders rather than answering 403 or 415.
	req.Host = "localhost"
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

func FuzzStartRun(f *testing.F) {
	for _, s := range []string{`{"workflowName":"add","input":{"A":1}}`, `{"workflowName":"x","delaySeconds":1e308}`, `{"workflowName":"x","startAt":"2026-01-01T00:00:00Z","deadlineAt":"0000-01-01T00:00:00Z"}`, `{"workflowName":"\u0000"}`, `{"workflowName":"a","idempotencyKey":"k","version":""}`, `{"input":"\ud800"}`, `nul`, `{}`,
		"{\"workflowName\":\"a\xff\"}", `{"workflowName":"a","idempotencyKey":"k","input":1}`, `{"workflowName":"a","idempotencyKey":"k","input":1e999999999}`} {
		f.Add(s)
	}
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body string) {
		serveFuzz(t, h, newRequest("POST", "/v1/runs", body))
	})
}

func FuzzListRuns(f *testing.F) {
	for _, s := range []string{"limit=2&status=failed", "cursor=abc", "createdAfter=2026-01-01T00:00:00Z&createdBefore=2025-01-01T00:00:00Z", "limit=-1", "resolveData=none&workflowName=%00", "%", "status=running&cursor=eyJ0IjoiMjAyNiJ9", "resolveData=all&limit=1000", "resolveData=al"} {
		f.Add(s)
	}
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, query string) {
		if req := newRequest("GET", "/v1/runs?"+query, ""); req != nil {
			serveFuzz(t, h, req)
		}
	})
}

func FuzzSendSignal(f *testing.F) {
	for _, s := range []string{`{"signal":"s","data":[1,2],"idempotencyKey":"k"}`, `{"signal":""}`, `{"signal":"s","data":"\u0000"}`, `{"signal":1}`} {
		f.Add(s)
	}
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body string) {
		serveFuzz(t, h, newRequest("POST", "/v1/signals", body))
	})
}

func FuzzResumeHook(f *testing.F) {
	f.Add("tok", `{"ok":true}`)
	f.Add("", "")
	f.Add("%00", "null")
	f.Add(strings.Repeat("t", 300), "1")
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, token, body string) {
		if req := newRequest("POST", "/v1/hooks/"+url.PathEscape(token), body); req != nil {
			serveFuzz(t, h, req)
		}
		if req := newRequest("GET", "/v1/hooks/"+url.PathEscape(token)+"?resolveData=none", ""); req != nil {
			serveFuzz(t, h, req)
		}
	})
}

func FuzzWebhook(f *testing.F) {
	f.Add("POST", "tok", "body", "text/plain")
	f.Add("PATCH", "t%2Fo", "\xff\x00", "")
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, method, token, body, contentType string) {
		if method == "" || strings.ContainsAny(method, " \t\r\n()<>@,;:\\\"/[]?={}") {
			return // not an HTTP method: the server refuses it before the API
		}
		req := newRequest(method, "/v1/webhooks/"+url.PathEscape(token), body)
		if req == nil {
			return
		}
		req.Header.Set("Content-Type", contentType)
		serveFuzz(t, h, req)
	})
}

func FuzzRetryRun(f *testing.F) {
	f.Add("wrun_x", `{"deadlineAt":"2030-01-01T00:00:00Z"}`)
	f.Add("", "")
	f.Add("..", `{"deadlineAt":null}`)
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, id, body string) {
		if req := newRequest("POST", "/v1/runs/"+url.PathEscape(id)+"/retry", body); req != nil {
			serveFuzz(t, h, req)
		}
		if req := newRequest("POST", "/v1/runs/"+url.PathEscape(id)+"/cancel", body); req != nil {
			serveFuzz(t, h, req)
		}
	})
}

func FuzzReadStream(f *testing.F) {
	f.Add("wrun_x", "out", "cursor=1&limit=2", "", false)
	f.Add("wrun_x", "a/b", "", "12", true)
	f.Add("", "", "limit=1001", "-1", true)
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, id, name, query, lastID string, sse bool) {
		req := newRequest("GET", "/v1/runs/"+url.PathEscape(id)+"/streams/"+url.PathEscape(name)+"?"+query, "")
		if req == nil {
			return
		}
		if sse {
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Last-Event-ID", lastID)
		}
		serveFuzz(t, h, req)
	})
}

func FuzzRunRoutes(f *testing.F) {
	f.Add("wrun_x", "resolveData=none")
	f.Add("", "limit=0")
	f.Add("counts", "x=1")
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, id, query string) {
		for _, suffix := range []string{"", "/steps", "/history", "/hooks", "/streams"} {
			if req := newRequest("GET", "/v1/runs/"+url.PathEscape(id)+suffix+"?"+query, ""); req != nil {
				serveFuzz(t, h, req)
			}
		}
	})
}

// FuzzPutSchedule: whatever the body, PUT /v1/schedules/{name} answers
// without a 5xx, and a schedule it stores holds only values a run accepts
// (issue 19): text of valid UTF-8 within the run's limits, never a name
// with U+FFFD where the client sent invalid bytes.
func FuzzPutSchedule(f *testing.F) {
	for _, s := range []string{`{"workflowName":"add","cron":"@every 2s","input":{"A":1}}`, `{"workflowName":"x","cron":"@every 500ms"}`,
		"{\"workflowName\":\"\xff\",\"cron\":\"@daily\"}", `{"workflowName":"\ufffd","cron":"@daily"}`, `{"workflowName":"x","version":"","cron":"* * * * * *"}`, `nul`, `{}`} {
		f.Add(s)
	}
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, newRequest("PUT", "/v1/schedules/fuzz", body))
		if rec.Code >= 500 {
			t.Fatalf("PUT answered %d: %s", rec.Code, rec.Body)
		}
		if rec.Code != http.StatusOK {
			return
		}
		var s api.Schedule
		if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(body) || len(s.WorkflowName) > 255 || s.WorkflowName == "" {
			t.Fatalf("PUT %q stored %+v", body, s)
		}
	})
}

// FuzzPublishEvents: whatever the body, POST /v1/events answers below
// 500, and stores events only when it answers 200, exactly those it
// answers (never a half-stored request).
// newestEventSeq is the seq of c's newest event, 0 for none.
func newestEventSeq(t *testing.T, c *ow.Client) int64 {
	page, err := c.ListEvents(context.Background(), backend.ListEventsParams{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) == 0 {
		return 0
	}
	return page.Data[0].Seq
}

func FuzzPublishEvents(f *testing.F) {
	for _, s := range []string{`{"name":"a","data":{"x":1}}`, `[{"name":"a"},{"name":"b","key":"k","idempotencyKey":"i"}]`, `[]`, `{"name":""}`,
		`[{"name":"a"},{"name":"\u0000"}]`, `{"name":"a","data":1e999999}`, `{"name":"a","data":"\ud800"}`, `{"name":"a","idempotencyKey":"k"}`, `[{"name":"a"},1]`, `nul`} {
		f.Add(s)
	}
	b := backends[0].open(f)
	c := ow.NewClient(b)
	h := api.New(c, api.Options{MaxBodyBytes: 64 << 10})
	newest := func(t *testing.T) int64 { return newestEventSeq(t, c) }
	f.Fuzz(func(t *testing.T, body string) {
		before := newest(t)
		req := newRequest("POST", "/v1/events", body)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		serveFuzzAnswer(t, req, rec)
		after := newest(t)
		if rec.Code != http.StatusOK {
			if after != before {
				t.Fatalf("answered %d but stored events (newest seq %d → %d)", rec.Code, before, after)
			}
			return
		}
		var res api.PublishEventsResult
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		stored := 0
		for _, e := range res.Events {
			if !e.Duplicate {
				stored++
			}
		}
		page, err := c.ListEvents(context.Background(), backend.ListEventsParams{Limit: backend.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range page.Data {
			if e.Seq > before {
				n++
			}
		}
		if n != stored {
			t.Fatalf("answered %d new events, stored %d", stored, n)
		}
	})
}

// FuzzDeclareTriggersAndPublish declares, through PUT
// /v1/event-triggers/{workflow}, a trigger and a cancelOn declaration with
// a fuzzed CEL condition, then publishes, through POST /v1/events, an
// event with a fuzzed payload that the declarations (when stored) evaluate
// against the event and against a waiting run's input: no answer is a
// 5xx, a refused declaration leaves the stored ones as they were, an
// accepted one stores the condition as given, and a refused publish stores
// no event.
func FuzzDeclareTriggersAndPublish(f *testing.F) {
	for _, s := range [][2]string{
		{`event.data.amount > 100.0`, `{"amount":500}`},
		{`event.data.orderId == input.orderId`, `{"orderId":"o-1"}`},
		{`input.n == event.data.n && event.data.n > 0`, `{"n":1.0}`},
		{`event.data.x.y.z == 1`, `{"x":[1,2]}`},
		{`event.data.amount >`, `{}`},
		{`size(event.data.s) > 3 || event.key == "k"`, `"\ud800"`},
		{`[1,2,3].all(x, x > 0) && event.name == "fuzz.e"`, `1e999999`},
		{`event.data`, `null`},
		{"\x00", `{"a":`},
	} {
		f.Add(s[0], s[1])
	}
	b := backends[0].open(f)
	c := ow.NewClient(b)
	h := api.New(c, api.Options{MaxBodyBytes: 64 << 10})
	later := time.Now().Add(24 * time.Hour)
	if _, err := b.CreateWorkflowRun(context.Background(), backend.CreateWorkflowRunParams{WorkflowName: "fuzzed",
		Input: json.RawMessage(`{"orderId":"o-1","n":1}`), AvailableAt: &later}); err != nil {
		f.Fatal(err)
	}
	stored := func(t *testing.T) []backend.EventTrigger {
		ts, err := c.ListEventTriggers(context.Background(), "fuzzed")
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	newest := func(t *testing.T) int64 { return newestEventSeq(t, c) }
	f.Fuzz(func(t *testing.T, condition, payload string) {
		decl := map[string]any{"event": "fuzz.e", "if": condition}
		body, err := json.Marshal(map[string]any{"triggers": []any{decl}, "cancelOn": []any{decl}})
		if err != nil {
			t.Skip()
		}
		before := stored(t)
		req := newRequest("PUT", "/v1/event-triggers/fuzzed", string(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		serveFuzzAnswer(t, req, rec)
		after := stored(t)
		if rec.Code != http.StatusOK {
			if !backend.SameEventTriggers(before, after) {
				t.Fatalf("answered %d but the stored declarations changed: %+v → %+v", rec.Code, before, after)
			}
		} else {
			// json.Marshal made the condition valid UTF-8; that is what was sent.
			var sent struct{ Triggers []struct{ If string } }
			if err := json.Unmarshal(body, &sent); err != nil {
				t.Fatal(err)
			}
			if len(after) != 2 || after[0].Condition != sent.Triggers[0].If || after[1].Condition != sent.Triggers[0].If {
				t.Fatalf("answered 200 for condition %q, stored %+v", sent.Triggers[0].If, after)
			}
		}
		seq := newest(t)
		req = newRequest("POST", "/v1/events", `{"name":"fuzz.e","data":`+payload+`}`)
		if req == nil {
			return
		}
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		serveFuzzAnswer(t, req, rec)
		if rec.Code != http.StatusOK && newest(t) != seq {
			t.Fatalf("publish answered %d but stored an event", rec.Code)
		}
	})
}
