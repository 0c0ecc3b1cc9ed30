package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/config"
)

// app holds what every command shares: the output streams, the global
// flags and the directory the configuration is searched from.
type app struct {
	stdout, stderr io.Writer
	dir            string // "" = working directory

	configFile  string
	postgresURL string
	sqlitePath  string
	namespace   string
	schema      string
	jsonOut     bool
	concurrency int // only on commands that run a worker
}

// execute runs the ow command line with args and returns the exit status:
// 0 on success, 1 after printing the error to stderr.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer, dir string) int {
	a := &app{stdout: stdout, stderr: stderr, dir: dir}
	root := a.rootCommand()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "ow:", err)
		return 1
	}
	return 0
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "ow",
		Short: "OpenWorkflow for Go: durable workflows on PostgreSQL or SQLite",
		Long: `ow manages OpenWorkflow runs stored in PostgreSQL or an SQLite file.

The backend is configured by openworkflow.yaml (searched upward from the
working directory), then OPENWORKFLOW_* environment variables, then the
flags below. With no configuration, runs live in the SQLite file
.openworkflow/openworkflow.db.

Start with:  ow demo`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())
	})
	f := root.PersistentFlags()
	f.StringVar(&a.configFile, "config", "", "configuration file (default: openworkflow.yaml searched upward)")
	f.StringVar(&a.postgresURL, "postgres-url", "", "PostgreSQL URL; selects PostgreSQL (an empty value selects SQLite) [$"+config.EnvPostgresURL+"]")
	f.StringVar(&a.sqlitePath, "sqlite-path", "", "SQLite database file (default .openworkflow/openworkflow.db) [$"+config.EnvSQLitePath+"]")
	f.StringVar(&a.namespace, "namespace", "", "namespace (default \"default\") [$"+config.EnvNamespace+"]")
	f.StringVar(&a.schema, "schema", "", "PostgreSQL schema (default \"openworkflow\") [$"+config.EnvSchema+"]")
	f.BoolVar(&a.jsonOut, "json", false, "print one JSON document on stdout instead of text")

	root.AddCommand(a.migrateCommand(), a.runsCommand(), a.signalCommand(), a.doctorCommand(), a.demoCommand(), a.benchCommand())
	return root
}

// loadConfig resolves the configuration with the global flags the user
// set.
func (a *app) loadConfig(cmd *cobra.Command) (*config.Config, error) {
	var o config.Overrides
	fl := cmd.Flags()
	if fl.Changed("postgres-url") {
		o.PostgresURL = &a.postgresURL
	}
	if fl.Changed("sqlite-path") {
		o.SQLitePath = &a.sqlitePath
	}
	if fl.Changed("namespace") {
		o.Namespace = &a.namespace
	}
	if fl.Changed("schema") {
		o.Schema = &a.schema
	}
	if fl.Lookup("concurrency") != nil && fl.Changed("concurrency") {
		o.WorkerConcurrency = &a.concurrency
	}
	return config.LoadWith(config.Options{Dir: a.dir, File: a.configFile, Overrides: o})
}

// openBackend loads the configuration and opens its backend.
func (a *app) openBackend(cmd *cobra.Command) (*config.Config, backend.Backend, error) {
	cfg, err := a.loadConfig(cmd)
	if err != nil {
		return nil, nil, err
	}
	b, err := cfg.OpenBackend(cmd.Context())
	if err != nil {
		return nil, nil, err
	}
	return cfg, b, nil
}

// printJSON writes v as one indented JSON document on stdout.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// runError turns a backend error about a run into a message saying what
// to do next.
func runError(err error, runID string) error {
	switch {
	case errors.Is(err, backend.ErrRunNotFound):
		return fmt.Errorf("no run %s in this namespace: check the id with 'ow runs list' (and --namespace)", runID)
	case errors.Is(err, backend.ErrRunTerminal):
		return fmt.Errorf("run %s has already finished; only pending or running runs can be canceled", runID)
	}
	return err
}

// formatTime formats a stored time for tables, in local time; "-" for nil.
func formatTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// runDuration is finished−started, or now−started for a run still going
// ("…" appended); "-" before the start.
func runDuration(started, finished *time.Time, now time.Time) string {
	switch {
	case started == nil:
		return "-"
	case finished == nil:
		return formatDuration(now.Sub(*started)) + "…"
	default:
		return formatDuration(finished.Sub(*started))
	}
}

func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// orDash returns s, or "-" when it is empty or nil.
func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

// oneOf formats allowed values for error messages.
func oneOf[T ~string](vals ...T) string {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}
