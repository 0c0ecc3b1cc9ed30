// Package dashboard is the web dashboard of OpenWorkflow for Go: the runs
// of a namespace with their counts, filters and pages; a run's status
// explained, its input, output and error, a timeline of its steps and
// attempts, its hooks, child runs and live streams; the actions of an
// operator (start, cancel, retry from the failed step, fork from a step,
// send a signal, resume a hook); the workers holding runs; and the
// schedules, with their next ticks, paused, resumed or run now. `ow
// server` serves it at
// /; mount [New] in a program of your own:
//
//	mux.Handle("/v1/", api.New(client, api.Options{Token: token}))
//	mux.Handle("/", dashboard.New(client, dashboard.Options{Token: token}))
//
// # How it reads and acts
//
// Every page and action is made of operations of the HTTP API (package
// api), called in process through the API's own handler: the dashboard
// shows and does only what an API client can, with the API's validation
// and error messages. Pages are rendered on the server from html/template
// files; a small script (no build step) adds relative times, confirmation
// dialogs, JSON checks before sending, and live updates over Server-Sent
// Events, which end when the run does. Templates, the stylesheet and the
// script are embedded in the binary.
//
// # Security
//
// With [Options.Token] set, every page, live stream and action needs the
// token: sent once to the sign-in form, it is kept as an HttpOnly,
// SameSite=Lax session cookie holding a keyed hash of the token (not the
// token), or sent by a script as "Authorization: Bearer <token>". Without
// a token the dashboard answers only requests addressed to a loopback
// host name, against DNS rebinding. Forms are protected from cross-site
// request forgery by net/http's CrossOriginProtection (Sec-Fetch-Site and
// Origin checks), and every page carries a strict Content-Security-Policy.
package dashboard

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure the dashboard. The zero value serves without auth,
// re-reads live views every second, and logs nothing.
type Options struct {
	// Token, when set, is the API token a visitor must give (once, to the
	// sign-in form, or as a bearer header) before seeing anything. Use the
	// API's token: whoever may call the API may use the dashboard.
	Token string
	// Logger receives the failures of actions and live views; nil
	// discards them.
	Logger *slog.Logger
	// LiveInterval is how often a live view (a run's page, the first page
	// of the runs list) re-reads what it shows. Default 1 s.
	LiveInterval time.Duration
	// MaxBodyBytes limits an action's form; default 1 MiB, the API's
	// default body limit.
	MaxBodyBytes int64
}

// Dashboard is the dashboard's http.Handler. Create it with [New].
type Dashboard struct {
	api     apiClient
	apiH    http.Handler
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	handler http.Handler
	pages   map[string]*template.Template
	session string // the session cookie's value when Token is set
	version string // the static files' content hash, for cache busting
	counts  countsCache
}

// New returns the dashboard over c. It calls the API's operations (an
// api.Handler of its own, without a token: the dashboard checks its
// visitors) and so uses only the client side of the seam.
func New(c *ow.Client, opts Options) *Dashboard {
	if opts.LiveInterval <= 0 {
		opts.LiveInterval = time.Second
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = api.DefaultMaxBodyBytes
	}
	d := &Dashboard{opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.apiH = api.New(c, api.Options{MaxBodyBytes: opts.MaxBodyBytes})
	d.api = apiClient{h: d.apiH}
	if opts.Token != "" {
		mac := hmac.New(sha256.New, []byte(opts.Token))
		mac.Write([]byte("openworkflow dashboard session v1"))
		d.session = hex.EncodeToString(mac.Sum(nil))
	}
	d.pages = parsePages()
	d.version = staticVersion()
	d.routes()
	cop := http.NewCrossOriginProtection()
	d.handler = d.secure(cop.Handler(d.authenticate(d.mux)))
	return d
}

// ServeHTTP serves one request.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.handler.ServeHTTP(w, r)
}

func (d *Dashboard) routes() {
	m := d.mux
	m.HandleFunc("GET /{$}", d.runsPage)
	m.HandleFunc("GET /live", d.runsLive)
	m.HandleFunc("GET /counts", d.countsFragment)
	m.HandleFunc("GET /runs/new", d.startForm)
	m.HandleFunc("POST /runs", d.startRun)
	m.HandleFunc("GET /runs/{id}", d.runPage)
	m.HandleFunc("GET /runs/{id}/live", d.runLive)
	m.HandleFunc("GET /runs/{id}/stream", d.runStream)
	m.HandleFunc("POST /runs/{id}/cancel", d.cancelRun)
	m.HandleFunc("POST /runs/{id}/retry", d.retryRun)
	m.HandleFunc("POST /runs/{id}/fork", d.forkRun)
	m.HandleFunc("POST /runs/{id}/hook", d.resumeHook)
	m.HandleFunc("POST /signals", d.sendSignal)
	m.HandleFunc("GET /workers", d.workersPage)
	m.HandleFunc("GET /schedules", d.schedulesPage)
	m.HandleFunc("POST /schedules/{name}/pause", d.scheduleAction("pause", "schedule-paused"))
	m.HandleFunc("POST /schedules/{name}/resume", d.scheduleAction("resume", "schedule-resumed"))
	m.HandleFunc("POST /schedules/{name}/trigger", d.triggerSchedule)
	m.HandleFunc("GET /login", d.loginForm)
	m.HandleFunc("POST /login", d.login)
	m.HandleFunc("POST /logout", d.logout)
	static, _ := fs.Sub(staticFS, "static")
	files := http.FileServerFS(static)
	m.Handle("GET /static/", http.StripPrefix("/static/", cacheForever(files)))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		d.fail(w, r, http.StatusNotFound, "Not found", "There is no page at "+r.URL.Path+".")
	})
}

// secure sets the headers every answer carries and, without a token,
// refuses hosts other than loopback names (DNS rebinding would otherwise
// let a web page act on a local dashboard as if it were same-origin).
func (d *Dashboard) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		if d.opts.Token == "" && !loopbackHost(r.Host) {
			http.Error(w, "This dashboard has no token configured, so it answers only at a loopback address (localhost, 127.0.0.1, [::1]), not at "+r.Host+". Set OPENWORKFLOW_API_TOKEN to serve it under another name.", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sessionCookie names the cookie that holds a signed-in visitor's
// session: HMAC-SHA256 of a fixed label keyed by the token, so the cookie
// is not the token and changes when the token does.
const sessionCookie = "ow_session"

// authenticate lets a request through when no token is configured, when
// it is for a static file or the sign-in page, or when it carries the
// session cookie or the bearer token; otherwise a page is redirected to
// the sign-in form and anything else answered 401.
func (d *Dashboard) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.opts.Token == "" || strings.HasPrefix(r.URL.Path, "/static/") || r.URL.Path == "/login" || d.authorized(r) {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
			http.Redirect(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="openworkflow"`)
		http.Error(w, "sign in first: this dashboard needs the API token (POST /login, or Authorization: Bearer <token>)", http.StatusUnauthorized)
	})
}

func (d *Dashboard) authorized(r *http.Request) bool {
	if c, err := r.Cookie(sessionCookie); err == nil {
		return subtle.ConstantTimeCompare([]byte(c.Value), []byte(d.session)) == 1
	}
	if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return d.tokenMatches(strings.TrimSpace(got))
	}
	return false
}

// tokenMatches compares a token with the configured one in constant time
// (of their hashes, so the length does not leak either).
func (d *Dashboard) tokenMatches(got string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(d.opts.Token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

func cacheForever(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// URLs carry the files' content hash (?v=), so a new build gets
		// new URLs.
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		h.ServeHTTP(w, r)
	})
}

var (
	versionOnce sync.Once
	versionHash string
)

// staticVersion hashes the embedded static files, for their URLs.
func staticVersion() string {
	versionOnce.Do(func() {
		h := sha256.New()
		_ = fs.WalkDir(staticFS, "static", func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := staticFS.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s %d\n", path, len(b))
			h.Write(b)
			return nil
		})
		versionHash = hex.EncodeToString(h.Sum(nil))[:12]
	})
	return versionHash
}
