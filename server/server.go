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
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
)

// Options configure [Serve].
type Options struct {
	// Addr is the address to listen on, host:port. Default
	// "127.0.0.1:8080" ([DefaultAddr]). Listening beyond loopback requires
	// API.Token.
	Addr string
	// Listener, when set, is used instead of listening on Addr (tests,
	// socket activation).
	Listener net.Listener
	// API configures the API; its Done and Logger are set by Serve.
	API api.Options
	// Dashboard, when set, is served at / (every path outside /v1/,
	// /healthz and /metrics).
	Dashboard http.Handler
	// Metrics, when set, is served at GET /metrics (package metrics'
	// Exporter.Handler). With API.Token set it needs the same bearer
	// token as the API: Prometheus sends it with
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

// Serve serves the API (and the dashboard, metrics and worker given in
// opts) over c until ctx ends, then shuts down gracefully and returns nil;
// it returns an error if it cannot listen, if the address is beyond
// loopback without a token ([ErrTokenRequired]), or if the worker fails to
// start.
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
	ln := opts.Listener
	if ln == nil {
		if err := CheckExposure(opts.Addr, opts.API.Token); err != nil {
			return err
		}
		var err error
		if ln, err = net.Listen("tcp", opts.Addr); err != nil {
			return fmt.Errorf("listen on %s: %w (is another server using the port? pass --addr)", opts.Addr, err)
		}
	} else if err := CheckExposure(ln.Addr().String(), opts.API.Token); err != nil {
		return err
	}
	done := make(chan struct{})
	apiOpts := opts.API
	apiOpts.Done, apiOpts.Logger = done, opts.Logger
	mux := http.NewServeMux()
	mux.Handle("/v1/", api.New(c, apiOpts))
	mux.HandleFunc("GET /healthz", health(c))
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", requireToken(opts.API.Token, opts.Metrics))
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
			return fmt.Errorf("start the worker: %w", err)
		}
	}
	if opts.Pruner != nil {
		if err := opts.Pruner.Start(ctx); err != nil {
			ln.Close()
			stopWorker(ctx, opts, log)
			return fmt.Errorf("start the pruner: %w", err)
		}
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	log.Info("server listening", "addr", addr, "auth", opts.API.Token != "", "worker", opts.Worker != nil, "pruner", opts.Pruner != nil)
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

// CheckExposure refuses to serve addr without a token unless addr is
// loopback-only, so an API able to start and cancel runs is never exposed
// by mistake. The error wraps [ErrTokenRequired] and says what to do.
func CheckExposure(addr, token string) error {
	if token != "" {
		return nil
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
// otherwise: for load balancers and `ow doctor`.
func health(c *ow.Client) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		// A lookup of an id that cannot exist: one indexed read.
		_, err := c.GetRun(ctx, "wrun_healthcheck")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil && !errors.Is(err, backend.ErrRunNotFound) {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "{\"status\":\"unavailable\",\"message\":%q}\n", "the backend did not answer: "+err.Error())
			return
		}
		fmt.Fprint(w, "{\"status\":\"ok\"}\n")
	}
}

// requireToken serves h only to requests carrying "Authorization: Bearer
// <token>" (compared in constant time, as the API does), and answers 401
// to others; with no token it is h.
func requireToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "this server needs its API token: send the header \"Authorization: Bearer <token>\"", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
