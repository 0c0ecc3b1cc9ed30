package pgtest

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a loopback TCP proxy to the test server that a test can cut,
// to play a database outage without touching the shared server: Cut
// closes every connection through it and refuses new ones (each is closed
// as soon as it is accepted, as a restarting server would) until Restore.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to the test server's host and port; it stops
// when t ends.
func NewProxy(t testing.TB) *Proxy {
	t.Helper()
	if Skipped() {
		t.Skip("OPENWORKFLOW_SKIP_POSTGRES=1")
	}
	u, err := url.Parse(URL())
	if err != nil {
		t.Fatalf("parse %s: %v", URL(), err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// URL is the test server's URL with the proxy as its host.
func (p *Proxy) URL() string {
	u, _ := url.Parse(URL())
	u.Host = p.ln.Addr().String()
	return u.String()
}

// Cut closes every open connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore accepts connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = client.Close()
			continue
		}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.pipe(client)
	}
}

// pipe connects client to the server until either side closes or the
// proxy cuts them.
func (p *Proxy) pipe(client net.Conn) {
	defer p.wg.Done()
	server, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		_ = client.Close()
		_ = server.Close()
		return
	}
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	copyThenClose := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go copyThenClose(server, client)
	go copyThenClose(client, server)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// close stops accepting, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) close() {
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
}
