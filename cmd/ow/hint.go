package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openworkflow-go/openworkflow/config"
)

// nextPageCommand returns the command line that repeats cmd with every
// flag the user set (filters, --limit, the database and namespace), minus
// --cursor and --json, so that appending "--cursor <next>" lists the next
// page of the same query. Values are quoted for a POSIX shell; a password
// in --postgres-url is masked (as by [config.RedactURL]) so that the hint
// never prints a secret.
func nextPageCommand(cmd *cobra.Command, inv string) string {
	path := cmd.CommandPath()
	if inv != "" {
		path = inv + strings.TrimPrefix(path, "ow")
	}
	parts := []string{path}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "cursor", "json", "help":
			return
		}
		if f.Value.Type() == "bool" {
			if f.Value.String() == "true" {
				parts = append(parts, "--"+f.Name)
			} else {
				parts = append(parts, "--"+f.Name+"=false")
			}
			return
		}
		v := f.Value.String()
		if f.Name == "postgres-url" || f.Name == "read-replica-url" {
			v = config.RedactURL(v)
		}
		parts = append(parts, "--"+f.Name, shellQuote(v))
	})
	return strings.Join(parts, " ")
}

// shellSafe matches the words a POSIX shell reads literally.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell: unchanged when it needs no
// quoting, else in single quotes (a pair of them for the empty string).
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sdkModule is the module path of OpenWorkflow for Go, whose cmd/ow this
// is.
const sdkModule = "github.com/openworkflow-go/openworkflow"

// invocationFor is how the user runs this command, for the hints it
// prints ("see 'ow runs get …'"), so that they can be pasted as they are.
// exe is the running executable and cwd the working directory. A binary
// `go run` built lives in the go command's temporary build directory
// (…/go-build…/b001/exe/ow): the hints then say `go run ./cmd/ow` (the
// path from cwd to the checkout of the SDK found upward, as the README
// runs it), or `go run github.com/openworkflow-go/openworkflow/cmd/ow`
// outside a checkout. Any other binary is installed: "ow".
func invocationFor(exe, cwd string) string {
	if filepath.Base(filepath.Dir(exe)) != "exe" || !strings.Contains(exe, "go-build") {
		return "ow"
	}
	for dir := cwd; ; {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if modfile.ModulePath(b) == sdkModule {
				rel, err := filepath.Rel(cwd, filepath.Join(dir, "cmd", "ow"))
				if err == nil {
					rel = filepath.ToSlash(rel)
					if rel != "." && !strings.HasPrefix(rel, "../") {
						rel = "./" + rel
					}
					return "go run " + shellQuote(rel)
				}
			}
			break // another module: cmd/ow is not a directory of it
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "go run " + sdkModule + "/cmd/ow"
}

// invocation is invocationFor the running process.
func invocation() string {
	exe, err := os.Executable()
	if err != nil {
		return "ow"
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "ow"
	}
	return invocationFor(exe, cwd)
}

// hint rewrites the command lines quoted in a message ('ow runs get …')
// to the way this process was run (a.inv, see invocationFor): under
// `go run ./cmd/ow`, 'go run ./cmd/ow runs get …'.
func (a *app) hint(msg string) string {
	if a.inv == "" || a.inv == "ow" {
		return msg
	}
	return strings.ReplaceAll(msg, "'ow ", "'"+a.inv+" ")
}
