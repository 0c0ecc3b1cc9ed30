package dashboard

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/access"
)

// loginData is the sign-in form.
type loginData struct {
	Next    string
	Problem string
	// NoToken: the dashboard has no token, so there is nothing to sign in
	// to.
	NoToken bool
}

// sessionLifetime is how long a sign-in lasts: 7 days.
const sessionLifetime = 7 * 24 * time.Hour

// DefaultMaxSessions is the default of [Options.MaxSessions]: 10,000.
const DefaultMaxSessions = 10_000

// sessionCookie names the cookie that holds a signed-in visitor's
// session id (random, held by the server: see sessions).
const sessionCookie = "ow_session"

// visitorKey is the context key of the visitor's token.
type visitorKey struct{}

// visitor returns the token of the request's visitor, set by
// authenticate; without tokens configured, a token of full access.
func visitor(r *http.Request) (access.Token, bool) {
	t, ok := r.Context().Value(visitorKey{}).(access.Token)
	return t, ok
}

func (d *Dashboard) loginForm(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if d.keys.Open() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if _, ok := d.session(r); ok {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	d.render(w, r, http.StatusOK, "login", d.view(r, "Sign in", "login", &loginData{Next: next}))
}

func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	if !d.parseForm(w, r) {
		return
	}
	next := safeNext(r.PostFormValue("next"))
	if d.keys.Open() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	tok, err := d.keys.Verify(r, strings.TrimSpace(r.PostFormValue("token")))
	if err == nil {
		err = d.keys.Permit(tok, access.ScopeRead)
	}
	if err != nil {
		denied, _ := access.AsDenied(err)
		problem := denied.Message
		if denied.Status == http.StatusUnauthorized {
			problem = "That is not this server's API token. It is the value of OPENWORKFLOW_API_TOKEN (or server.token, or a token of server.tokens, in openworkflow.yaml) where `ow server` runs."
		}
		denied.SetHeaders(w.Header())
		d.render(w, r, denied.Status, "login", d.view(r, "Sign in", "login", &loginData{Next: next, Problem: problem}))
		return
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		d.sessions.revoke(c.Value)
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: d.sessions.create(tok), Path: "/", HttpOnly: true, Secure: d.https(r),
		SameSite: http.SameSiteLaxMode, MaxAge: int(sessionLifetime / time.Second),
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		d.sessions.revoke(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, Secure: d.https(r), SameSite: http.SameSiteLaxMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// session returns the token of r's session cookie, if it names a live
// session.
func (d *Dashboard) session(r *http.Request) (access.Token, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return access.Token{}, false
	}
	return d.sessions.get(c.Value)
}

// https reports whether the visitor reached the dashboard over HTTPS:
// the connection is TLS, or it comes from a trusted proxy
// (Options.TrustedProxies) that says "X-Forwarded-Proto: https". The
// session cookie is then Secure.
func (d *Dashboard) https(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if len(d.opts.TrustedProxies) == 0 || !strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https") {
		return false
	}
	ip, err := netip.ParseAddr(access.ClientAddr(r))
	if err != nil {
		return false
	}
	for _, p := range d.opts.TrustedProxies {
		if p.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}

// authenticate lets a request through when no token is configured, when
// it is for a static file or the sign-in page, or when it carries a live
// session cookie or a bearer token whose scope allows it (a page needs
// read, an action write); otherwise a page is redirected to the sign-in
// form, anything else answered 401, 403 (scope or namespace) or 429
// (too many wrong tokens).
func (d *Dashboard) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.keys.Open() {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), visitorKey{}, access.Token{Name: "anyone on this machine", Scope: access.ScopeWrite})))
			return
		}
		if strings.HasPrefix(r.URL.Path, "/static/") || r.URL.Path == "/login" {
			next.ServeHTTP(w, r)
			return
		}
		need := access.ScopeWrite
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.URL.Path == "/logout" {
			need = access.ScopeRead
		}
		tok, ok := d.session(r)
		var err error
		if !ok {
			if _, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !bearer {
				if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
					http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
					return
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="openworkflow"`)
				http.Error(w, "sign in first: this dashboard needs an API token (POST /login, or Authorization: Bearer <token>)", http.StatusUnauthorized)
				return
			}
			tok, err = d.keys.Bearer(r)
		}
		if err == nil {
			err = d.keys.Permit(tok, need)
		}
		if err != nil {
			denied, _ := access.AsDenied(err)
			if denied.Status == http.StatusForbidden && strings.Contains(r.Header.Get("Accept"), "text/html") {
				d.fail(w, r, http.StatusForbidden, "Not allowed", denied.Message)
				return
			}
			denied.Write(w)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), visitorKey{}, tok)))
	})
}

// safeNext keeps a redirect after sign-in on this site. next is parsed
// (net/url), not filtered: it must be a clean absolute path of this
// server — no scheme, host or user, no control character or backslash
// anywhere, no "//" at its start, no dot segment — optionally with a
// query that parses; the URL is rebuilt from the parsed path and that
// query. Anything else gives "/".
func safeNext(next string) string {
	if next == "" || strings.ContainsAny(next, "\\") || strings.ContainsFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || u.Fragment != "" {
		return "/"
	}
	p := u.Path
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\") || strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "/"
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return "/"
		}
	}
	out := &url.URL{Path: p}
	if _, err := url.ParseQuery(u.RawQuery); err == nil {
		out.RawQuery = u.RawQuery // checked above: no control character, no backslash
	}
	s := out.String()
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") {
		return "/"
	}
	return s
}
