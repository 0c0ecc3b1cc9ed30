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
// pass cursor back to get the next page, with the same filters. They
// leave inputs, outputs and metadata out unless asked with
// resolveData=all (single reads include them unless resolveData=none),
// and a page ends at its limit or at its byte budget
// ([Options.MaxListBytes]), whichever comes first: what one request costs
// is bounded by the budget, not by the data stored. Errors
// answer {"code", "message", "field"?} with a stable code (see [Code]) and
// the status that goes with it: 400 bad input (naming the field), 401
// missing or wrong token, 403 a token whose scope or namespace does not
// allow the operation (or, without a token, a request of another web
// site: see Security), 404 unknown id or token, 405 wrong method, 409
// conflict or terminal state, 413 body too large, 415 a JSON body not
// sent as application/json, 429 too many wrong tokens (Retry-After says
// how long to wait), 501 a capability the backend lacks, 503 the backend
// unreachable. A caller's mistake never
// answers 500. Times are RFC 3339 in UTC with milliseconds. The shapes
// follow Vercel Workflow's "World" API where it has one (pagination,
// resolveData, hooks by token, webhooks answering 202).
//
// # Security
//
// With tokens ([Options.Token], [Options.Tokens]) every route needs a
// bearer token whose scope allows it: GET routes need
// [access.ScopeRead], the others [access.ScopeWrite] ([Route.Scope]);
// wrong tokens are throttled per client address and globally
// ([access.Throttle]). Without a token the API is for its own machine: it
// answers only requests addressed to a loopback host name and refuses
// cross-origin requests that change state ([access.Guard], the same
// guard as the dashboard's), so that a web page can neither read nor
// change anything through a local server. Webhooks
// (/v1/webhooks/{token}) are exempt from that guard, the hook's token
// being their credential. docs/security.md has the threat model.
package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/access"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// Options configure the API handler. The zero value serves without auth,
// with the default limits, and logs nothing.
type Options struct {
	// Token, when set, is a bearer token of full access (scope write, any
	// namespace) that every /v1 request must carry ("Authorization:
	// Bearer <token>"), compared in constant time; at least
	// [access.MinTokenLength] bytes. Servers listening beyond loopback
	// must set it or Tokens (`ow server` refuses to start otherwise).
	Token string
	// Tokens are more bearer tokens, each with a scope (read or write)
	// and optionally one namespace (see [access.Token]); Token, if set,
	// is added to them. Invalid tokens (too short, duplicated) make every
	// request answer 500 and are logged: check them first with
	// [Options.Keyring], as server.Serve does.
	Tokens []access.Token
	// Throttle counts failed bearer tokens; share one between the API,
	// the dashboard and /metrics so that their budgets are one. Default:
	// a throttle of its own with access.ThrottleOptions' defaults.
	Throttle *access.Throttle
	// PublicWebhooks lets /v1/webhooks/{token} be called without a
	// bearer token: the hook's token, unguessable, is then the caller's
	// credential (as a third-party service sending webhooks cannot add a
	// bearer token). Default false: webhooks need a token like every /v1
	// route (of scope write). Without any token configured, webhooks are
	// always public and exempt from the guard.
	PublicWebhooks bool
	// MaxBodyBytes limits a request body; a larger one answers 413.
	// Default 1 MiB ([DefaultMaxBodyBytes]).
	MaxBodyBytes int64
	// MaxListBytes is the byte budget of one list page: the most bytes of
	// stored JSON (inputs, outputs, errors, contexts, schedule inputs,
	// stream chunks) its records carry together. The page ends before the
	// record that would pass it, with hasMore true and a cursor that
	// carries on from that record, so nothing is lost; a page holds one
	// record at least, whatever its size. Lists leave inputs and outputs
	// out unless asked for (resolveData=all), so the budget matters most
	// then. Default 4 MiB ([DefaultMaxListBytes]).
	MaxListBytes int
	// CORSOrigins are the origins allowed to call the API from a browser
	// (exact matches, or "*"); none by default, so no CORS headers are
	// sent and browsers refuse cross-origin calls. Without a token, the
	// origins listed exactly may also make cross-origin changes past the
	// guard; "*" lets browsers read but trusts no origin to change, and
	// only with a token: without one it is ignored (server.Serve refuses
	// it), since every web page could then read the runs.
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

// AllTokens returns Tokens with Token, if set, first: a write token of
// any namespace named "server.token".
func (o Options) AllTokens() []access.Token {
	if o.Token == "" {
		return slices.Clone(o.Tokens)
	}
	return append([]access.Token{{Name: "server.token", Secret: o.Token, Scope: access.ScopeWrite}}, o.Tokens...)
}

// Keyring returns the keyring of o's tokens for a server of namespace,
// or the error of the first invalid token ([access.Token.Validate]).
func (o Options) Keyring(namespace string) (*access.Keyring, error) {
	return access.NewKeyring(namespace, o.AllTokens(), o.Throttle)
}

// DefaultMaxBodyBytes is the default limit of a request body: 1 MiB.
const DefaultMaxBodyBytes = 1 << 20

// DefaultMaxListBytes is the default byte budget of one list page
// ([Options.MaxListBytes]): 4 MiB.
const DefaultMaxListBytes = 4 << 20

// Handler serves the API. Create it with [New]; it is an http.Handler
// for paths under /v1/ and answers 404 to others.
type Handler struct {
	c       *ow.Client
	opts    Options
	keys    *access.Keyring // nil: the tokens are invalid (keysErr)
	keysErr error
	guard   *access.Guard // nil with tokens
	mux     *http.ServeMux
	routes  []Route
}

// Route is one operation of the API: a method and a path pattern in
// net/http's syntax ("/v1/runs/{id}"). [Handler.Routes] lists them, for
// documentation and for tests that walk every route.
type Route struct {
	Method  string
	Pattern string
	// OperationID names the operation in the OpenAPI document.
	OperationID string
	// Scope is the scope a token needs for the operation: read for GET,
	// write for the operations that change something.
	Scope  access.Scope
	handle func(h *Handler, w http.ResponseWriter, r *http.Request) error
}

const (
	read  = access.ScopeRead
	write = access.ScopeWrite
)

// routeTable is every operation of the API. The OpenAPI document
// (openapi.json) describes each; a test holds the two together.
var routeTable = []Route{
	{"GET", "/v1/openapi.json", "getOpenAPI", read, (*Handler).getOpenAPI},
	{"POST", "/v1/runs", "startRun", write, (*Handler).startRun},
	{"GET", "/v1/runs", "listRuns", read, (*Handler).listRuns},
	{"GET", "/v1/runs/counts", "countRuns", read, (*Handler).countRuns},
	{"GET", "/v1/runs/count", "countMatchingRuns", read, (*Handler).countMatchingRuns},
	{"GET", "/v1/runs/{id}", "getRun", read, (*Handler).getRun},
	{"POST", "/v1/runs/{id}/cancel", "cancelRun", write, (*Handler).cancelRun},
	{"POST", "/v1/runs/{id}/retry", "retryRun", write, (*Handler).retryRun},
	{"POST", "/v1/runs/{id}/pause", "pauseRun", write, (*Handler).pauseRun},
	{"POST", "/v1/runs/{id}/resume", "resumeRun", write, (*Handler).resumeRun},
	{"POST", "/v1/runs/{id}/fork", "forkRun", write, (*Handler).forkRun},
	{"GET", "/v1/runs/{id}/steps", "listSteps", read, (*Handler).listSteps},
	{"GET", "/v1/steps/{id}", "getStep", read, (*Handler).getStep},
	{"GET", "/v1/runs/{id}/history", "getHistory", read, (*Handler).getHistory},
	{"GET", "/v1/runs/{id}/dag", "getDAGRun", read, (*Handler).getDAG},
	{"GET", "/v1/runs/{id}/flow", "getFlowRun", read, (*Handler).getFlow},
	{"GET", "/v1/runs/{id}/hooks", "listRunHooks", read, (*Handler).listRunHooks},
	{"GET", "/v1/runs/{id}/event-waits", "listRunEventWaits", read, (*Handler).listRunEventWaits},
	{"GET", "/v1/runs/{id}/streams", "listStreams", read, (*Handler).listStreams},
	{"GET", "/v1/runs/{id}/streams/{name}", "readStream", read, (*Handler).readStream},
	{"POST", "/v1/runs/{id}/signals/{name}", "signalRun", write, (*Handler).signalRun},
	{"POST", "/v1/signals", "sendSignal", write, (*Handler).sendSignal},
	{"POST", "/v1/runs/{id}/updates/{name}", "updateRun", write, (*Handler).updateRun},
	{"GET", "/v1/runs/{id}/updates", "listRunUpdates", read, (*Handler).listRunUpdates},
	{"GET", "/v1/runs/{id}/updates/{name}/{updateId}", "getRunUpdate", read, (*Handler).getRunUpdate},
	{"GET", "/v1/hooks/{token}", "getHook", read, (*Handler).getHook},
	{"POST", "/v1/hooks/{token}", "resumeHook", write, (*Handler).resumeHook},
	{"*", "/v1/webhooks/{token}", "deliverWebhook", write, (*Handler).deliverWebhook},
	{"GET", "/v1/schedules", "listSchedules", read, (*Handler).listSchedules},
	{"GET", "/v1/schedules/{name}", "getSchedule", read, (*Handler).getSchedule},
	{"PUT", "/v1/schedules/{name}", "putSchedule", write, (*Handler).putSchedule},
	{"DELETE", "/v1/schedules/{name}", "deleteSchedule", write, (*Handler).deleteSchedule},
	{"POST", "/v1/schedules/{name}/pause", "pauseSchedule", write, (*Handler).pauseSchedule},
	{"POST", "/v1/schedules/{name}/resume", "resumeSchedule", write, (*Handler).resumeSchedule},
	{"POST", "/v1/schedules/{name}/trigger", "triggerSchedule", write, (*Handler).triggerSchedule},
	{"GET", "/v1/limits", "listLimits", read, (*Handler).listLimits},
	{"GET", "/v1/workers", "listWorkers", read, (*Handler).listWorkers},
	{"GET", "/v1/workflows", "listWorkflows", read, (*Handler).listWorkflows},
	{"POST", "/v1/bulk-actions", "startBulkAction", write, (*Handler).startBulkAction},
	{"GET", "/v1/bulk-actions", "listBulkActions", read, (*Handler).listBulkActions},
	{"GET", "/v1/bulk-actions/{id}", "getBulkAction", read, (*Handler).getBulkAction},
	{"POST", "/v1/bulk-actions/{id}/cancel", "cancelBulkAction", write, (*Handler).cancelBulkAction},
	{"POST", "/v1/events", "publishEvents", write, (*Handler).publishEvents},
	{"GET", "/v1/events", "listEvents", read, (*Handler).listEvents},
	{"GET", "/v1/events/{id}", "getEvent", read, (*Handler).getEvent},
	{"GET", "/v1/event-triggers", "listEventTriggers", read, (*Handler).listEventTriggers},
	{"PUT", "/v1/event-triggers/{workflow}", "putEventTriggers", write, (*Handler).putEventTriggers},
	{"GET", "/v1/debounced-runs", "listDebouncedRuns", read, (*Handler).listDebouncedRuns},
	{"GET", "/v1/fair-queues", "listFairQueues", read, (*Handler).listFairQueues},
	{"POST", "/v1/batches", "enqueueBatchItem", write, (*Handler).enqueueBatchItem},
	{"GET", "/v1/batches", "listBatches", read, (*Handler).listBatches},
}

// New returns the API handler over c. Its operations are those of c (and
// of c.Backend(): the client side of the seam); hooks and streams need a
// backend with those capabilities (both built-in ones have them) and
// answer 501 otherwise.
func New(c *ow.Client, opts Options) *Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxListBytes <= 0 {
		opts.MaxListBytes = DefaultMaxListBytes
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 15 * time.Second
	}
	h := &Handler{c: c, opts: opts, mux: http.NewServeMux(), routes: routeTable}
	var namespace string
	if c != nil { // a handler only listing its routes (documentation) has no client
		namespace = c.Backend().NamespaceID()
	}
	h.keys, h.keysErr = opts.Keyring(namespace)
	if h.keysErr != nil && opts.Logger != nil {
		opts.Logger.Error("the API's tokens are invalid; every request answers 500", "err", h.keysErr)
	}
	if h.keys != nil && h.keys.Open() {
		h.guard = access.NewGuard(access.GuardOptions{LoopbackOnly: true, TrustedOrigins: opts.CORSOrigins})
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
		h.serve(w, r, "", read, func(*Handler, http.ResponseWriter, *http.Request) error {
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
			h.serve(w, r, rt.Pattern, rt.Scope, rt.handle)
			return
		}
		allowed = append(allowed, rt.Method)
	}
	h.serve(w, r, rts[0].Pattern, read, func(*Handler, http.ResponseWriter, *http.Request) error {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "", "%s %s is not allowed; use %s", r.Method, r.URL.Path, strings.Join(allowed, " or "))
	})
}

// serve runs one handler with what every request gets: auth, the body
// limit, CORS headers, the JSON error answer and the access log.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, pattern string, scope access.Scope, handle func(*Handler, http.ResponseWriter, *http.Request) error) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	h.corsHeaders(rec, r)
	r.Body = http.MaxBytesReader(rec, r.Body, h.opts.MaxBodyBytes)
	err := h.authorize(r, pattern, scope)
	if err == nil {
		r = h.routeReads(rec, r)
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

// webhookPattern is the route third parties call, with the hook's token
// as their credential.
const webhookPattern = "/v1/webhooks/{token}"

// authorize lets r through to an operation needing scope: without
// tokens, through the guard (webhooks aside); with tokens, with a bearer
// token of that scope (webhooks aside with PublicWebhooks).
func (h *Handler) authorize(r *http.Request, pattern string, scope access.Scope) error {
	if h.keysErr != nil {
		return errorf(http.StatusInternalServerError, CodeInternal, "", "the server's tokens are invalid (%s); its operator must fix them", h.keysErr)
	}
	if h.guard != nil {
		if pattern == webhookPattern {
			return nil
		}
		return h.guard.Check(r)
	}
	if h.opts.PublicWebhooks && pattern == webhookPattern {
		return nil
	}
	return h.keys.Authorize(r, scope)
}

func (h *Handler) corsHeaders(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if origin == "" || len(h.opts.CORSOrigins) == 0 {
		return
	}
	// A wildcard only with tokens: without one it would let every web page
	// read what a loopback API serves (server.CheckExposure refuses it).
	if slices.Contains(h.opts.CORSOrigins, "*") && h.keys != nil && !h.keys.Open() {
		w.Header().Set("Access-Control-Allow-Origin", "*")
	} else if slices.Contains(h.opts.CORSOrigins, origin) {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
	}
	w.Header().Set("Access-Control-Expose-Headers", ReadAfterHeader)
}

// corsPreflight answers a browser's preflight OPTIONS request when CORS is
// configured.
func (h *Handler) corsPreflight(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" || len(h.opts.CORSOrigins) == 0 {
		return false
	}
	h.corsHeaders(w, r)
	w.Header().Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
	w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID, Idempotency-Key, "+ReadAfterHeader)
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
	// beforeHeader, when set, runs once just before the headers are
	// sent (read-your-writes: readafter.go).
	beforeHeader func()
}

func (r *recorder) header() {
	if f := r.beforeHeader; f != nil {
		r.beforeHeader = nil
		f()
	}
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
		r.header()
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
		r.header()
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
