// Package scaffold writes the Go module `ow init` makes: a workflow, a
// worker main, a test, openworkflow.yaml, a README paragraph and a
// .gitignore, from templates embedded in the binary. The module builds and
// runs with `go mod tidy && go run .`.
package scaffold

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"text/template"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// SDKModule is the module path of OpenWorkflow for Go, which the
// scaffold requires.
const SDKModule = "github.com/openworkflow-go/openworkflow"

// unpublished is the version a scaffold requires the SDK at when it is
// replaced by a local checkout: the zero pseudo-version, which the go
// command accepts for a replaced module that no proxy serves.
const unpublished = "v0.0.0-00010101000000-000000000000"

//go:embed template/*.tmpl
var templates embed.FS

// Options configure [Write].
type Options struct {
	// Dir is the directory to write into; it is created when missing and
	// may already hold other files. Default ".".
	Dir string
	// Module is the new module's path. Default: the directory's name,
	// when it is a valid module path.
	Module string
	// Replace, when set, is a local checkout of the SDK: go.mod then
	// requires the SDK at the zero pseudo-version and replaces it with
	// that directory. For developing the SDK itself (and testing the
	// scaffold) while the module is not published.
	Replace string
	// SDKVersion is the SDK version go.mod requires when Replace is
	// empty. Default: the version of the running binary when it was
	// installed from a published module (go install …@v1.2.3); otherwise
	// none, and `go mod tidy` adds the latest.
	SDKVersion string
}

// ExistsError is returned by [Write] when files it would write exist
// already; it writes nothing then.
type ExistsError struct {
	Dir   string
	Files []string
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s already has %s: ow init never overwrites files; move them away, or pick another directory", e.Dir, strings.Join(e.Files, ", "))
}

// files maps each template to the file it writes.
var files = []struct{ template, name string }{
	{"workflow.go.tmpl", "workflow.go"},
	{"main.go.tmpl", "main.go"},
	{"workflow_test.go.tmpl", "workflow_test.go"},
	{"openworkflow.yaml.tmpl", "openworkflow.yaml"},
	{"README.md.tmpl", "README.md"},
	{"gitignore.tmpl", ".gitignore"},
}

// Write writes the scaffold into opts.Dir and returns the names of the
// files written (go.mod first). It fails, writing nothing, when one of
// them exists (an [*ExistsError] naming them), when the module path is
// invalid, or when Replace is not a checkout of the SDK.
func Write(opts Options) ([]string, error) {
	dir := opts.Dir
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	mod := opts.Module
	if mod == "" {
		mod = filepath.Base(abs)
		if module.CheckImportPath(mod) != nil {
			return nil, fmt.Errorf("the directory name %q is not a module path: pass one with --module, e.g. --module example.com/%s", mod, sanitize(mod))
		}
	}
	if err := module.CheckImportPath(mod); err != nil {
		return nil, fmt.Errorf("invalid --module %q: %w", mod, err)
	}
	gomod, err := goMod(mod, opts)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{"go.mod": gomod}
	names := []string{"go.mod"}
	data := struct {
		Module, Name, InstallOW string
		FromCheckout            bool // InstallOW installs from the checkout of Replace
	}{mod, path.Base(mod), installCommand(opts), opts.Replace != ""}
	for _, f := range files {
		t, err := template.ParseFS(templates, "template/"+f.template)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		if err := t.Execute(&b, data); err != nil {
			return nil, err
		}
		out[f.name] = []byte(b.String())
		names = append(names, f.name)
	}
	var exist []string
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(abs, n)); err == nil {
			exist = append(exist, n)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if len(exist) > 0 {
		return nil, &ExistsError{Dir: dir, Files: exist}
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	for i, n := range names {
		// O_EXCL: a file created meanwhile is not overwritten either.
		f, err := os.OpenFile(filepath.Join(abs, n), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, err = f.Write(out[n])
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			return names[:i], fmt.Errorf("write %s: %w", filepath.Join(dir, n), err)
		}
	}
	return names, nil
}

// goMod is the new module's go.mod.
func goMod(mod string, opts Options) ([]byte, error) {
	f := new(modfile.File)
	if err := f.AddModuleStmt(mod); err != nil {
		return nil, err
	}
	if err := f.AddGoStmt(goVersion()); err != nil {
		return nil, err
	}
	version := opts.SDKVersion
	var checkout string
	if opts.Replace != "" {
		var err error
		if checkout, err = filepath.Abs(opts.Replace); err != nil {
			return nil, err
		}
		if err := checkSDK(checkout); err != nil {
			return nil, err
		}
		version = unpublished
	} else if version == "" {
		version = runningVersion()
	}
	if version != "" {
		if err := f.AddRequire(SDKModule, version); err != nil {
			return nil, err
		}
	}
	if checkout != "" {
		if err := f.AddReplace(SDKModule, "", checkout, ""); err != nil {
			return nil, err
		}
	}
	f.Cleanup()
	return modfile.Format(f.Syntax), nil
}

// installCommand is the command the scaffold's README gives to install
// the ow command: from the checkout go.mod is replaced with (go -C
// <checkout> install ./cmd/ow), which works before the module is
// published; else from the module proxy at the version go.mod requires
// (@latest when none).
func installCommand(opts Options) string {
	if opts.Replace != "" {
		if dir, err := filepath.Abs(opts.Replace); err == nil {
			return "go -C " + shellWord(dir) + " install ./cmd/ow"
		}
	}
	version := opts.SDKVersion
	if version == "" {
		version = runningVersion()
	}
	if version == "" {
		version = "latest"
	}
	return "go install " + SDKModule + "/cmd/ow@" + version
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// checkSDK fails unless dir holds the SDK's go.mod.
func checkSDK(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return fmt.Errorf("--replace %s: %w: want a checkout of %s", dir, err, SDKModule)
	}
	if got := modfile.ModulePath(b); got != SDKModule {
		return fmt.Errorf("--replace %s: its go.mod is module %q, want a checkout of %s", dir, got, SDKModule)
	}
	return nil
}

// goVersion is the go directive: the running toolchain's version
// ("1.26.8"), or 1.26 for a development toolchain.
func goVersion() string {
	v := strings.TrimPrefix(runtime.Version(), "go")
	if modfile.GoVersionRE.MatchString(v) {
		return v
	}
	return "1.26"
}

// runningVersion is the SDK version this binary was built from when it
// is a release (go install …@v1.2.3), else "": a build in a checkout is
// "(devel)" or a pseudo-version of a commit no proxy may serve.
func runningVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Path != SDKModule {
		return ""
	}
	v := bi.Main.Version
	if !semver.IsValid(v) || module.IsPseudoVersion(v) || semver.Build(v) != "" {
		return ""
	}
	return v
}

var notPathChar = regexp.MustCompile(`[^a-z0-9._~-]+`)

// sanitize makes a directory name into a plausible last module path
// element, for the error's example.
func sanitize(s string) string {
	s = strings.Trim(notPathChar.ReplaceAllString(strings.ToLower(s), "-"), "-.")
	if s == "" {
		return "app"
	}
	return s
}
