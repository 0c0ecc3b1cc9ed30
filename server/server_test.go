package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/dashboard"
	"github.com/openworkflow-go/openworkflow/server"
)

func TestCheckExposure(t *testing.T) {
	for _, c := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8080", "", true},
		{"localhost:8080", "", true},
		{"[::1]:8080", "", true},
		{"127.0.0.2:80", "", true},
		{"0.0.0.0:8080", "", false},
		{":8080", "", false},
		{"[::]:8080", "", false},
		{"192.168.1.5:8080", "", false},
		{"example.com:8080", "", false},
		{"0.0.0.0:8080", "a-token-of-sixteen-bytes-or-more", true},
		{"no-port", "", false},
	} {
		err := server.CheckExposure(c.addr, api.Options{Token: c.token})
		if (err == nil) != c.ok {
			t.Errorf("CheckExposure(%q, %q) = %v, want ok %v", c.addr, c.token, err, c.ok)
		}
		if err != nil && c.addr != "no-port" && !errors.Is(err, server.ErrTokenRequired) {
			t.Errorf("CheckExposure(%q): %v does not wrap ErrTokenRequired", c.addr, err)
		}
	}
}

// TestServeRefusesAnExposedListenerWithoutToken: Serve checks a listener
// it is given too.
func TestServeRefusesAnExposedListenerWithoutToken(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skip("cannot listen on all interfaces:", err)
	}
	defer ln.Close()
	b := openSQLite(t)
	err = server.Serve(context.Background(), ow.NewClient(b), server.Options{Listener: ln})
	if !errors.Is(err, server.ErrTokenRequired) {
		t.Fatalf("Serve on %s without a token: %v", ln.Addr(), err)
	}
}

func openSQLite(t *testing.T) *sqlite.Backend {
	t.Helper()
	b, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ow.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestGracefulShutdown: when the context ends, a request in flight
// finishes, an event stream ends cleanly (its response is complete, not
// cut), the health check answered while up, and Serve returns nil.
func TestGracefulShutdown(t *testing.T) {
	b := openSQLite(t)
	c := ow.NewClient(b)
	// A slow dashboard handler: the request in flight at shutdown.
	started := make(chan struct{})
	release := make(chan struct{})
	dash := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		io.WriteString(w, "slow page")
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(ctx, c, server.Options{Addr: "127.0.0.1:0", Dashboard: dash, Ready: func(a string) { addrc <- a },
			API: api.Options{KeepAlive: time.Hour}})
	}()
	base := "http://" + <-addrc

	res, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"ok"`) {
		t.Fatalf("healthz: %d %s", res.StatusCode, body)
	}

	// An event stream of a run that will not write: it stays open.
	h, err := c.StartByName(ctx, "nobody-runs-this", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", base+"/v1/runs/"+h.ID+"/streams/out", nil)
	req.Header.Set("Accept", "text/event-stream")
	sse, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Body.Close()
	first := make([]byte, 64)
	n, err := sse.Body.Read(first)
	if err != nil {
		t.Fatal(err)
	}
	first = first[:n]

	slow := make(chan string, 1)
	go func() {
		res, err := http.Get(base + "/page")
		if err != nil {
			slow <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		slow <- string(b)
	}()
	<-started
	cancel() // SIGTERM
	// The event stream ends cleanly: EOF, not a reset.
	rest, err := io.ReadAll(sse.Body)
	if err != nil {
		t.Fatalf("the event stream was cut at shutdown: %v (read %q)", err, rest)
	}
	if strings.Contains(string(first)+string(rest), "event: ") {
		t.Fatalf("the event stream of a run that writes nothing said %q before shutdown", string(first)+string(rest))
	}
	close(release)
	if got := <-slow; got != "slow page" {
		t.Fatalf("the request in flight at shutdown got %q", got)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
	// New connections are refused now.
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("the server still answers after shutdown")
	}
}

// TestDashboardLiveViewsEndAtShutdown: a live view of the dashboard (an
// event stream that lasts while its run does) ends cleanly when the
// server shuts down, at once rather than after the grace period.
func TestDashboardLiveViewsEndAtShutdown(t *testing.T) {
	b := openSQLite(t)
	c := ow.NewClient(b)
	h, err := c.StartByName(context.Background(), "nobody-runs-this", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(ctx, c, server.Options{Addr: "127.0.0.1:0", Dashboard: dashboard.New(c, dashboard.Options{}),
			Ready: func(a string) { addrc <- a }, ShutdownGrace: 20 * time.Second})
	}()
	base := "http://" + <-addrc
	res, err := http.Get(base + "/runs/" + h.ID + "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	first := make([]byte, 256)
	if _, err := res.Body.Read(first); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cancel() // SIGTERM
	if rest, err := io.ReadAll(res.Body); err != nil {
		t.Fatalf("the live view was cut at shutdown: %v (read %d bytes)", err, len(rest))
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve returned %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown waited %v for the live view; it should end it at once", took)
	}
}

// TestServeRunsThePruner: the pruner given in Options prunes while the
// server serves, and is stopped with it.
func TestServeRunsThePruner(t *testing.T) {
	ctx := context.Background()
	past := time.Now().Add(-48 * time.Hour)
	dir := t.TempDir()
	old, err := sqlite.Open(ctx, filepath.Join(dir, "ow.db"), sqlite.Options{Now: func() time.Time { return past }})
	if err != nil {
		t.Fatal(err)
	}
	run, err := old.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
	if err == nil {
		_, err = old.CancelWorkflowRun(ctx, run.ID)
	}
	old.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, err := sqlite.Open(ctx, filepath.Join(dir, "ow.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := ow.NewClient(b)
	sctx, stop := context.WithCancel(ctx)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := ow.NewPruner(c, ow.PrunerOptions{Retention: ow.Retention{Default: time.Hour}})
	served := make(chan error, 1)
	go func() { served <- server.Serve(sctx, c, server.Options{Listener: ln, Pruner: p}) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.GetRun(ctx, run.ID); errors.Is(err, backend.ErrRunNotFound) {
			break
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatal("the run canceled two days ago was not pruned within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if rep, err := p.Last(); err != nil || rep.Deleted.Canceled != 1 {
		t.Fatalf("the pruner's last prune = %+v, %v; want the canceled run deleted", rep, err)
	}
}

// A context that ends while the worker starts is a shutdown (Ctrl-C at
// startup), not a failure: Serve returns nil, as its doc says.
func TestServeEndedDuringWorkerStartReturnsNil(t *testing.T) {
	b := openSQLite(t)
	c := ow.NewClient(b)
	w := ow.NewWorker(b, ow.WorkerOptions{})
	if err := w.Register(ow.Define(ow.Spec{Name: "noop"}, func(ctx ow.Context, in struct{}) (struct{}, error) { return in, nil })); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := server.Serve(ctx, c, server.Options{Listener: ln, Worker: w}); err != nil {
		t.Fatalf("Serve with a context ended at startup: %v, want nil", err)
	}
}
