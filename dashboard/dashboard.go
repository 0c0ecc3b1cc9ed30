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
// With tokens ([Options.Token], [Options.Tokens]), every page, live
// stream and action needs one: sent once to the sign-in form, it starts a
// session (a random id in an HttpOnly, SameSite=Lax cookie, held in the
// server's memory for 7 days or until the visitor signs out; a restart
// signs everyone out), or it is sent by a script as "Authorization:
// Bearer <token>". A token of scope read sees every page but no action
// button, and its actions answer 403; wrong tokens are throttled
// (package access). Without a token the dashboard answers only requests
// addressed to a loopback host name, against DNS rebinding. Actions are
// protected from cross-site request forgery by net/http's
// CrossOriginProtection (Sec-Fetch-Site and Origin checks) — the same
// [access.Guard] as the API's — and every page carries a strict
// Content-Security-Policy.
package dashboard

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/access"
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
	// sign-in form, or as a bearer header) before seeing anything: a
	// token of full access, as api.Options.Token. Use the API's tokens:
	// whoever may call the API may use the dashboard, with the same scope.
	Token string
	// Tokens are more tokens with their scope and namespace, as
	// api.Options.Tokens; Token, if set, is added to them. Each is at
	// least access.MinTokenLength bytes: invalid tokens make every
	// request answer 500 and are logged (server.Serve and
	// api.Options.Keyring refuse them first).
	Tokens []access.Token
	// Throttle counts wrong tokens (sign-ins and bearer headers); share
	// the API's. Default: a throttle of its own.
	Throttle *access.Throttle
	// TrustedProxies are the addresses of reverse proxies whose
	// "X-Forwarded-Proto: https" is believed: the session cookie is then
	// Secure, as it is on a TLS connection. Default none.
	TrustedProxies []netip.Prefix
	// MaxSessions bounds the sessions held in memory; beyond, the oldest
	// is dropped (its visitor signs in again). Default 10,000
	// ([DefaultMaxSessions]).
	MaxSessions int
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
	api      apiClient
	apiH     http.Handler
	opts     Options
	log      *slog.Logger
	mux      *http.ServeMux
	handler  http.Handler
	pages    map[string]*template.Template
	keys     *access.Keyring // nil when the tokens are invalid (keysErr)
	keysErr  error
	sessions *sessions
	version  string // the static files' content hash, for cache busting
	counts   countsCache
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
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	d.apiH = api.New(c, api.Options{MaxBodyBytes: opts.MaxBodyBytes})
	d.api = apiClient{h: d.apiH}
	d.keys, d.keysErr = api.Options{Token: opts.Token, Tokens: opts.Tokens, Throttle: opts.Throttle}.Keyring(c.Backend().NamespaceID())
	if d.keysErr != nil {
		d.log.Error("dashboard: the tokens are invalid; every request answers 500", "err", d.keysErr)
	}
	d.sessions = newSessions(opts.MaxSessions)
	d.pages = parsePages()
	d.version = staticVersion()
	d.routes()
	d.handler = d.secure(d.authenticate(readYourWrites(d.mux)))
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
	m.HandleFunc("POST /runs/{id}/pause", d.pauseRun)
	m.HandleFunc("POST /runs/{id}/resume", d.resumeRun)
	m.HandleFunc("POST /runs/{id}/fork", d.forkRun)
	m.HandleFunc("POST /runs/{id}/hook", d.resumeHook)
	m.HandleFunc("POST /runs/{id}/approve", d.approve)
	m.HandleFunc("POST /signals", d.sendSignal)
	m.HandleFunc("GET /workers", d.workersPage)
	m.HandleFunc("GET /schedules", d.schedulesPage)
	m.HandleFunc("GET /events", d.eventsPage)
	m.HandleFunc("GET /events/{id}", d.eventPage)
	m.HandleFunc("GET /debounce-batches", d.flowControlPage)
	m.HandleFunc("POST /schedules/{name}/pause", d.scheduleAction("pause", "schedule-paused"))
	m.HandleFunc("POST /schedules/{name}/resume", d.scheduleAction("resume", "schedule-resumed"))
	m.HandleFunc("POST /schedules/{name}/trigger", d.triggerSchedule)
	m.HandleFunc("GET /bulk-actions", d.bulkListPage)
	m.HandleFunc("GET /bulk-actions/new", d.bulkConfirmPage)
	m.HandleFunc("POST /bulk-actions", d.startBulk)
	m.HandleFunc("GET /bulk-actions/{id}", d.bulkActionPage)
	m.HandleFunc("GET /bulk-actions/{id}/live", d.bulkLive)
	m.HandleFunc("POST /bulk-actions/{id}/cancel", d.cancelBulk)
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

// secure sets the headers every answer carries and puts the dashboard
// behind the guard it shares with the API (access.Guard): cross-origin
// actions are refused and, without a token, so are hosts other than
// loopback names (DNS rebinding would otherwise let a web page act on a
// local dashboard as if it were same-origin).
func (d *Dashboard) secure(next http.Handler) http.Handler {
	var guard *access.Guard
	if d.keys != nil {
		guard = access.NewGuard(access.GuardOptions{LoopbackOnly: d.keys.Open()})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		if d.keysErr != nil {
			http.Error(w, "the dashboard's tokens are invalid ("+d.keysErr.Error()+"); its operator must fix them", http.StatusInternalServerError)
			return
		}
		if err := guard.Check(r); err != nil {
			err.(*access.Denied).Write(w)
			return
		}
		next.ServeHTTP(w, r)
	})
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
