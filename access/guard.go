package access

import (
	"net"
	"net/http"
	"strings"
)

// Guard protects a server from the web pages its users visit. A page of
// another origin can make a browser send requests to any address,
// loopback included; without a token nothing tells them from the user's
// own. A Guard refuses, with 403:
//
//   - when LoopbackOnly is set (a server without a token), a request
//     addressed to a host name other than a loopback one (localhost,
//     *.localhost, 127.0.0.0/8, [::1]): a page that rebinds its own name
//     to 127.0.0.1 (DNS rebinding) would otherwise be same-origin with
//     the server and read everything;
//   - a cross-origin request that is not GET, HEAD or OPTIONS, as told by
//     the browser's Sec-Fetch-Site or Origin headers
//     (net/http's CrossOriginProtection), unless its origin is trusted:
//     a form or a fetch of another site could otherwise act as the user.
//
// Requests without those headers (curl, programs, webhooks of other
// services) are not cross-origin requests of a browser and pass.
type Guard struct {
	loopbackOnly bool
	cop          *http.CrossOriginProtection
}

// GuardOptions configure a [Guard].
type GuardOptions struct {
	// LoopbackOnly refuses requests addressed to a host name that is not
	// a loopback one. Set it when the server has no token.
	LoopbackOnly bool
	// TrustedOrigins may make cross-origin requests that change state
	// ("scheme://host[:port]", exactly as a browser sends Origin). Invalid
	// entries and "*" are ignored: a wildcard would let every page act.
	TrustedOrigins []string
}

// NewGuard returns a guard with opts.
func NewGuard(opts GuardOptions) *Guard {
	g := &Guard{loopbackOnly: opts.LoopbackOnly, cop: http.NewCrossOriginProtection()}
	for _, o := range opts.TrustedOrigins {
		if o != "*" {
			_ = g.cop.AddTrustedOrigin(o) // an invalid origin matches no request
		}
	}
	return g
}

// Check returns a *Denied (403) if r is to be refused, nil otherwise.
func (g *Guard) Check(r *http.Request) error {
	if g.loopbackOnly && !LoopbackHost(r.Host) {
		return deny(http.StatusForbidden, "this server has no token, so it answers only at a loopback address (localhost, 127.0.0.1, [::1]), not at %q; set OPENWORKFLOW_API_TOKEN to serve it under another name", r.Host)
	}
	if err := g.cop.Check(r); err != nil {
		return deny(http.StatusForbidden, "cross-origin request refused: a page of another site may not change anything here (%v)", err)
	}
	return nil
}

// Handler returns next behind the guard; refusals are answered as plain
// text.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := g.Check(r); err != nil {
			err.(*Denied).Write(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackHost reports whether hostport (a Host header, with or without
// a port) names a loopback address: localhost, a name under .localhost
// (RFC 6761; not ".localhost" itself, whose first label is empty), an IP
// of 127.0.0.0/8 or ::1.
func LoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = trimHost(host)
	if host == "localhost" || (strings.HasSuffix(host, ".localhost") && len(host) > len(".localhost")) {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// trimHost lowers a host name and drops IPv6 brackets and a final dot.
func trimHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
}
