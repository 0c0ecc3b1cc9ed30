package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
)

// buildVersion is what `ow version` reports, from the binary's build
// information (runtime/debug.ReadBuildInfo).
type buildVersion struct {
	// Module is the module the binary was built from.
	Module string `json:"module"`
	// Version is its module version: a release (v1.2.3) or a
	// pseudo-version when installed with go install …@version or built
	// in a checkout by a go command that stamps one, else "devel".
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from (vcs.revision,
	// stamped by go build in a checkout), "unknown" when not stamped
	// (go run, go install …@version, -buildvcs=false).
	Commit string `json:"commit"`
	// Modified reports that the checkout had uncommitted changes
	// (vcs.modified).
	Modified bool `json:"modified"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
}

// readBuildVersion reads the running binary's build information.
func readBuildVersion() buildVersion {
	v := buildVersion{Module: "github.com/openworkflow-go/openworkflow", Version: "devel", Commit: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	} else if sdk := ow.SDKVersion(); sdk != "devel" { // a program embedding this package as a dependency
		v.Version = sdk
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one line of `ow --version`: "ow v1.2.3 (commit abc123,
// go1.26.1)".
func (v buildVersion) String() string {
	commit := v.Commit
	if v.Modified {
		commit += "+modified"
	}
	return fmt.Sprintf("ow %s (commit %s, %s)", v.Version, commit, v.GoVersion)
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of ow: module version, commit and Go version",
		Long: `Print the module version ow was built from (a release such as v1.2.3, a
pseudo-version, or "devel" for a build of a checkout), the commit (the VCS
revision go build stamps in a checkout; "unknown" for go run or a build
without it) and the Go version. With --json, one JSON object with module,
version, commit, modified and goVersion. ow --version prints the same line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := readBuildVersion()
			if a.jsonOut {
				return a.printJSON(v)
			}
			_, err := fmt.Fprintln(a.stdout, v.String())
			return err
		},
	}
}
