package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/access"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/server"
)

// downBackend is a backend whose database does not answer, with the
// error a PostgreSQL driver gives then: it names the user, database,
// host and port.
type downBackend struct{ backend.Backend }

var errDown = errors.New("failed to connect to `user=billing_admin database=billing`: 10.1.2.3:6432 (db.internal): dial error: connection refused")

func (downBackend) GetWorkflowRun(context.Context, string) (*backend.WorkflowRun, error) {
	return nil, errDown
}

func get(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestHealthCheckTellsTheDatabaseOnlyToTheLogAndTokenHolders: /healthz
// answers anyone, so when the backend is down it says so without naming
// the database's user, name, host or port; the log has them, and so does
// the answer to a request with a valid token.
func TestHealthCheckTellsTheDatabaseOnlyToTheLogAndTokenHolders(t *testing.T) {
	const token = "a-token-of-the-health-test"
	secrets := []string{"billing_admin", "billing", "10.1.2.3", "6432", "db.internal"}
	for _, c := range []struct {
		name       string
		tokens     []access.Token
		header     []string
		wantDetail bool
	}{
		{"without a token configured, nobody is told the detail", nil, nil, false},
		{"with a token configured, an anonymous request is not told the detail", []access.Token{{Name: "ops", Secret: token, Scope: access.ScopeRead}}, nil, false},
		{"with a token configured, a wrong token is not told the detail", []access.Token{{Name: "ops", Secret: token, Scope: access.ScopeRead}}, []string{"Authorization", "Bearer not-the-token-at-all"}, false},
		{"with a token configured, a request carrying it is told the detail", []access.Token{{Name: "ops", Secret: token, Scope: access.ScopeRead}}, []string{"Authorization", "Bearer " + token}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			b := downBackend{openSQLite(t)}
			base := "http://" + serve(t, ow.NewClient(b), server.Options{API: api.Options{Tokens: c.tokens}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			status, body := get(t, base+"/healthz", c.header...)
			if status != http.StatusServiceUnavailable || !strings.Contains(body, `"unavailable"`) {
				t.Fatalf("healthz answered %d %s, want 503 unavailable", status, body)
			}
			for _, s := range secrets {
				if got := strings.Contains(body, s); got != c.wantDetail {
					t.Errorf("the answer names %q: %v, want %v: %s", s, got, c.wantDetail, body)
				}
			}
			if !strings.Contains(logs.String(), "billing_admin") {
				t.Errorf("the log does not have the detail: %s", logs.String())
			}
		})
	}
}

// TestServeRefusesAWildcardOriginWithoutAToken: cors_origins "*" on a
// server without a token would let every web page read its runs through
// CORS, past the guard that keeps other sites out; it is refused at start,
// and taken once a token is set.
func TestServeRefusesAWildcardOriginWithoutAToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = server.Serve(context.Background(), ow.NewClient(openSQLite(t)), server.Options{Listener: ln, API: api.Options{CORSOrigins: []string{"*"}}})
	if !errors.Is(err, server.ErrTokenRequired) || !strings.Contains(err.Error(), "cors_origins") {
		t.Fatalf("Serve = %v, want ErrTokenRequired naming cors_origins", err)
	}
	token := strings.Repeat("w", access.MinTokenLength)
	base := "http://" + serve(t, ow.NewClient(openSQLite(t)), server.Options{API: api.Options{CORSOrigins: []string{"*"}, Token: token}})
	if status, _ := get(t, base+"/v1/runs", "Authorization", "Bearer "+token); status != http.StatusOK {
		t.Errorf("with a token, answered %d", status)
	}
}

// unusableClaims is a backend whose claims fail as a damaged SQLite
// file's do: with an error wrapping backend.ErrUnusable.
type unusableClaims struct{ backend.Backend }

func (unusableClaims) ClaimWorkflowRuns(context.Context, backend.ClaimWorkflowRunsParams) ([]*backend.WorkflowRun, error) {
	return nil, fmt.Errorf("the file /data/ow.db is damaged: %w", backend.ErrUnusable)
}

// TestHealthCheckFailsOnceTheWorkerStopped: `ow server --worker` keeps
// serving after its worker stopped on an unusable backend, so /healthz
// says so (503) and a supervisor can act; the detail is in the log.
func TestHealthCheckFailsOnceTheWorkerStopped(t *testing.T) {
	b := unusableClaims{openSQLite(t)}
	w := ow.NewWorker(b, ow.WorkerOptions{})
	var logs bytes.Buffer
	base := "http://" + serve(t, ow.NewClient(b), server.Options{Worker: w, Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil))})
	deadline := time.Now().Add(time.Minute)
	for w.Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the worker did not stop on its unusable backend within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	status, body := get(t, base+"/healthz")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "the worker stopped") || strings.Contains(body, "/data/ow.db") {
		t.Errorf("healthz answered %d %s, want 503 saying the worker stopped, without the detail", status, body)
	}
}

// syncWriter serializes writes to w: the server logs from several
// goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestServeRefusesAShortToken: a token shorter than access.MinTokenLength
// is refused before the server listens, saying how to make a good one;
// server.token and scoped tokens alike.
func TestServeRefusesAShortToken(t *testing.T) {
	for _, c := range []struct {
		name string
		opts api.Options
	}{
		{"a one-character server.token", api.Options{Token: "x"}},
		{"a fifteen-byte server.token", api.Options{Token: strings.Repeat("x", access.MinTokenLength-1)}},
		{"a short read token", api.Options{Tokens: []access.Token{{Name: "wall", Secret: "short", Scope: access.ScopeRead}}}},
		{"two tokens with the same secret", api.Options{Token: "the-same-secret-twice", Tokens: []access.Token{{Name: "wall", Secret: "the-same-secret-twice"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			err = server.Serve(context.Background(), ow.NewClient(openSQLite(t)), server.Options{Listener: ln, API: c.opts})
			if !errors.Is(err, server.ErrBadToken) {
				t.Fatalf("Serve = %v, want ErrBadToken", err)
			}
			if c.name != "two tokens with the same secret" && !strings.Contains(err.Error(), "openssl rand -hex 32") {
				t.Errorf("the error %q does not say how to make a token", err)
			}
		})
	}
	t.Run("a token of the minimum length is taken", func(t *testing.T) {
		base := "http://" + serve(t, ow.NewClient(openSQLite(t)), server.Options{API: api.Options{Token: strings.Repeat("x", access.MinTokenLength)}})
		if status, _ := get(t, base+"/v1/runs", "Authorization", "Bearer "+strings.Repeat("x", access.MinTokenLength)); status != http.StatusOK {
			t.Errorf("answered %d", status)
		}
	})
}

// TestMetricsTakeAReadToken: a scraper's token needs scope read only;
// wrong tokens are refused and, past the throttle's budget, answered 429
// with Retry-After.
func TestMetricsTakeAReadToken(t *testing.T) {
	const read, write = "a-read-token-for-scrapers", "a-write-token-for-operators"
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "openworkflow_up 1\n") })
	base := "http://" + serve(t, ow.NewClient(openSQLite(t)), server.Options{Metrics: metrics, API: api.Options{
		Token:    write,
		Tokens:   []access.Token{{Name: "prometheus", Secret: read, Scope: access.ScopeRead}},
		Throttle: access.NewThrottle(access.ThrottleOptions{ClientBurst: 3, ClientRate: 0.001}),
	}})
	for _, c := range []struct {
		name  string
		token string
		want  int
	}{
		{"a read token scrapes", read, http.StatusOK},
		{"the full-access token scrapes", write, http.StatusOK},
		{"no token is refused", "", http.StatusUnauthorized},
		{"a wrong token is refused", "wrong-wrong-wrong-wrong", http.StatusUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h []string
			if c.token != "" {
				h = []string{"Authorization", "Bearer " + c.token}
			}
			if status, body := get(t, base+"/metrics", h...); status != c.want {
				t.Errorf("answered %d, want %d: %s", status, c.want, body)
			}
		})
	}
	t.Run("past the budget of wrong tokens the answer is 429 with Retry-After, even to the right token", func(t *testing.T) {
		for range 3 {
			get(t, base+"/metrics", "Authorization", "Bearer wrong-wrong-wrong-wrong")
		}
		req, _ := http.NewRequest("GET", base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+read)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
			t.Errorf("answered %d, Retry-After %q; want 429 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
		}
	})
}
