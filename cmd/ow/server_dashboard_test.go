package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServerServesTheDashboard: `ow server` serves the dashboard at /
// beside the API, and says where.
func TestServerServesTheDashboard(t *testing.T) {
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The server's log and its messages are written from several
	// goroutines, as to a real stderr.
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	args := append(append([]string{}, e.flags...), "server", "--addr", addr)
	go func() { done <- execute(ctx, args, &out, &errOut, e.dir) }()

	var status int
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get("http://" + addr + "/")
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			status, body = res.StatusCode, string(b)
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("ow server did not answer in 30 s: %v\nstderr:\n%s", err, errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res, err := http.Get("http://" + addr + "/v1/runs"); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("the API beside the dashboard: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("ow server exited %d\nstderr:\n%s", code, errOut.String())
	}
	if status != http.StatusOK || !strings.Contains(body, "<h1>Runs</h1>") {
		t.Errorf("GET / answered %d, not the runs page:\n%.500s", status, body)
	}
	if !strings.Contains(errOut.String(), "dashboard: http://"+addr+"/") {
		t.Errorf("ow server does not print the dashboard's URL\nstderr:\n%s", errOut.String())
	}
}
