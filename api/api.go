// Package api is the HTTP API of OpenWorkflow for Go: runs, steps, signals,
// hooks, webhooks, streams, schedules and the status of DAG runs (package
// dag) under /v1, in JSON, described by the OpenAPI 3.1 document it serves
// at /v1/openapi.json.
//
// It uses only the client side of the storage seam (an
// [openworkflow.Client] and the backend.Client behind it, with the optional
// capabilities backend.HookStore, backend.StreamStore and
// backend.ScheduleStore), so it serves any
// backend and runs beside a worker or alone. `ow server` serves it; embed
// it in a program of your own with [New]:
//
//	h, err := api.New(client, api.Options{Token: os.Getenv("OPENWORKFLOW_API_TOKEN")})
//	http.ListenAndServe("127.0.0.1:8080", h)
//
// # Conventions
//
// Lists answer {"data": [...], "cursor": "…" or null, "hasMore": bool};
// pass cursor back to get the next page, with the same filters. Errors
// answer {"code", "message", "field"?} with a stable code (see [Code]) and
// the status that goes with it: 400 bad input (naming the field), 401
// missing or wrong token, 404 unknown id or token, 405 wrong method, 409
// conflict or terminal state, 413 body too large, 501 a capability the
// backend lacks, 503 the backend unreachable. A caller's mistake never
// answers 500. Times are RFC 3339 in UTC with milliseconds. The shapes
// follow Vercel Workflow's "World" API where it has one (pagination,
// resolveData, hooks by token, webhooks answering 202).
package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// Options configure the API handler. The zero value serves without auth,
// with the default limits, and logs nothing.
type Options struct {
	// Token, when set, is the bearer token every /v1 request must carry
	// ("Authorization: Bearer <token>"), compared in constant time.
	// Servers listening beyond loopback must set it (`ow server` refuses
	// to start otherwise).
	Token string
	// PublicWebhooks lets /v1/webhooks/{token} be called without Token:
	// the hook's token, unguessable, is then the caller's credential (as a
	// third-party service sending webhooks cannot add a bearer token).
	// Default false: webhooks need Token like every /v1 route.
	PublicWebhooks bool
	// MaxBodyBytes limits a request body; a larger one answers 413.
	// Default 1 MiB ([DefaultMaxBodyBytes]).
	MaxBodyBytes int64
	// CORSOrigins are the origins allowed to call the API from a browser
	// (exact matches, or "*"); none by default, so no CORS headers are
	// sent and browsers refuse cross-origin calls.
	CORSOrigins []string
	// Logger receives one structured access log line per request (method,
	// path pattern, status, duration, bytes); nil logs nothing.
	Logger *slog.Logger
	// Done, when set, ends long-lived responses (Server-Sent Events)
	// cleanly when it is closed: a server closes it on shutdown, since
	// http.Server.Shutdown does not cancel the requests it waits for.
	Done <-chan struct{}
	// KeepAlive is the interval of comments sent on idle event streams so
	// that proxies keep them open. Default 15 s.
	KeepAlive time.Duration
	// Metrics, when set, receives each request's route pattern, method,
	// status and duration (telemetry.Metrics.ObserveRequest); package
	// metrics exports them to Prometheus. Default none.
	Metrics telemetry.Metrics
}

// DefaultMaxBodyBytes is the default limit of a request body: 1 MiB.
const DefaultMaxBodyBytes = 1 << 20

// Handler serves the API. Create it with [New]; it is an http.Handler
// for paths under /v1/ and answers 404 to others.
type Handler struct {
	c      *ow.Client
	opts   Options
	token  [sha256.Size]byte
	mux    *http.ServeMux
	routes []Route
}

// Route is one operation of the API: a method and a path pattern in
// net/http's syntax ("/v1/runs/{id}"). [Handler.Routes] lists them, for
// documentation and for tests that walk every route.
type Route struct {
	Method  string
	Pattern string
	// OperationID names the operation in the OpenAPI document.
	OperationID string
	handle      func(h *Handler, w http.ResponseWriter, r *http.Request) error
}

// routeTable is every operation of the API. The OpenAPI document
// (openapi.json) describes each; a test holds the two together.
var routeTable = []Route{
	{"GET", "/v1/openapi.json", "getOpenAPI", (*Handler).getOpenAPI},
	{"POST", "/v1/runs", "startRun", (*Handler).startRun},
	{"GET", "/v1/runs", "listRuns", (*Handler).listRuns},
	{"GET", "/v1/runs/counts", "countRuns", (*Handler).countRuns},
	{"GET", "/v1/runs/{id}", "getRun", (*Handler).getRun},
	{"POST", "/v1/runs/{id}/cancel", "cancelRun", (*Handler).cancelRun},
	{"POST", "/v1/runs/{id}/retry", "retryRun", (*Handler).retryRun},
	{"POST", "/v1/runs/{id}/fork", "forkRun", (*Handler).forkRun},
	{"GET", "/v1/runs/{id}/steps", "listSteps", (*Handler).listSteps},
	{"GET", "/v1/steps/{id}", "getStep", (*Handler).getStep},
	{"GET", "/v1/runs/{id}/history", "getHistory", (*Handler).getHistory},
	{"GET", "/v1/runs/{id}/dag", "getDAGRun", (*Handler).getDAG},
	{"GET", "/v1/runs/{id}/hooks", "listRunHooks", (*Handler).listRunHooks},
	{"GET", "/v1/runs/{id}/streams", "listStreams", (*Handler).listStreams},
	{"GET", "/v1/runs/{id}/streams/{name}", "readStream", (*Handler).readStream},
	{"POST", "/v1/signals", "sendSignal", (*Handler).sendSignal},
	{"GET", "/v1/hooks/{token}", "getHook", (*Handler).getHook},
	{"POST", "/v1/hooks/{token}", "resumeHook", (*Handler).resumeHook},
	{"*", "/v1/webhooks/{token}", "deliverWebhook", (*Handler).deliverWebhook},
	{"GET", "/v1/schedules", "listSchedules", (*Handler).listSchedules},
	{"GET", "/v1/schedules/{name}", "getSchedule", (*Handler).getSchedule},
	{"PUT", "/v1/schedules/{name}", "putSchedule", (*Handler).putSchedule},
	{"DELETE", "/v1/schedules/{name}", "deleteSchedule", (*Handler).deleteSchedule},
	{"POST", "/v1/schedules/{name}/pause", "pauseSchedule", (*Handler).pauseSchedule},
	{"POST", "/v1/schedules/{name}/resume", "resumeSchedule", (*Handler).resumeSchedule},
	{"POST", "/v1/schedules/{name}/trigger", "triggerSchedule", (*Handler).triggerSchedule},
	{"GET", "/v1/limits", "listLimits", (*Handler).listLimits},
}

// New returns the API handler over c. Its operations are those of c (and
// of c.Backend(): the client side of the seam); hooks and streams need a
// backend with those capabilities (both built-in ones have them) and
// answer 501 otherwise.
func New(c *ow.Client, opts Options) *Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 15 * time.Second
	}
	h := &Handler{c: c, opts: opts, mux: http.NewServeMux(), routes: routeTable}
	if opts.Token != "" {
		h.token = sha256.Sum256([]byte(opts.Token))
	}
	// One mux entry per path, methods dispatched here: the mux's own 405
	// and 404 answers are plain text, ours are JSON.
	byPattern := map[string][]Route{}
	var patterns []string
	for _, rt := range h.routes {
		if _, ok := byPattern[rt.Pattern]; !ok {
			patterns = append(patterns, rt.Pattern)
		}
		byPattern[rt.Pattern] = append(byPattern[rt.Pattern], rt)
	}
	for _, p := range patterns {
		rts := byPattern[p]
		h.mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { h.dispatch(w, r, rts) })
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.serve(w, r, "", func(*Handler, http.ResponseWriter, *http.Request) error {
			return errorf(http.StatusNotFound, CodeNotFound, "", "no route %s %s; GET /v1/openapi.json lists the routes", r.Method, r.URL.Path)
		})
	})
	return h
}

// Routes returns the API's operations.
func (h *Handler) Routes() []Route { return slices.Clone(h.routes) }

// ServeHTTP serves one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.corsPreflight(w, r) {
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) dispatch(w http.ResponseWriter, r *http.Request, rts []Route) {
	var allowed []string
	for _, rt := range rts {
		if rt.Method == "*" || rt.Method == r.Method || (rt.Method == "GET" && r.Method == "HEAD") {
			h.serve(w, r, rt.Pattern, rt.handle)
			return
		}
		allowed = append(allowed, rt.Method)
	}
	h.serve(w, r, rts[0].Pattern, func(*Handler, http.ResponseWriter, *http.Request) error {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "", "%s %s is not allowed; use %s", r.Method, r.URL.Path, strings.Join(allowed, " or "))
	})
}

// serve runs one handler with what every request gets: auth, the body
// limit, CORS headers, the JSON error answer and the access log.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, pattern string, handle func(*Handler, http.ResponseWriter, *http.Request) error) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	h.corsHeaders(rec, r)
	r.Body = http.MaxBytesReader(rec, r.Body, h.opts.MaxBodyBytes)
	err := h.authorize(r, pattern)
	if err == nil {
		err = h.protect(rec, r, handle)
	}
	if err != nil {
		writeError(rec, r, err)
	}
	if h.opts.Metrics != nil {
		h.opts.Metrics.ObserveRequest(pattern, r.Method, rec.status(), time.Since(start))
	}
	if h.opts.Logger != nil {
		h.opts.Logger.LogAttrs(r.Context(), slog.LevelInfo, "http request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("route", pattern),
			slog.Int("status", rec.status()), slog.Int64("bytes", rec.bytes),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000), slog.String("remote", r.RemoteAddr))
	}
}

// protect runs handle, turning a panic into a 500 answer and a log line:
// a fault of the server, never of the caller.
func (h *Handler) protect(w http.ResponseWriter, r *http.Request, handle func(*Handler, http.ResponseWriter, *http.Request) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			if h.opts.Logger != nil {
				h.opts.Logger.Error("http handler panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
			err = errorf(http.StatusInternalServerError, CodeInternal, "", "the server failed on this request (a bug: it is logged); please report it")
		}
	}()
	return handle(h, w, r)
}

// authorize checks the bearer token.
func (h *Handler) authorize(r *http.Request, pattern string) error {
	if h.opts.Token == "" || (h.opts.PublicWebhooks && pattern == "/v1/webhooks/{token}") {
		return nil
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return errorf(http.StatusUnauthorized, CodeUnauthorized, "", "this API needs a bearer token: send the header \"Authorization: Bearer <token>\"")
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
	if subtle.ConstantTimeCompare(sum[:], h.token[:]) != 1 {
		return errorf(http.StatusUnauthorized, CodeUnauthorized, "", "the bearer token is not this server's")
	}
	return nil
}

func (h *Handler) corsHeaders(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if origin == "" || len(h.opts.CORSOrigins) == 0 {
		return
	}
	if slices.Contains(h.opts.CORSOrigins, "*") {
		w.Header().Set("Access-Control-Allow-Origin", "*")
	} else if slices.Contains(h.opts.CORSOrigins, origin) {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
	}
}

// corsPreflight answers a browser's preflight OPTIONS request when CORS is
// configured.
func (h *Handler) corsPreflight(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" || len(h.opts.CORSOrigins) == 0 {
		return false
	}
	h.corsHeaders(w, r)
	w.Header().Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
	w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID, Idempotency-Key")
	w.Header().Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// done returns a context that ends with r's, or when the server shuts
// down (Options.Done).
func (h *Handler) done(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	if h.opts.Done != nil {
		go func() {
			select {
			case <-h.opts.Done:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// recorder remembers the status and size of a response, for the access
// log and for writeError to know whether headers went out.
type recorder struct {
	http.ResponseWriter
	code  int
	bytes int64
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// Unwrap lets http.ResponseController reach the connection (flushes of
// event streams).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
