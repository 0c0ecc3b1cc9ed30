package readme

import (
	"context"
	"encoding/json"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// moduleRoot is the repository root, two directories up.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// sdkSnippet returns the first Go code block of README.md's section "The
// SDK in short".
func sdkSnippet(t *testing.T, readme string) string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "## The SDK in short\n")
	if !ok {
		t.Fatal(`README.md has no section "## The SDK in short"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(section)
	if m == nil {
		t.Fatal("the SDK section of README.md has no Go code block")
	}
	return m[1]
}

func TestTheReadmeProgramBuildsAndRunsAsShown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the README's program")
	}
	root := moduleRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod has no module line")
	}
	module := string(m[1])
	if !strings.Contains(readme, "go get "+module+"\n") {
		t.Errorf("README.md does not say how to add the module: no line 'go get %s'", module)
	}
	code := sdkSnippet(t, readme)
	if !strings.HasPrefix(code, "package main\n") || !strings.Contains(code, "\nimport (") {
		t.Fatalf("the SDK snippet is not a complete program with its imports:\n%s", code)
	}

	// Build it as a package of this module that exists only in an
	// overlay, so that it uses this checkout's code.
	tmp := t.TempDir()
	src := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, "internal", "readme", "snippet", "main.go"): src}})
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "snippet")
	build := exec.Command("go", "build", "-overlay", overlayFile, "-o", bin, "./internal/readme/snippet")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the README's program does not build: %v\n%s\n%s", err, out, code)
	}
	if formatted, err := format.Source([]byte(code)); err != nil || string(formatted) != code {
		t.Errorf("the README's program is not gofmt-formatted (%v); gofmt gives:\n%s", err, formatted)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, bin)
	run.Dir = t.TempDir() // it creates .openworkflow/openworkflow.db here
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's program failed: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "hello, ADA <nil>" {
		t.Errorf("the README's program printed %q; its comment says \"hello, ADA\"", got)
	}
}
