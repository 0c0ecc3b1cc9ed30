package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/internal/demo/samples"
)

// call sends one JSON request to the dev server and decodes its answer
// into out (when not nil); it returns the status.
func call(t *testing.T, method, url string, body, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, r)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s answered %s: %v", method, url, raw, err)
		}
	}
	return resp.StatusCode
}

// waitRun polls the run until it is terminal and returns it.
func waitRun(t *testing.T, base, id string) api.Run {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var run api.Run
		if code := call(t, "GET", base+"/v1/runs/"+id, nil, &run); code != http.StatusOK {
			t.Fatalf("GET run %s: %d", id, code)
		}
		if slices.Contains([]string{"completed", "failed", "canceled"}, run.Status) {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %s after a minute", id, run.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDevRunsTheAPIMetricsAndAWorkerAndStopsOnCtrlC runs the built ow
// binary as a user would: `ow dev` in an empty directory, then runs
// started and a signal sent through the API, /metrics scraped, and
// SIGINT, after which it must exit 0.
func TestDevRunsTheAPIMetricsAndAWorkerAndStopsOnCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ow binary")
	}
	t.Parallel()
	bin := buildOW(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "dev", "--addr", "127.0.0.1:0")
	cmd.Dir, cmd.Env = dir, cleanEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	lines := watchLines(stdout)
	urlRE := regexp.MustCompile(`API +(http://127\.0\.0\.1:\d+)/v1`)
	banner := func(s string) bool { return urlRE.MatchString(s) && strings.Contains(s, "Ctrl-C stops it.") }
	if !lines.waitFor(time.Minute, banner) {
		t.Fatalf("ow dev printed no API URL:\n%s\nstderr:\n%s", lines.text(), stderr.String())
	}
	base := urlRE.FindStringSubmatch(lines.text())[1]
	mustContain(t, "the banner", lines.text(), base+"/metrics", samples.HelloName, samples.OrderName, "goindex", "openflow")

	// Ready is printed once the server accepts connections: /healthz
	// answers at once.
	var health struct{ Status string }
	if code := call(t, "GET", base+"/healthz", nil, &health); code != http.StatusOK || health.Status != "ok" {
		t.Fatalf("/healthz: %d %+v", code, health)
	}

	var hello, order api.Run
	if code := call(t, "POST", base+"/v1/runs", map[string]any{"workflowName": samples.HelloName, "input": map[string]string{"name": "Ada"}}, &hello); code != http.StatusCreated {
		t.Fatalf("start hello: %d", code)
	}
	in := map[string]any{"orderId": "ord-9", "coolOffSeconds": 0, "deliveryWaitSeconds": 60}
	if code := call(t, "POST", base+"/v1/runs", map[string]any{"workflowName": samples.OrderName, "input": in}, &order); code != http.StatusCreated {
		t.Fatalf("start order: %d", code)
	}
	if got := waitRun(t, base, hello.ID); got.Status != "completed" || string(got.Output) != `{"greeting":"Hello, Ada!"}` {
		t.Fatalf("hello ended %s with %s", got.Status, got.Output)
	}
	// The order retries its charge (1 s), ships, then waits for its
	// signal; signals are not buffered, so send until it is received.
	for deadline := time.Now().Add(time.Minute); ; {
		var res api.SignalResult
		call(t, "POST", base+"/v1/signals", map[string]any{"signal": samples.DeliveredSignal("ord-9"), "data": "at the door"}, &res)
		if slices.Contains(res.RunIDs, order.ID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the order never waited for its delivery signal")
		}
		time.Sleep(100 * time.Millisecond)
	}
	got := waitRun(t, base, order.ID)
	var out samples.OrderOutput
	if err := json.Unmarshal(got.Output, &out); got.Status != "completed" || err != nil || !out.Delivered || out.Tracking != "trk_ord-9" {
		t.Fatalf("order ended %s with %s", got.Status, got.Output)
	}

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	completed := -1.0
	for _, m := range fams["openworkflow_runs"].GetMetric() {
		if m.GetLabel()[0].GetValue() == "completed" {
			completed = m.GetGauge().GetValue()
		}
	}
	if completed != 3 { // hello, order and its child ship
		t.Errorf("openworkflow_runs{status=completed} = %v, want 3", completed)
	}

	if _, err := os.Stat(filepath.Join(dir, ".openworkflow", "openworkflow.db")); err != nil {
		t.Errorf("ow dev did not use the default SQLite file: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("ow dev exited with %v after SIGINT, want 0\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ow dev did not exit within 30 s of SIGINT")
	}
	<-lines.done
	mustContain(t, "the output", lines.text(), "ow dev stopped")
}
