package dashboard

import (
	"net/http"
	"strings"
	"time"
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

func (d *Dashboard) loginForm(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if d.opts.Token == "" || d.authorized(r) {
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
	if d.opts.Token == "" {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if !d.tokenMatches(strings.TrimSpace(r.PostFormValue("token"))) {
		v := d.view(r, "Sign in", "login", &loginData{Next: next, Problem: "That is not this server's API token. It is the value of OPENWORKFLOW_API_TOKEN (or server.token in openworkflow.yaml) where `ow server` runs."})
		d.render(w, r, http.StatusUnauthorized, "login", v)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: d.session, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteLaxMode, MaxAge: int(sessionLifetime / time.Second),
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect after sign-in on this site: a path, never
// another origin ("//evil", "/\evil", "https://…").
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n") {
		return "/"
	}
	return next
}
