package scaffold

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

func TestWriteRefusesToOverwriteAndWritesNothingThen(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("other files are fine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Write(Options{Dir: dir, Module: "example.com/app"})
	var exists *ExistsError
	if !errors.As(err, &exists) || !slices.Equal(exists.Files, []string{"README.md"}) {
		t.Fatalf("Write over README.md: %v; want an ExistsError naming README.md", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("a refused Write left %d entries, want the 2 that were there", len(entries))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(b) != "mine" {
		t.Errorf("README.md was changed: %q", b)
	}
}

func TestWriteNamesTheModuleAfterTheDirectoryAndRequiresTheSDK(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "billing")
	files, err := Write(Options{Dir: dir, SDKVersion: "v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s listed but not written: %v", f, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	mf, err := modfile.Parse("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mf.Module.Mod.Path != "billing" || len(mf.Require) != 1 || mf.Require[0].Mod.Path != SDKModule || mf.Require[0].Mod.Version != "v1.2.3" || len(mf.Replace) != 0 {
		t.Errorf("go.mod:\n%s", b)
	}
	main, _ := os.ReadFile(filepath.Join(dir, "main.go"))
	if !strings.Contains(string(main), "// Command billing runs") || strings.Contains(string(main), "{{") {
		t.Errorf("main.go is not filled in:\n%s", main)
	}
	// A published SDK: ow installs from the proxy at the version go.mod
	// requires, and the README says what to do before publication.
	readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	if !strings.Contains(string(readme), "\ngo install "+SDKModule+"/cmd/ow@v1.2.3\n") ||
		!strings.Contains(string(readme), "go -C path/to/openworkflow install ./cmd/ow") {
		t.Errorf("README.md does not say how to install ow:\n%s", readme)
	}
}

func TestWriteReplacesTheSDKWithACheckoutOnlyIfItIsOne(t *testing.T) {
	checkout, _ := filepath.Abs("../..")
	dir := t.TempDir()
	if _, err := Write(Options{Dir: dir, Module: "example.com/app", Replace: checkout}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	mf, _ := modfile.Parse("go.mod", b, nil)
	if len(mf.Replace) != 1 || mf.Replace[0].New.Path != checkout || mf.Require[0].Mod.Version != unpublished {
		t.Errorf("go.mod:\n%s", b)
	}
	// ow installs from the same checkout, which works unpublished.
	readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	if !strings.Contains(string(readme), "\ngo -C "+shellWord(checkout)+" install ./cmd/ow\n") || strings.Contains(string(readme), "@latest") {
		t.Errorf("README.md does not install ow from the checkout:\n%s", readme)
	}
	_, err := Write(Options{Dir: t.TempDir(), Module: "example.com/app", Replace: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "want a checkout of "+SDKModule) {
		t.Errorf("Replace with an empty directory: %v", err)
	}
}

func TestWriteRefusesAnInvalidModulePathAndSuggestsOne(t *testing.T) {
	if _, err := Write(Options{Dir: filepath.Join(t.TempDir(), "My App")}); err == nil || !strings.Contains(err.Error(), "--module example.com/my-app") {
		t.Errorf("a directory named \"My App\": %v", err)
	}
	if _, err := Write(Options{Dir: t.TempDir(), Module: "bad path"}); err == nil || !strings.Contains(err.Error(), `invalid --module "bad path"`) {
		t.Errorf("--module \"bad path\": %v", err)
	}
}
