package server_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/server"
)

// serve runs server.Serve with opts on a loopback port until the test
// ends, and returns its address.
func serve(t *testing.T, c *ow.Client, opts server.Options) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	served := make(chan error, 1)
	opts.Addr, opts.Ready = "127.0.0.1:0", func(a string) { addrc <- a }
	go func() { served <- server.Serve(ctx, c, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	select {
	case addr := <-addrc:
		return addr
	case err := <-served:
		t.Fatalf("Serve: %v", err)
		return ""
	}
}

// TestSlowClientsAreCut: a client that sends its headers, or its body, a
// byte at a time — holding a connection and a handler for as long as it
// likes — is cut once the timeout of what it sends has passed (issue 19:
// a slow body stayed open 180 s), and an idle keep-alive connection once
// IdleTimeout has.
func TestSlowClientsAreCut(t *testing.T) {
	const timeout = 200 * time.Millisecond
	for _, c := range []struct {
		name  string
		opts  server.Options
		first string // sent at once, before the trickle
		// answered: the server answers before it cuts (a complete request,
		// then the idle connection).
		answered bool
	}{
		{"a slow body, after ReadTimeout", server.Options{ReadTimeout: timeout},
			"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", false},
		{"slow headers, after ReadHeaderTimeout", server.Options{ReadHeaderTimeout: timeout},
			"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", false},
		{"an idle connection, after IdleTimeout", server.Options{IdleTimeout: timeout},
			"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := openSQLite(t)
			addr := serve(t, ow.NewClient(b), c.opts)
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, c.first); err != nil {
				t.Fatal(err)
			}
			if !c.answered {
				// The trickle: a byte every 20 ms, until the server cuts the
				// connection or the test ends.
				stop := make(chan struct{})
				trickled := make(chan error, 1)
				go func() { // owned by this test: stop ends it, trickled says it has
					tick := time.NewTicker(20 * time.Millisecond)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							trickled <- nil
							return
						case <-tick.C:
							if _, err := io.WriteString(conn, "a"); err != nil {
								trickled <- err
								return
							}
						}
					}
				}()
				defer func() { close(stop); <-trickled }()
			}
			// The server closes the connection: the read ends with EOF or a
			// reset, long before this safety deadline.
			if err := conn.SetReadDeadline(time.Now().Add(15 * time.Second)); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(conn)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the server kept the connection open for 15 s (timeout %v); read %q", timeout, got)
			}
			switch {
			case c.answered && !strings.HasPrefix(string(got), "HTTP/1.1 200"):
				t.Fatalf("the request before the idle time was answered %q, want 200", got)
			case !c.answered && len(got) > 0 && !strings.HasPrefix(string(got), "HTTP/1.1 400"):
				t.Fatalf("the cut request was answered %q, want a 400 or nothing", got)
			}
		})
	}
}

// TestEventStreamOutlivesTheTimeouts: the connection timeouts bound
// requests, not responses: an event stream stays open, sending its
// keep-alives, long after every timeout of the server has passed.
func TestEventStreamOutlivesTheTimeouts(t *testing.T) {
	b := openSQLite(t)
	c := ow.NewClient(b)
	const timeout = 50 * time.Millisecond
	opts := server.Options{ReadHeaderTimeout: timeout, ReadTimeout: timeout, IdleTimeout: timeout}
	opts.API.KeepAlive = 10 * time.Millisecond
	addr := serve(t, c, opts)
	h, err := c.StartByName(t.Context(), "nobody-runs-this", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+"/v1/runs/"+h.ID+"/streams/out", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET the stream as events: %s", res.Status)
	}
	// 40 keep-alives at least 10 ms apart: 400 ms or more, eight times
	// every timeout.
	start := time.Now()
	lines := bufio.NewScanner(res.Body)
	for n := 0; n < 40; {
		if !lines.Scan() {
			t.Fatalf("the event stream ended after %d keep-alives (%v): %v", n, time.Since(start), lines.Err())
		}
		if lines.Text() == ": keep-alive" {
			n++
		}
	}
}
