package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/internal/demo/goindex"
)

// buildOW builds the ow binary into a temporary directory.
func buildOW(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ow")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// cleanEnv is the test process's environment without OPENWORKFLOW_*
// variables, so the subprocess uses SQLite in its working directory.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENWORKFLOW_") {
			env = append(env, kv)
		}
	}
	return env
}

// lineWatcher collects a subprocess's output lines and lets the test wait
// for one matching a condition.
type lineWatcher struct {
	mu    sync.Mutex
	lines []string
	added chan struct{}
	done  chan struct{}
}

func watchLines(r io.Reader) *lineWatcher {
	w := &lineWatcher{added: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.mu.Unlock()
			select {
			case w.added <- struct{}{}:
			default:
			}
		}
	}()
	return w
}

func (w *lineWatcher) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

// waitFor waits until the output satisfies cond, the output ends, or the
// deadline passes; it reports whether cond held.
func (w *lineWatcher) waitFor(deadline time.Duration, cond func(string) bool) bool {
	timeout := time.After(deadline)
	for {
		if cond(w.text()) {
			return true
		}
		select {
		case <-w.added:
		case <-w.done:
			return cond(w.text())
		case <-timeout:
			return false
		}
	}
}

// killWhileIndexing runs ow with args in dir, kills it with SIGKILL once
// it has indexed three files, and returns the id of the run it said it
// started and its output.
func killWhileIndexing(t *testing.T, bin, dir string, args []string) (string, string) {
	t.Helper()
	first := exec.Command(bin, args...)
	first.Dir, first.Env = dir, cleanEnv()
	stdout, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	first.Stderr = first.Stdout
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	lines := watchLines(stdout)
	indexed := func(s string) bool { return strings.Count(s, "  indexed ") >= 3 }
	if !lines.waitFor(time.Minute, indexed) {
		_ = first.Process.Kill()
		_ = first.Wait()
		t.Fatalf("no files indexed within a minute:\n%s", lines.text())
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	<-lines.done
	out := lines.text()
	if strings.Contains(out, "done in") {
		t.Fatalf("the process finished before it was killed:\n%s", out)
	}
	m := regexp.MustCompile(`started run (wrun_\w+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the process did not say which run it started:\n%s", out)
	}
	return m[1], out
}

// demoJSON runs ow with args and --json in dir to completion and returns
// its result and its progress (stderr).
func demoJSON(t *testing.T, bin, dir string, args []string) (goindex.DemoResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--json")...)
	cmd.Dir, cmd.Env = dir, cleanEnv()
	var progress strings.Builder
	cmd.Stderr = &progress
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ow %s: %v\nstderr:\n%s", strings.Join(args, " "), err, progress.String())
	}
	var res goindex.DemoResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("ow %s output: %v\n%s", strings.Join(args, " "), err, out)
	}
	return res, progress.String()
}

func TestDemoResumesAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ow binary")
	}
	if _, err := goindex.SourceRoot(); err != nil {
		t.Skip(err)
	}
	t.Parallel()
	bin := buildOW(t)
	// Three batches with one-second durable sleeps between them: the
	// first process is killed while the first batch is being indexed.
	args := []string{"demo", "--packages", "strings,bufio,encoding/json,net/url,container/list", "--sleep", "1s"}

	// The reference: the same demo, uninterrupted, in its own directory.
	want, _ := demoJSON(t, bin, t.TempDir(), append(args, "--sleep", "0"))

	dir := t.TempDir()
	runID, firstOut := killWhileIndexing(t, bin, dir, args)

	got, progress := demoJSON(t, bin, dir, args)
	if !strings.Contains(progress, "resuming run "+runID+" started at ") {
		t.Errorf("the second process does not say it resumes %s:\n%s", runID, progress)
	}
	if got.RunID != runID || !got.Resumed {
		t.Errorf("second demo finished run %s (resumed %v), want %s", got.RunID, got.Resumed, runID)
	}
	if got.Report.Totals != want.Report.Totals {
		t.Errorf("resumed totals %+v, uninterrupted %+v", got.Report.Totals, want.Report.Totals)
	}
	// Files indexed before the kill are not indexed again, except the last
	// file of a package, whose step may have printed without recording its
	// result before the kill (steps are at-least-once).
	lastOfPackage := map[string]string{}
	for _, l := range strings.Split(firstOut, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "indexed" {
			lastOfPackage[filepath.Dir(f[1])] = l
		}
	}
	for _, l := range strings.Split(firstOut, "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && f[0] == "indexed" && lastOfPackage[filepath.Dir(f[1])] != l && strings.Contains(progress, l) {
			t.Errorf("indexed again after resuming: %q", l)
		}
	}
}

func TestAKilledFreshDemoIsResumedByTheNextDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ow binary")
	}
	if _, err := goindex.SourceRoot(); err != nil {
		t.Skip(err)
	}
	t.Parallel()
	bin := buildOW(t)
	args := []string{"demo", "--packages", "strings,bufio,container/list", "--sleep", "1s"}
	dir := t.TempDir()
	// A completed run, then a fresh one killed while indexing.
	old, _ := demoJSON(t, bin, dir, append(args, "--sleep", "0"))
	freshID, _ := killWhileIndexing(t, bin, dir, append(args, "--fresh"))
	if freshID == old.RunID {
		t.Fatalf("--fresh reused run %s", freshID)
	}

	got, progress := demoJSON(t, bin, dir, args)
	if got.RunID != freshID || !got.Resumed || !strings.Contains(progress, "resuming run "+freshID) {
		t.Fatalf("the next demo finished run %s (resumed %v); want the killed fresh run %s, not the older %s\n%s",
			got.RunID, got.Resumed, freshID, old.RunID, progress)
	}
	if got.Report.Totals != old.Report.Totals {
		t.Errorf("resumed totals %+v, first run's %+v", got.Report.Totals, old.Report.Totals)
	}
}
