package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
	replicaURL  string
	sqlitePath  string
	namespace   string
	schema      string
	jsonOut     bool
	concurrency int     // only on commands that run a worker
	serverAddr  *string // --addr of ow server, when given
	inv         string  // how the user runs ow, for hints ("ow", or "go run ./cmd/ow"; see invocationFor)

	cfg *config.Config // the configuration loaded, once loaded
}

// execute runs the ow command line with args and returns the exit status:
// 0 on success, 1 after printing the error to stderr.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer, dir string) int {
	a := &app{stdout: stdout, stderr: stderr, dir: dir, inv: invocation()}
	root := a.rootCommand()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		if a.cfg != nil {
			err = a.cfg.ExplainError(ctx, err) // a damaged SQLite file says so
		}
		fmt.Fprintln(stderr, "ow:", a.hint(err.Error()))
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

Start with:  ow demo      (a durable workflow end to end, in the terminal)
then:        ow dev       (the API, metrics and a worker with sample workflows)
or:          ow init app  (a Go module of your own, with a workflow and a worker)`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.Version = readBuildVersion().String()
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see '%s --help')", flagError(err), c.CommandPath())
	})
	f := root.PersistentFlags()
	f.StringVar(&a.configFile, "config", "", "configuration file (default: openworkflow.yaml searched upward)")
	f.StringVar(&a.postgresURL, "postgres-url", "", "PostgreSQL URL; selects PostgreSQL (an empty value selects SQLite) [$"+config.EnvPostgresURL+"]")
	f.StringVar(&a.replicaURL, "read-replica-url", "", "PostgreSQL streaming replica for the API's and dashboard's reads [$"+config.EnvReadReplicaURL+"]")
	f.StringVar(&a.sqlitePath, "sqlite-path", "", "SQLite database file (default .openworkflow/openworkflow.db) [$"+config.EnvSQLitePath+"]")
	f.StringVar(&a.namespace, "namespace", "", "namespace (default \"default\") [$"+config.EnvNamespace+"]")
	f.StringVar(&a.schema, "schema", "", "PostgreSQL schema (default \"openworkflow\") [$"+config.EnvSchema+"]")
	f.BoolVar(&a.jsonOut, "json", false, "print one JSON document on stdout instead of text")

	root.AddCommand(a.migrateCommand(), a.runsCommand(), a.signalCommand(), a.doctorCommand(), a.demoCommand(), a.benchCommand(),
		a.flowCommand(), a.workerCommand(), a.serverCommand(), a.hooksCommand(), a.devCommand(), a.initCommand(), a.schedulesCommand(), a.limitsCommand(),
		a.versionCommand(), a.workersCommand(), a.workflowsCommand(), a.eventsCommand(), a.fairQueuesCommand())
	return root
}

// flagError rewrites pflag's report of a value that does not parse
// ("invalid argument "abc" for "--limit" flag: strconv.ParseInt: parsing
// "abc": invalid syntax") into one naming the flag, the value, what the
// flag expects and its meaning; other errors are returned unchanged.
func flagError(err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return err
	}
	f := bad.GetFlag()
	want := "a " + f.Value.Type()
	switch f.Value.Type() {
	case "int", "int64", "int32", "uint", "uint64":
		want = "a whole number"
	case "duration":
		want = "a duration such as 500ms, 2s or 1m"
	case "bool":
		want = "true or false"
	}
	usage := f.Usage
	if f.DefValue != "" && f.DefValue != "[]" && f.DefValue != "0" && f.DefValue != "false" {
		usage += ", default " + f.DefValue
	}
	return fmt.Errorf("invalid --%s %q: want %s: %s", f.Name, bad.GetValue(), want, usage)
}

// groupCommand returns a command that only groups subcommands (ow runs,
// ow signal). Alone it prints its help; with an argument that names no
// subcommand it fails, naming the argument and the subcommands, as the
// root command does for an unknown command (cobra's default for a
// non-runnable command prints the help and exits 0).
func groupCommand(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:                        use,
		Short:                      short,
		Args:                       cobra.ArbitraryArgs,
		SuggestionsMinimumDistance: 2, // cobra's default, which SuggestionsFor alone does not apply
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			var names []string
			for _, s := range cmd.Commands() {
				if s.IsAvailableCommand() {
					names = append(names, s.Name())
				}
			}
			msg := fmt.Sprintf("unknown command %q for %q: want one of %s", args[0], cmd.CommandPath(), oneOf(names...))
			if sug := cmd.SuggestionsFor(args[0]); len(sug) > 0 {
				for i := range sug {
					sug[i] = strconv.Quote(sug[i])
				}
				msg += "; did you mean " + strings.Join(sug, " or ") + "?"

			}
			return fmt.Errorf("%s (see '%s --help')", msg, cmd.CommandPath())
		},
	}
	c.AddCommand(subs...)
	return c
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
	if fl.Changed("read-replica-url") {
		o.ReadReplicaURL = &a.replicaURL
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
	o.ServerAddr = a.serverAddr
	cfg, err := config.LoadWith(config.Options{Dir: a.dir, File: a.configFile, Overrides: o})
	a.cfg = cfg
	return cfg, err
}

// annotationReadsOnly marks (in cobra.Command.Annotations) a command
// that only reads the database: openBackend does not create a missing
// SQLite file for it.
const annotationReadsOnly = "ow:reads-only"

// readsOnly returns the Annotations of a command that only reads the
// database. The other commands write (or, as 'ow doctor', set the
// database up), and create a missing SQLite file.
func readsOnly() map[string]string { return map[string]string{annotationReadsOnly: "true"} }

// openBackend loads the configuration and opens its backend; for a
// command marked readsOnly, a SQLite file that does not exist is an
// error naming it (config.Config.OpenBackendToRead) rather than created.
func (a *app) openBackend(cmd *cobra.Command) (*config.Config, backend.Backend, error) {
	cfg, err := a.loadConfig(cmd)
	if err != nil {
		return nil, nil, err
	}
	open := cfg.OpenBackend
	if cmd.Annotations[annotationReadsOnly] == "true" {
		open = cfg.OpenBackendToRead
	}
	b, err := open(cmd.Context())
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
		return fmt.Errorf("no run %q in this namespace: check the id with 'ow runs list' (and --namespace)", runID)
	case errors.Is(err, backend.ErrRunTerminal):
		return fmt.Errorf("run %q has already finished; only pending or running runs can be canceled", runID)
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

// count formats n and a regular English noun: "1 step attempt", "2 step
// attempts".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// oneOf formats allowed values for error messages.
func oneOf[T ~string](vals ...T) string {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}
