package dashboard_test

import (
	"html"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/access"
	"github.com/openworkflow-go/openworkflow/backend"
)

const (
	fullToken  = "s3cret-token-for-tests"
	readToken  = "a-read-only-token-for-the-wall"
	otherToken = "a-token-of-another-namespace"
)

// TestSignInRedirectsOnlyToThisSite: after signing in, the visitor goes
// to the page it asked for — only if that is a path of this server; a
// next that a browser would read as another site gives "/".
func TestSignInRedirectsOnlyToThisSite(t *testing.T) {
	s := newSite(t, backends[0].open(t), siteOptions{token: fullToken, noWorker: true})
	for _, c := range []struct{ next, want string }{
		{"/runs/wrun_1", "/runs/wrun_1"},
		{"/?workflow=a+b&status=failed", "/?workflow=a+b&status=failed"},
		{"/runs/wrun_1?bad=%zz", "/runs/wrun_1"},
		{"/%09/evil.example", "/"},
		{"/\t/evil.example", "/"},
		{"/\n/evil.example", "/"},
		{"//evil.example", "/"},
		{"/\\evil.example", "/"},
		{"\\\\evil.example", "/"},
		{"/%5Cevil.example", "/"},
		{"/%2F/evil.example", "/"},
		{"https://evil.example/", "/"},
		{"http:/evil.example", "/"},
		{"//user@evil.example", "/"},
		{"evil.example", "/"},
		{"/../..//evil.example", "/"},
		{"/./", "/"},
		{"javascript:alert(1)", "/"},
		{"", "/"},
	} {
		t.Run("next "+c.next, func(t *testing.T) {
			anon := s.client()
			p := s.must(anon, http.StatusSeeOther, "POST", "/login", url.Values{"token": {fullToken}, "next": {c.next}})
			if loc := p.header.Get("Location"); loc != c.want {
				t.Errorf("signing in with next=%q redirects to %q, want %q", c.next, loc, c.want)
			}
			// The same through the form's URL, as a link would carry it.
			p = s.must(anon, http.StatusSeeOther, "GET", "/login?next="+url.QueryEscape(c.next), nil)
			if loc := p.header.Get("Location"); loc != c.want {
				t.Errorf("GET /login?next=%q redirects to %q, want %q", c.next, loc, c.want)
			}
		})
	}
	t.Run("the raw query of the issue, /login?next=/%09/evil.example, stays on the site", func(t *testing.T) {
		anon := s.client()
		s.must(anon, http.StatusSeeOther, "POST", "/login", url.Values{"token": {fullToken}})
		p := s.must(anon, http.StatusSeeOther, "GET", "/login?next=/%09/evil.example", nil)
		if loc := p.header.Get("Location"); loc != "/" {
			t.Errorf("redirects to %q", loc)
		}
	})
}

// TestSessionsAreRandomAndEndAtSignOut: each sign-in gets a session of
// its own, not derived from the token, and signing out ends it on the
// server: the cookie kept by someone else no longer works.
func TestSessionsAreRandomAndEndAtSignOut(t *testing.T) {
	s := newSite(t, backends[0].open(t), siteOptions{token: fullToken, noWorker: true})
	signIn := func() (*http.Client, *http.Cookie) {
		c := s.client()
		p := s.must(c, http.StatusSeeOther, "POST", "/login", url.Values{"token": {fullToken}})
		res := http.Response{Header: p.header}
		for _, ck := range res.Cookies() {
			if ck.Name == "ow_session" {
				return c, ck
			}
		}
		t.Fatalf("no session cookie in %v", p.header)
		return nil, nil
	}
	a, ca := signIn()
	_, cb := signIn()
	if ca.Value == cb.Value {
		t.Fatalf("two sign-ins got the same session %q", ca.Value)
	}
	if strings.Contains(ca.Value, fullToken) || len(ca.Value) < 22 {
		t.Errorf("session %q: want a random id of 128 bits at least, not the token", ca.Value)
	}
	// A stolen copy of a's cookie works while a is signed in...
	thief := s.client()
	u, _ := url.Parse(s.url)
	thief.Jar.SetCookies(u, []*http.Cookie{{Name: "ow_session", Value: ca.Value}})
	s.must(thief, http.StatusOK, "GET", "/", nil)
	// ...and not once a signs out; b's session is untouched.
	s.must(a, http.StatusSeeOther, "POST", "/logout", url.Values{}, "Origin", s.url)
	s.must(thief, http.StatusSeeOther, "GET", "/", nil)
	s.must(thief, http.StatusUnauthorized, "POST", "/signals", url.Values{"signal": {"x"}})
	other := s.client()
	other.Jar.SetCookies(u, []*http.Cookie{{Name: "ow_session", Value: cb.Value}})
	s.must(other, http.StatusOK, "GET", "/", nil)
	// A made-up session is no session.
	forged := s.client()
	forged.Jar.SetCookies(u, []*http.Cookie{{Name: "ow_session", Value: strings.Repeat("A", 26)}})
	s.must(forged, http.StatusSeeOther, "GET", "/", nil)
}

// TestWrongTokensAreThrottled: failed sign-ins, and failed bearer tokens
// on the dashboard and the API, are limited per client; past the budget
// the answer is 429 with Retry-After, before the token is even checked.
func TestWrongTokensAreThrottled(t *testing.T) {
	th := access.NewThrottle(access.ThrottleOptions{ClientBurst: 5, ClientRate: 0.001})
	s := newSite(t, backends[0].open(t), siteOptions{token: fullToken, noWorker: true, throttle: th})
	anon := s.client()
	for i := range 5 {
		s.must(anon, http.StatusUnauthorized, "POST", "/login", url.Values{"token": {"guess-number-" + string(rune('a'+i))}})
	}
	for _, c := range []struct {
		name, method, path string
		form               url.Values
		header             []string
	}{
		{"a sign-in, even with the right token", "POST", "/login", url.Values{"token": {fullToken}}, nil},
		{"a wrong sign-in", "POST", "/login", url.Values{"token": {"another-guess"}}, nil},
		{"a bearer token on the dashboard", "GET", "/workers", nil, []string{"Authorization", "Bearer another-guess-again"}},
		{"a bearer token on the API", "GET", "/v1/runs", nil, []string{"Authorization", "Bearer another-guess-again"}},
	} {
		t.Run(c.name+" is answered 429 with Retry-After", func(t *testing.T) {
			p := s.do(anon, c.method, c.path, c.form, c.header...)
			if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
				t.Errorf("answered %d with Retry-After %q, want 429 and a delay", p.status, p.header.Get("Retry-After"))
			}
		})
	}
}

// TestScopedTokensOnTheDashboard: a read-only visitor sees every page
// and no action button, and its actions are refused with 403 and change
// nothing; a token of another namespace cannot sign in.
func TestScopedTokensOnTheDashboard(t *testing.T) {
	tokens := []access.Token{
		{Name: "wall", Secret: readToken, Scope: access.ScopeRead},
		{Name: "billing", Secret: otherToken, Scope: access.ScopeWrite, Namespace: "billing"},
	}
	eachBackend(t, siteOptions{token: fullToken, tokens: tokens, noWorker: true}, func(t *testing.T, s *site) {
		id := s.start("greet", "ada")
		wall := s.client()
		s.must(wall, http.StatusSeeOther, "POST", "/login", url.Values{"token": {readToken}})
		actions := []string{"Cancel run", "data-open=\"dlg-", "action=\"/runs/" + id + "/cancel\"", "href=\"/runs/new", "Start again", "id=\"bulk-form\"", "Select all matching"}
		for _, path := range []string{"/", "/?workflow=greet", "/runs/" + id, "/schedules", "/workers", "/bulk-actions"} {
			p := s.must(wall, http.StatusOK, "GET", path, nil)
			for _, a := range actions {
				if strings.Contains(p.body, a) {
					t.Errorf("the read-only page %s shows %q", path, a)
				}
			}
		}
		for _, path := range []string{"/runs/" + id + "/cancel", "/runs/" + id + "/pause", "/runs/" + id + "/resume", "/runs", "/signals", "/schedules/s/trigger", "/bulk-actions", "/bulk-actions/bulk_x/cancel"} {
			t.Run("a read-only visitor's POST "+path+" is refused", func(t *testing.T) {
				s.must(wall, http.StatusForbidden, "POST", path, url.Values{"workflow": {"greet"}, "signal": {"x"}}, "Origin", s.url)
			})
		}
		t.Run("a read-only bearer token cannot act either", func(t *testing.T) {
			s.must(s.client(), http.StatusForbidden, "POST", "/runs/"+id+"/cancel", url.Values{}, "Authorization", "Bearer "+readToken)
		})
		if run := s.waitStatus(id, "pending"); run.Status != backend.RunPending || run.Paused() {
			t.Fatalf("a refused action changed the run: %s, paused %v", run.Status, run.Paused())
		}
		page, err := s.c.ListRuns(s.ctx, backend.ListWorkflowRunsParams{})
		if err != nil || len(page.Data) != 1 {
			t.Fatalf("runs after the refused actions: %v %v", page, err)
		}
		t.Run("a full-access visitor sees the actions", func(t *testing.T) {
			ops := s.client()
			s.must(ops, http.StatusSeeOther, "POST", "/login", url.Values{"token": {fullToken}})
			if p := s.must(ops, http.StatusOK, "GET", "/runs/"+id, nil); !strings.Contains(p.body, "Cancel run") {
				t.Errorf("the run page of a full-access visitor has no cancel button")
			}
		})
		t.Run("a token of another namespace cannot sign in", func(t *testing.T) {
			p := s.must(s.client(), http.StatusForbidden, "POST", "/login", url.Values{"token": {otherToken}})
			if !strings.Contains(p.body, "billing") {
				t.Errorf("the refusal does not name the token's namespace: %.500s", p.body)
			}
			s.must(s.client(), http.StatusForbidden, "GET", "/", nil, "Authorization", "Bearer "+otherToken)
		})
	})
}

// TestRunsOfThisWorkflowLinkListsThem: the run page's link to the runs
// of its workflow lists them, whatever the name holds (a space, +, /, &).
func TestRunsOfThisWorkflowLinkListsThem(t *testing.T) {
	eachBackend(t, siteOptions{noWorker: true}, func(t *testing.T, s *site) {
		const name = "a b+c/d&e"
		id := s.start(name, nil)
		other := s.start("greet", "ada")
		c := s.client()
		p := s.must(c, http.StatusOK, "GET", "/runs/"+id, nil)
		m := regexp.MustCompile(`<a href="(/\?workflow=[^"]*)">`).FindStringSubmatch(p.body)
		if m == nil {
			t.Fatalf("no link to the workflow's runs on the run page")
		}
		link := html.UnescapeString(m[1])
		u, err := url.Parse(link)
		if err != nil || u.Query().Get("workflow") != name {
			t.Fatalf("the link %q names workflow %q, want %q", link, u.Query().Get("workflow"), name)
		}
		list := s.must(c, http.StatusOK, "GET", link, nil)
		if !strings.Contains(list.body, id) {
			t.Errorf("the runs of %q (%s) do not list run %s", name, link, id)
		}
		if strings.Contains(list.body, other) {
			t.Errorf("the runs of %q list a run of greet", name)
		}
	})
}

// TestSessionCookieIsSecureBehindATrustedTLSProxy: the session cookie is
// Secure when a trusted proxy says the visitor came over HTTPS, and only
// then: anyone else may send X-Forwarded-Proto.
func TestSessionCookieIsSecureBehindATrustedTLSProxy(t *testing.T) {
	for _, c := range []struct {
		name    string
		proxies []netip.Prefix
		proto   string
		secure  bool
	}{
		{"a trusted proxy saying https makes it Secure", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "https", true},
		{"a trusted proxy saying http does not", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "http", false},
		{"an untrusted client saying https does not", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, "https", false},
		{"no trusted proxy configured, https said, does not", nil, "https", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSite(t, backends[0].open(t), siteOptions{token: fullToken, noWorker: true, proxies: c.proxies})
			p := s.must(s.client(), http.StatusSeeOther, "POST", "/login", url.Values{"token": {fullToken}}, "X-Forwarded-Proto", c.proto)
			res := http.Response{Header: p.header}
			var found bool
			for _, ck := range res.Cookies() {
				if ck.Name == "ow_session" {
					found = true
					if ck.Secure != c.secure {
						t.Errorf("the session cookie's Secure is %v, want %v", ck.Secure, c.secure)
					}
				}
			}
			if !found {
				t.Fatal("no session cookie")
			}
		})
	}
}
