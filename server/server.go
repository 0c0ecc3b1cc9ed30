// Package server runs the HTTP surfaces of OpenWorkflow for Go in one
// process: the API (package api) under /v1/, the dashboard at / when one
// is given, a health check at /healthz, Prometheus metrics at /metrics
// when given (package metrics), and optionally a worker and a pruner of
// old finished runs — what `ow server` and `ow dev` run.
//
// It owns the process's lifecycle: [Serve] listens, and when its context
// ends (SIGTERM, say) it stops taking connections, ends event streams
// cleanly, lets in-flight requests finish within a grace period, then
// stops the worker (which releases the runs it holds).
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/access"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
)

// Options configure [Serve].
type Options struct {
	// Addr is the address to listen on, host:port. Default
	// "127.0.0.1:8080" ([DefaultAddr]). Listening beyond loopback requires
	// a token (API.Token or API.Tokens).
	Addr string
	// Listener, when set, is used instead of listening on Addr (tests,
	// socket activation).
	Listener net.Listener
	// API configures the API; its Done and Logger are set by Serve, and
	// its Throttle when nil (one throttle then counts the wrong tokens of
	// the API and /metrics; give the dashboard the same). Its tokens are
	// checked before anything starts ([CheckExposure]).
	API api.Options
	// Dashboard, when set, is served at / (every path outside /v1/,
	// /healthz and /metrics).
	Dashboard http.Handler
	// Metrics, when set, is served at GET /metrics (package metrics'
	// Exporter.Handler). With tokens it needs one of the API's bearer
	// tokens, of scope read at least: Prometheus sends it with
	// `authorization: {credentials: <token>}` in its scrape config.
	Metrics http.Handler
	// Worker, when set, is started with the server and stopped after it.
	Worker *ow.Worker
	// Pruner, when set, is started with the server and stopped after it:
	// the built-in deletion of old finished runs (retention).
	Pruner *ow.Pruner
	// Logger receives the access log and the server's events; nil
	// discards them.
	Logger *slog.Logger
	// ShutdownGrace is how long in-flight requests may take to finish
	// after the context ends. Default 10 s.
	ShutdownGrace time.Duration
	// ReadHeaderTimeout bounds the reading of a request's headers, from
	// the connection's first byte (or the end of the previous request).
	// Default 10 s ([DefaultReadHeaderTimeout]).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the reading of a whole request, headers and
	// body, from its first byte: a client sending its body slower (a byte
	// now and then, to hold the connection) is cut — the handler's read
	// fails and the connection is closed. Default 30 s
	// ([DefaultReadTimeout]). It bounds the request only: net/http lifts
	// the deadline once the body is read, so a long-lived response (an
	// event stream) outlives it; no write timeout is set, for those
	// responses.
	ReadTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request. Default 2 min ([DefaultIdleTimeout]).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (with its request line);
	// larger ones answer 431. Default 64 KiB ([DefaultMaxHeaderBytes]).
	MaxHeaderBytes int
	// Ready, when set, is called with the address listened on once the
	// server accepts connections.
	Ready func(addr string)
}

// DefaultAddr is the address `ow server` listens on by default: loopback
// only.
const DefaultAddr = "127.0.0.1:8080"

// The defaults of the connection limits of [Options].
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
)

// ErrTokenRequired: the address is beyond loopback and no token is set.
var ErrTokenRequired = errors.New("a server listening beyond loopback needs an API token")

// ErrBadToken: a configured token is too short ([access.MinTokenLength]),
// duplicated or of an unknown scope.
var ErrBadToken = errors.New("invalid API token")

// Serve serves the API (and the dashboard, metrics and worker given in
// opts) over c until ctx ends, then shuts down gracefully and returns nil
// (also when ctx ends while the worker or pruner is still starting);
// it returns an error if it cannot listen, if a token is invalid
// ([ErrBadToken]), if the address is beyond loopback without a token
// ([ErrTokenRequired]), or if the worker fails to start.
func Serve(ctx context.Context, c *ow.Client, opts Options) error {
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 10 * time.Second
	}
	opts.connectionDefaults()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.API.Throttle == nil {
		opts.API.Throttle = access.NewThrottle(access.ThrottleOptions{})
	}
	keys, kerr := opts.API.Keyring(c.Backend().NamespaceID())
	if kerr != nil {
		return fmt.Errorf("%w: %w", ErrBadToken, kerr)
	}
	ln := opts.Listener
	if ln == nil {
		if err := CheckExposure(opts.Addr, opts.API); err != nil {
			return err
		}
		var err error
		if ln, err = net.Listen("tcp", opts.Addr); err != nil {
			return fmt.Errorf("listen on %s: %w (is another server using the port? pass --addr)", opts.Addr, err)
		}
	} else if err := CheckExposure(ln.Addr().String(), opts.API); err != nil {
		return err
	}
	done := make(chan struct{})
	apiOpts := opts.API
	apiOpts.Done, apiOpts.Logger = done, opts.Logger
	mux := http.NewServeMux()
	mux.Handle("/v1/", api.New(c, apiOpts))
	mux.HandleFunc("GET /healthz", health(c, opts.Worker, keys, log))
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", requireScope(keys, access.ScopeRead, opts.Metrics))
	}
	if opts.Dashboard != nil {
		mux.Handle("/", endOnShutdown(opts.Dashboard, done))
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		ReadTimeout:       opts.ReadTimeout,
		MaxHeaderBytes:    opts.MaxHeaderBytes,
		IdleTimeout:       opts.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(func() { close(done) })

	if opts.Worker != nil {
		if err := opts.Worker.Start(ctx); err != nil {
			ln.Close()
			if ctx.Err() != nil {
				// ctx ended while the worker was starting (Ctrl-C at
				// startup): a shutdown, not a failure.
				return nil
			}
			return fmt.Errorf("start the worker: %w", err)
		}
	}
	if opts.Pruner != nil {
		if err := opts.Pruner.Start(ctx); err != nil {
			ln.Close()
			stopWorker(ctx, opts, log)
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("start the pruner: %w", err)
		}
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	log.Info("server listening", "addr", addr, "auth", !keys.Open(), "worker", opts.Worker != nil, "pruner", opts.Pruner != nil)
	if opts.Ready != nil {
		opts.Ready(addr)
	}

	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
		log.Info("server shutting down", "grace", opts.ShutdownGrace)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownGrace)
		if serr := srv.Shutdown(sctx); serr != nil {
			log.Warn("requests still in flight at the end of the grace period were cut", "err", serr)
			srv.Close()
		}
		cancel()
		err = <-served
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if opts.Pruner != nil {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownGrace)
		if perr := opts.Pruner.Stop(pctx); perr != nil {
			log.Warn("pruner stop", "err", perr)
		}
		cancel()
	}
	stopWorker(ctx, opts, log)
	return err
}

// endOnShutdown cancels the context of each request to h when done is
// closed, so that the dashboard's live views (long-lived event streams)
// end at shutdown: http.Server.Shutdown waits for requests, it does not
// cancel them.
func endOnShutdown(h http.Handler, done <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() { // owned by this request: it ends with ctx
			select {
			case <-done:
				cancel()
			case <-ctx.Done():
			}
		}()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// stopWorker stops opts.Worker, if any, within the shutdown grace.
func stopWorker(ctx context.Context, opts Options, log *slog.Logger) {
	if opts.Worker == nil {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownGrace)
	if werr := opts.Worker.Stop(wctx); werr != nil {
		log.Warn("worker stop", "err", werr)
	}
	cancel()
}

// CheckExposure checks what a server of opts would expose at addr: it
// refuses an invalid token ([ErrBadToken]: shorter than
// [access.MinTokenLength], say), and serving addr without a token unless
// addr is loopback-only ([ErrTokenRequired]), so an API able to start and
// cancel runs is never exposed by mistake, and CORS origin "*" without a
// token ([ErrTokenRequired]: every web page could read the runs). The
// error says what to do. Serve calls it; a command calls it too to fail before other work.
func CheckExposure(addr string, opts api.Options) error {
	tokens := opts.AllTokens()
	if _, err := access.NewKeyring("", tokens, opts.Throttle); err != nil {
		return fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	if len(tokens) > 0 {
		return nil
	}
	if slices.Contains(opts.CORSOrigins, "*") {
		return fmt.Errorf("%w: cors_origins \"*\" without a token would let every web page read this server's runs; list the origins exactly, or set OPENWORKFLOW_API_TOKEN", ErrTokenRequired)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w (want host:port, e.g. %s)", addr, err, DefaultAddr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %s is reachable from other machines; set OPENWORKFLOW_API_TOKEN (or server.token in openworkflow.yaml), or listen on %s", ErrTokenRequired, addr, DefaultAddr)
}

// health answers 200 {"status":"ok"} when the backend answers, 503
// otherwise: for load balancers and `ow doctor`. Why the backend did not
// answer (an error that may name the database's host, port, user and
// database) is logged, and told only to a request with a valid token
// (of any scope): anyone may reach /healthz. A server running a worker
// (worker not nil) that stopped claiming because its backend became
// unusable (ow.Worker.Err: a damaged SQLite file) answers 503 too, so a
// load balancer or supervisor stops sending it work.
func health(c *ow.Client, worker *ow.Worker, keys *access.Keyring, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		// A lookup of an id that cannot exist: one indexed read.
		_, err := c.GetRun(ctx, "wrun_healthcheck")
		what := "the backend did not answer"
		if errors.Is(err, backend.ErrRunNotFound) {
			err = nil
		}
		if err == nil && worker != nil {
			if err = worker.Err(); err != nil {
				what = "the worker stopped"
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			log.Warn("health check: "+what, "err", err)
			msg := what + "; the server's log says why"
			if _, auth := r.Header["Authorization"]; auth && !keys.Open() && keys.Authorize(r, access.ScopeRead) == nil {
				msg = what + ": " + err.Error()
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "{\"status\":\"unavailable\",\"message\":%q}\n", msg)
			return
		}
		fmt.Fprint(w, "{\"status\":\"ok\"}\n")
	}
}

// requireScope serves h only to requests whose bearer token has scope
// need (with the API's keyring: the same tokens and throttle), and
// answers 401, 403 or 429 to others; with no tokens it is h.
func requireScope(keys *access.Keyring, need access.Scope, h http.Handler) http.Handler {
	if keys.Open() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := keys.Authorize(r, need); err != nil {
			err.(*access.Denied).Write(w)
			return
		}
		h.ServeHTTP(w, r)
	})
}
