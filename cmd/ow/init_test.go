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
}
