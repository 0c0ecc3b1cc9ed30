package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/access"
	"github.com/openworkflow-go/openworkflow/api"
)

// testToken is a token long enough for a server (access.MinTokenLength).
const testToken = "s3cret-token-for-the-api-tests"

// lenient is a throttle that the route walks below, with their hundreds
// of wrong tokens on purpose, do not exhaust.
func lenient() *access.Throttle {
	return access.NewThrottle(access.ThrottleOptions{ClientBurst: 1 << 20, GlobalBurst: 1 << 20})
}

// concretePath fills a route pattern's wildcards.
func concretePath(pattern string) string {
	r := strings.NewReplacer("{id}", "wrun_00000000000000000000000000", "{token}", "some-token", "{name}", "out")
	return r.Replace(pattern)
}

// TestAuthOnEveryRoute walks the route table: with a token configured,
// every route refuses a request without it, or with another, before doing
// anything — so a route added later cannot be forgotten.
func TestAuthOnEveryRoute(t *testing.T) {
	h := api.New(ow.NewClient(backends[0].open(t)), api.Options{Token: testToken, Throttle: lenient()})
	srv := httptest.NewServer(statuses.record(h))
	defer srv.Close()
	routes := h.Routes()
	if len(routes) < 16 {
		t.Fatalf("only %d routes", len(routes))
	}
	for _, rt := range routes {
		method := rt.Method
		if method == "*" {
			method = "POST"
		}
		for _, auth := range []string{"", "Bearer wrong", "Bearer " + testToken + "2", "Basic " + testToken, testToken} {
			req, _ := http.NewRequest(method, srv.URL+concretePath(rt.Pattern), strings.NewReader(`{}`))
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s with Authorization %q answered %d, want 401", method, rt.Pattern, auth, res.StatusCode)
			}
		}
		// With the token, the request gets past auth.
		req, _ := http.NewRequest(method, srv.URL+concretePath(rt.Pattern), strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+testToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusUnauthorized {
			t.Errorf("%s %s refused the right token", method, rt.Pattern)
		}
	}
}

// TestPublicWebhooks: with PublicWebhooks, only the webhook route takes
// requests without the token (the hook token is then the credential).
func TestPublicWebhooks(t *testing.T) {
	h := api.New(ow.NewClient(backends[0].open(t)), api.Options{Token: testToken, PublicWebhooks: true, Throttle: lenient()})
	srv := httptest.NewServer(statuses.record(h))
	defer srv.Close()
	for _, rt := range h.Routes() {
		method := rt.Method
		if method == "*" {
			method = "POST"
		}
		var res *http.Response
		var err error
		if method == "GET" {
			res, err = http.Get(srv.URL + concretePath(rt.Pattern))
		} else {
			res, err = http.Post(srv.URL+concretePath(rt.Pattern), "application/json", strings.NewReader(`{}`))
		}
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		public := rt.Pattern == "/v1/webhooks/{token}"
		if public && res.StatusCode != http.StatusNotFound {
			t.Errorf("a public webhook of an unknown token answered %d, want 404", res.StatusCode)
		}
		if !public && res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s answered %d without the token, want 401", method, rt.Pattern, res.StatusCode)
		}
	}
}

// TestCORS: no CORS headers unless configured; configured origins get
// them, and a preflight is answered. "*" is honoured only with a token:
// without one it would let every web page read a loopback API.
func TestCORS(t *testing.T) {
	b := backends[0].open(t)
	token := strings.Repeat("t", 32)
	for _, c := range []struct {
		origins []string
		token   string
		origin  string
		want    string
	}{
		{nil, "", "https://evil.example", ""},
		{[]string{"https://app.example"}, "", "https://evil.example", ""},
		{[]string{"https://app.example"}, "", "https://app.example", "https://app.example"},
		{[]string{"*"}, "", "https://evil.example", ""},
		{[]string{"*"}, token, "https://evil.example", "*"},
	} {
		srv := httptest.NewServer(api.New(ow.NewClient(b), api.Options{CORSOrigins: c.origins, Token: c.token}))
		req, _ := http.NewRequest("GET", srv.URL+"/v1/runs", nil)
		req.Header.Set("Origin", c.origin)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != c.want {
			t.Errorf("origins %v, Origin %s: Allow-Origin %q, want %q", c.origins, c.origin, got, c.want)
		}
		pre, _ := http.NewRequest("OPTIONS", srv.URL+"/v1/runs", nil)
		pre.Header.Set("Origin", c.origin)
		pre.Header.Set("Access-Control-Request-Method", "POST")
		res, err = http.DefaultClient.Do(pre)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if c.want != "" && (res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Methods") == "") {
			t.Errorf("preflight answered %d", res.StatusCode)
		}
		if c.want == "" && res.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("origins %v, Origin %s: a preflight got Allow-Origin %q", c.origins, c.origin, res.Header.Get("Access-Control-Allow-Origin"))
		}
		srv.Close()
	}
}

// TestScopesOnEveryRoute walks the route table: every route states the
// scope it needs — read for GET, write for everything else — and a token
// is held to it before anything is done, so a route added later cannot
// be forgotten. A token limited to another namespace gets nowhere; one
// limited to the server's namespace is a token like the others.
func TestScopesOnEveryRoute(t *testing.T) {
	const read, write, mine, theirs = "a-read-token-for-the-wall", "a-write-token-for-ops", "a-token-of-this-namespace", "a-token-of-another-namespace"
	b := backends[0].open(t)
	h := api.New(ow.NewClient(b), api.Options{Throttle: lenient(), Tokens: []access.Token{
		{Name: "wall", Secret: read, Scope: access.ScopeRead},
		{Name: "ops", Secret: write, Scope: access.ScopeWrite},
		{Name: "mine", Secret: mine, Scope: access.ScopeRead, Namespace: b.NamespaceID()},
		{Name: "theirs", Secret: theirs, Scope: access.ScopeWrite, Namespace: "not-" + b.NamespaceID()},
	}})
	srv := httptest.NewServer(statuses.record(h))
	defer srv.Close()
	call := func(method, path, token string) int {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, rt := range h.Routes() {
		want := access.ScopeWrite
		if rt.Method == "GET" {
			want = access.ScopeRead
		}
		if rt.Scope != want {
			t.Errorf("%s %s needs scope %s, want %s", rt.Method, rt.Pattern, rt.Scope, want)
		}
		methods := []string{rt.Method}
		if rt.Method == "*" {
			methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
		}
		for _, method := range methods {
			path := concretePath(rt.Pattern)
			for _, c := range []struct {
				token   string
				allowed bool
			}{
				{read, rt.Scope == access.ScopeRead},
				{mine, rt.Scope == access.ScopeRead},
				{write, true},
				{theirs, false},
			} {
				got := call(method, path, c.token)
				if c.allowed && (got == http.StatusForbidden || got == http.StatusUnauthorized) {
					t.Errorf("%s %s refused a token that may (%d)", method, path, got)
				}
				if !c.allowed && got != http.StatusForbidden {
					t.Errorf("%s %s answered %d to a token that may not, want 403", method, path, got)
				}
			}
		}
	}
}

// TestWrongBearerTokensAreThrottled: past its budget of wrong tokens, a
// client is answered 429 with Retry-After — even with the right token,
// which is not checked then.
func TestWrongBearerTokensAreThrottled(t *testing.T) {
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			t.Parallel()
			throttleTest(t, newServer(t, bk.open(t), api.Options{Token: testToken, Throttle: access.NewThrottle(access.ThrottleOptions{ClientBurst: 3, ClientRate: 0.001})}))
		})
	}
}

// throttleTest is TestWrongBearerTokensAreThrottled on one backend.
func throttleTest(t *testing.T, s *server) {
	for i := range 3 {
		if r := s.raw("GET", "/v1/runs", "", "", "Authorization", "Bearer wrong-guess-"+string(rune('a'+i))); r.status != http.StatusUnauthorized {
			t.Fatalf("wrong token %d answered %d, want 401", i, r.status)
		}
	}
	for _, c := range []struct{ name, token string }{{"a further wrong token", "wrong-guess-z"}, {"the right token", testToken}} {
		t.Run(c.name+" is answered 429 with Retry-After", func(t *testing.T) {
			r := s.raw("POST", "/v1/runs", "", startBody, "Content-Type", "application/json", "Authorization", "Bearer "+c.token)
			if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
				t.Fatalf("answered %d, Retry-After %q, want 429 with it: %s", r.status, r.header.Get("Retry-After"), r.body)
			}
			if e := r.apiError(t); e.Code != api.CodeTooManyRequests {
				t.Errorf("code %s, want too_many_requests", e.Code)
			}
		})
	}
	if n := s.runCount(); n != 0 {
		t.Errorf("%d runs were started by throttled requests", n)
	}
}
