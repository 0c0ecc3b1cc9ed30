package access

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestThrottleCountsFailuresPerClientAndGlobally: a client past its
// budget waits while another does not; past the global budget everyone
// waits; units come back at the configured rate.
func TestThrottleCountsFailuresPerClientAndGlobally(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	th := NewThrottle(ThrottleOptions{ClientRate: 1, ClientBurst: 2, GlobalRate: 1, GlobalBurst: 5, MaxClients: 3})
	th.now = func() time.Time { return now }
	th.Failed("a")
	if w := th.Blocked("a"); w != 0 {
		t.Fatalf("one failure of two blocks a for %v", w)
	}
	th.Failed("a")
	if w := th.Blocked("a"); w <= 0 || w > time.Second {
		t.Fatalf("a at its budget waits %v, want up to 1 s", w)
	}
	if w := th.Blocked("b"); w != 0 {
		t.Fatalf("b is held back by a's failures for %v", w)
	}
	now = now.Add(time.Second)
	if w := th.Blocked("a"); w != 0 {
		t.Fatalf("a still waits %v after a unit came back", w)
	}
	th.Failed("b")
	th.Failed("c")
	th.Failed("d")
	th.Failed("b") // the global budget (5 units, 1 back) is spent
	if w := th.Blocked("e"); w <= 0 {
		t.Fatalf("a new client is not held back past the global budget")
	}
	if len(th.clients) > 3 {
		t.Errorf("the throttle remembers %d clients, more than MaxClients", len(th.clients))
	}
}

// TestThrottleCountsAnIPv6ClientByItsNetwork: addresses of one /64 share
// a budget (a host holds a /64 and could rotate through it); another /64
// and IPv4 clients do not.
func TestThrottleCountsAnIPv6ClientByItsNetwork(t *testing.T) {
	th := NewThrottle(ThrottleOptions{ClientRate: 0.001, ClientBurst: 2, GlobalBurst: 1000})
	th.Failed("2001:db8:1:2::1")
	th.Failed("2001:db8:1:2:ffff::9")
	for _, c := range []struct {
		addr    string
		blocked bool
	}{
		{"2001:db8:1:2::77", true},
		{"2001:db8:1:3::1", false},
		{"192.0.2.1", false},
		{"::ffff:192.0.2.1", false},
	} {
		if got := th.Blocked(c.addr) > 0; got != c.blocked {
			t.Errorf("%s blocked %v, want %v", c.addr, got, c.blocked)
		}
	}
}

// TestThrottleForgetsClientsThatRegainedTheirBudget: when the table of
// clients is full, those with their whole budget back are dropped.
func TestThrottleForgetsClientsThatRegainedTheirBudget(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	th := NewThrottle(ThrottleOptions{ClientRate: 1, ClientBurst: 1, GlobalBurst: 1000, MaxClients: 2})
	th.now = func() time.Time { return now }
	th.Failed("a")
	th.Failed("b")
	now = now.Add(time.Minute)
	th.Failed("c")
	if _, ok := th.clients["c"]; !ok || len(th.clients) != 1 {
		t.Errorf("clients after the sweep: %v", th.clients)
	}
}

// TestGuard: without a token only loopback host names; cross-origin
// requests that change state are refused unless their origin is trusted.
func TestGuard(t *testing.T) {
	local := NewGuard(GuardOptions{LoopbackOnly: true, TrustedOrigins: []string{"https://app.example", "*", "::bad::"}})
	withToken := NewGuard(GuardOptions{})
	for _, c := range []struct {
		name   string
		g      *Guard
		method string
		host   string
		header []string
		ok     bool
	}{
		{"a GET to 127.0.0.1 passes", local, "GET", "127.0.0.1:8080", nil, true},
		{"a GET to localhost passes", local, "GET", "localhost:8080", nil, true},
		{"a GET to a name under .localhost passes", local, "GET", "ow.localhost", nil, true},
		{"a GET to [::1] passes", local, "GET", "[::1]:8080", nil, true},
		{"a GET to LOCALHOST. passes", local, "GET", "LOCALHOST.:1", nil, true},
		{"a GET to a rebound name is refused", local, "GET", "evil.example:8080", nil, false},
		{"a GET to localhost.evil.example is refused", local, "GET", "localhost.evil.example", nil, false},
		{"a GET to 0.0.0.0 is refused", local, "GET", "0.0.0.0:8080", nil, false},
		{"a GET without a host is refused", local, "GET", "", nil, false},
		{"a rebound name is fine with a token", withToken, "GET", "ow.example.com", nil, true},
		{"a cross-site POST is refused", local, "POST", "127.0.0.1", []string{"Sec-Fetch-Site", "cross-site"}, false},
		{"a same-site POST of another port is refused", local, "POST", "127.0.0.1", []string{"Sec-Fetch-Site", "same-site"}, false},
		{"a POST with a foreign Origin is refused", local, "POST", "127.0.0.1", []string{"Origin", "http://evil.example"}, false},
		{"a POST of a trusted origin passes", local, "POST", "127.0.0.1", []string{"Origin", "https://app.example", "Sec-Fetch-Site", "cross-site"}, true},
		{"a wildcard origin is trusted with nothing", local, "POST", "127.0.0.1", []string{"Origin", "https://any.example", "Sec-Fetch-Site", "cross-site"}, false},
		{"a same-origin POST passes", local, "POST", "127.0.0.1", []string{"Sec-Fetch-Site", "same-origin"}, true},
		{"a POST of a program passes", local, "POST", "127.0.0.1", nil, true},
		{"a cross-site GET passes (the browser does not let the page read it)", local, "GET", "127.0.0.1", []string{"Sec-Fetch-Site", "cross-site"}, true},
		{"a cross-site POST is refused with a token too", withToken, "POST", "ow.example.com", []string{"Sec-Fetch-Site", "cross-site"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, "/v1/runs", nil)
			r.Host = c.host
			for i := 0; i+1 < len(c.header); i += 2 {
				r.Header.Set(c.header[i], c.header[i+1])
			}
			err := c.g.Check(r)
			if (err == nil) != c.ok {
				t.Fatalf("Check = %v, want ok %v", err, c.ok)
			}
			if d, _ := AsDenied(err); err != nil && (d == nil || d.Status != http.StatusForbidden || d.Message == "") {
				t.Errorf("the refusal is %#v, want a 403 with a message", err)
			}
		})
	}
}

// TestKeyring: a token is found by its secret whatever its position, a
// wrong one is refused, scope and namespace are held.
func TestKeyring(t *testing.T) {
	k, err := NewKeyring("orders", []Token{
		{Name: "wall", Secret: "read-token-0123456789", Scope: ScopeRead},
		{Name: "ops", Secret: "write-token-0123456789", Scope: ScopeWrite},
		{Name: "billing", Secret: "billing-token-0123456789", Scope: ScopeWrite, Namespace: "billing"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	for _, c := range []struct {
		secret string
		need   Scope
		want   int // 0: allowed
	}{
		{"read-token-0123456789", ScopeRead, 0},
		{"read-token-0123456789", ScopeWrite, http.StatusForbidden},
		{"write-token-0123456789", ScopeWrite, 0},
		{"billing-token-0123456789", ScopeRead, http.StatusForbidden},
		{"read-token-012345678", ScopeRead, http.StatusUnauthorized},
		{"", ScopeRead, http.StatusUnauthorized},
	} {
		r.Header.Set("Authorization", "Bearer "+c.secret)
		err := k.Authorize(r, c.need)
		d, _ := AsDenied(err)
		if (c.want == 0 && err != nil) || (c.want != 0 && (d == nil || d.Status != c.want)) {
			t.Errorf("token %q for %s: %v, want status %d", c.secret, c.need, err, c.want)
		}
	}
	if _, err := NewKeyring("", []Token{{Secret: "same-secret-0123456789"}, {Secret: "same-secret-0123456789"}}, nil); err == nil {
		t.Error("two tokens with one secret were taken")
	}
}

// FuzzLoopbackHost: a Host header taken as loopback names this machine:
// localhost, a name under .localhost, or a loopback IP.
func FuzzLoopbackHost(f *testing.F) {
	for _, s := range []string{"localhost:8080", "127.0.0.1", "[::1]:80", "evil.example", "127.0.0.1.evil", "[::ffff:127.0.0.1]:1", "localhost.", "0x7f.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, hostport string) {
		if !LoopbackHost(hostport) {
			return
		}
		host := hostport
		if h, _, err := net.SplitHostPort(hostport); err == nil {
			host = h
		}
		if ip := net.ParseIP(trimHost(host)); ip != nil {
			if !ip.IsLoopback() {
				t.Fatalf("%q taken as loopback: %s is not", hostport, ip)
			}
			return
		}
		name := trimHost(host)
		if name != "localhost" && !(len(name) > len(".localhost") && name[len(name)-len(".localhost"):] == ".localhost") {
			t.Fatalf("%q taken as loopback: %q is neither a loopback IP nor a localhost name", hostport, name)
		}
	})
}

// FuzzParseScope: a scope that parses writes back as it was read.
func FuzzParseScope(f *testing.F) {
	f.Add("read")
	f.Add("write")
	f.Add("admin")
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := ParseScope(s)
		if err != nil {
			return
		}
		if sc.String() != s {
			t.Fatalf("ParseScope(%q) = %s", s, sc)
		}
	})
}
