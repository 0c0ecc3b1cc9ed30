package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// goCmd runs the go command in dir with the test's environment (its
// GOPROXY, GOMODCACHE, …), failing the test when it fails.
func goCmd(t *testing.T, ctx context.Context, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = dir, append(cleanEnv(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s in the scaffold: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestInitMakesAModuleThatBuildsTestsAndRuns: ow init in an empty
// directory, with a replace to this checkout (the module is not
// published), then go mod tidy, go build, go test, and the program run
// until it reports its completed run and stops on SIGINT with status 0.
func TestInitMakesAModuleThatBuildsTestsAndRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads modules, builds and runs the scaffold")
	}
	t.Parallel()
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	e := &env{t: t, dir: parent}
	r := e.ok("init", "--replace", checkout, "hello")
	mustContain(t, "ow init's output", r.stdout, "go.mod", "main.go", "workflow.go", "openworkflow.yaml", "README.md", "cd hello", "go run .")
	dir := filepath.Join(parent, "hello")

	// A second init refuses, names every file, and changes none.
	before, _ := os.ReadFile(filepath.Join(dir, "workflow.go"))
	again := e.run("init", "--replace", checkout, "hello")
	if again.code != 1 {
		t.Fatalf("a second ow init exited %d, want 1", again.code)
	}
	mustContain(t, "the refusal", again.stderr, "go.mod", "main.go", "workflow.go", "workflow_test.go", "openworkflow.yaml", "README.md", ".gitignore", "never overwrites")
	if after, _ := os.ReadFile(filepath.Join(dir, "workflow.go")); !bytes.Equal(before, after) {
		t.Fatal("the refused ow init changed workflow.go")
	}

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	goCmd(t, ctx, dir, []string{"GOFLAGS=-mod=mod"}, "mod", "tidy")
	goCmd(t, ctx, dir, nil, "build", "./...")
	goCmd(t, ctx, dir, nil, "vet", "./...")
	goCmd(t, ctx, dir, nil, "test", "./...")
	bin := filepath.Join(t.TempDir(), "hello")
	goCmd(t, ctx, dir, nil, "build", "-o", bin, ".")

	run := exec.Command(bin, "Ada")
	run.Dir, run.Env = dir, cleanEnv()
	stdout, err := run.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	run.Stderr = &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	lines := watchLines(stdout)
	done := regexp.MustCompile(`run wrun_\w+ completed: Hello, Ada!`)
	if !lines.waitFor(time.Minute, done.MatchString) {
		_ = run.Process.Kill()
		_ = run.Wait()
		t.Fatalf("the scaffold did not complete its run:\n%s\nstderr:\n%s", lines.text(), stderr.String())
	}
	if err := run.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		t.Fatalf("the scaffold exited with %v after SIGINT, want 0\nstderr:\n%s", err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, ".openworkflow", "openworkflow.db")); err != nil {
		t.Errorf("the scaffold did not keep its runs where openworkflow.yaml says: %v", err)
	}

	// The README's install command works before the module is published
	// (from the checkout go.mod is replaced with), and the ow it installs
	// lists the scaffold's run from the scaffold's directory.
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("Install the `ow` command with\n\n```sh\n(.+)\n```").FindSubmatch(readme)
	if m == nil {
		t.Fatalf("the scaffold's README gives no install command for ow:\n%s", readme)
	}
	install := string(m[1])
	if !strings.HasPrefix(install, "go -C ") || !strings.HasSuffix(install, " install ./cmd/ow") {
		t.Fatalf("the README's install command %q does not install from the checkout", install)
	}
	gobin := t.TempDir()
	sh := exec.CommandContext(ctx, "sh", "-c", install)
	sh.Dir, sh.Env = dir, append(cleanEnv(), "GOBIN="+gobin)
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the README's install command %q failed: %v\n%s", install, err, out)
	}
	list := exec.CommandContext(ctx, filepath.Join(gobin, "ow"), "runs", "list")
	list.Dir, list.Env = dir, cleanEnv()
	out, err := list.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello") || !strings.Contains(string(out), "completed") {
		t.Fatalf("the installed ow runs list in the scaffold: %v\n%s\nwant the completed run of hello", err, out)
	}
}
