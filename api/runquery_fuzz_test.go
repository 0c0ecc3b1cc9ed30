package api_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzRunQuery sends any text as the q of GET /v1/runs and GET
// /v1/runs/count to the API over a namespace whose runs carry search
// attributes of every type (so attrs.<name> queries reach the SQL of the
// backend): never a panic, never a 5xx, and an error is a JSON {code,
// message}. The requests are addressed to localhost: newRequest's
// default host is refused with 403 by the access guard (no token), which
// would never reach the query.
func FuzzRunQuery(f *testing.F) {
	for _, s := range []string{
		`status = "failed" AND workflow = "sync-account" AND attrs.customer = "c-42" AND created > "2026-11-01"`,
		`attrs.tags IN ("eu", "us") OR NOT attrs.amount > 3`, `attrs.ratio <= 0.5 AND attrs.vip = true`,
		`attrs.due > "2026-11-01T00:00:00.123456789Z"`, `priority = 99999999999999999999`, `priority = -9223372036854775808`,
		`id STARTS_WITH "%_\\"`, `parent IS NULL AND schedule IS NOT NULL`, `((((`, `"`, `attrs.`, "status = \"\xff\"",
		`workflow = "\u0000"`, `created < "0001-01-01"`, `finished > "9999-12-31T23:59:59.999999999Z"`,
	} {
		f.Add(s)
	}
	h := fuzzHandler(f)
	start := httptest.NewRequest("POST", "/v1/runs", strings.NewReader(
		`{"workflowName":"sync-account","searchAttributes":{"customer":"c-42","tags":["eu"],"amount":3,"ratio":0.5,"vip":true}}`))
	start.Header.Set("Content-Type", "application/json")
	start.Host = "localhost" // the access guard answers 403 at any other host without a token
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, start)
	if rec.Code != http.StatusCreated {
		f.Fatalf("seed run: %d %s", rec.Code, rec.Body)
	}
	probe := newRequest("GET", "/v1/runs?"+url.Values{"q": {`attrs.customer = "c-42" AND status = "pending"`}}.Encode(), "")
	probe.Host = "localhost"
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, probe)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"c-42"`) {
		f.Fatalf("a good query does not reach the runs: %d %s", rec.Code, rec.Body)
	}
	f.Fuzz(func(t *testing.T, q string) {
		for _, path := range []string{"/v1/runs?", "/v1/runs/count?"} {
			req := newRequest("GET", path+url.Values{"q": {q}}.Encode(), "")
			req.Host = "localhost"
			serveFuzz(t, h, req)
		}
	})
}
