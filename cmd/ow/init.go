package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openworkflow-go/openworkflow/internal/scaffold"
)

func (a *app) initCommand() *cobra.Command {
	var module, replace string
	c := &cobra.Command{
		Use:   "init [dir]",
		Short: "Create a Go module with a workflow and a worker, ready for go run .",
		Long: `Create a Go module in dir (default: the working directory; created when
missing): workflow.go (a "hello" workflow), main.go (a worker for it that
starts one run), workflow_test.go (a test on a fake clock),
openworkflow.yaml (runs in an SQLite file under .openworkflow/), a
README.md and a .gitignore. It never overwrites a file: if one of them
exists, it names them and writes nothing.

The module path is the directory's name unless --module gives one.
--replace points go.mod at a local checkout of OpenWorkflow for Go
instead of a published version: for developing the SDK itself.`,
		Example: `  ow init hello && cd hello && go mod tidy && go run .
  ow init --module github.com/acme/billing billing
  ow init --replace ~/src/openworkflow demo   # against a local checkout`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if a.dir != "" && !filepath.IsAbs(dir) {
				dir = filepath.Join(a.dir, dir)
			}
			files, err := scaffold.Write(scaffold.Options{Dir: dir, Module: module, Replace: replace})
			if err != nil {
				return err
			}
			shown := dir
			if len(args) == 1 {
				shown = args[0]
			}
			fmt.Fprintf(a.stdout, "created %s in %s\n", strings.Join(files, ", "), shown)
			fmt.Fprintln(a.stdout, "next:")
			if len(args) == 1 {
				fmt.Fprintf(a.stdout, "  cd %s\n", shellWord(args[0]))
			}
			fmt.Fprintln(a.stdout, "  go mod tidy   # fetch OpenWorkflow and its dependencies")
			fmt.Fprintln(a.stdout, "  go run .      # a worker, and one run of hello")
			return nil
		},
	}
	c.Flags().StringVar(&module, "module", "", "module path of the new module (default: the directory's name)")
	c.Flags().StringVar(&replace, "replace", "", "use this local checkout of OpenWorkflow for Go (replace directive), for developing the SDK")
	return c
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
