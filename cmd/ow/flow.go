package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/config"
	"github.com/openworkflow-go/openworkflow/openflow"
)

func (a *app) flowCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "flow",
		Short: "Validate, run and resume OpenFlow flows (Windmill's JSON/YAML flows)",
		Long: `Run OpenFlow flows (the open standard of Windmill's flows, JSON or YAML)
durably: every module is a durable step, so a run killed mid-flow resumes
without re-running finished modules. Scripts run as subprocesses: bash,
python3, deno and bun (from npm: npm i --prefix ~/.cache/openworkflow-runners
bun deno), and go. Scripts and flows named by path are found in the
directories of openflow.dirs in openworkflow.yaml. See docs/openflow.md.`,
	}
	c.AddCommand(a.flowValidateCommand(), a.flowRunCommand(), a.flowResumeCommand())
	return c
}

// flowValidation is the JSON document of 'ow flow validate'.
type flowValidation struct {
	Valid     bool               `json:"valid"`
	Modules   int                `json:"modules,omitempty"`
	Problems  []openflow.Problem `json:"problems"`
	Languages []string           `json:"languages,omitempty"`
}

func (a *app) flowValidateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate <file>",
		Short: "Check a flow file: structure, expressions, languages, runners and paths",
		Long: `Parse and validate a flow file (JSON or YAML) without running anything:
every problem is printed with its JSON path (value.modules[2].value.iterator)
and what was expected. The runners of the flow's languages must be
installed, and scripts and flows named by path must exist in openflow.dirs.
Exits 1 when the flow is invalid.`,
		Args: exactArgs("file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig(cmd)
			if err != nil {
				return err
			}
			f, err := openflow.ParseFile(args[0])
			if err == nil {
				err = openflow.New(openflow.Options{Dirs: cfg.OpenFlow.Dirs}).Check(f)
			}
			var ve *openflow.ValidationError
			if err != nil && !errors.As(err, &ve) {
				return err
			}
			res := flowValidation{Valid: err == nil, Problems: []openflow.Problem{}}
			if ve != nil {
				res.Problems = ve.Problems
			}
			if f != nil {
				res.Modules = len(f.Value.Modules)
				res.Languages = f.Languages()
			}
			if a.jsonOut {
				if err := a.printJSON(res); err != nil {
					return err
				}
			} else if res.Valid {
				fmt.Fprintf(a.stdout, "%s: valid flow, %d top-level modules, languages: %s\n", args[0], res.Modules, orNone(res.Languages))
			}
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			return nil
		},
	}
}

func (a *app) flowRunCommand() *cobra.Command {
	var argsJSON string
	c := &cobra.Command{
		Use:   "run <file>",
		Short: "Run a flow file to its end with an in-process worker",
		Long: `Validate the flow and its args (against its schema), start a durable run on
the configured backend (the SQLite file .openworkflow/openworkflow.db
without configuration), execute it with an in-process worker, print each
module's progress to stderr and the flow's result to stdout.

Exit status 0 only when the flow succeeds. With --json, stdout holds exactly
one JSON object {"success": bool, "result": …}, where result is the flow's
result as Windmill defines it, also for a failed flow.

A suspended flow waits here until 'ow flow resume <run>' (from another
terminal) approves it. If this command is interrupted, the run stays: any
'ow worker' on the same backend finishes it.`,
		Args: exactArgs("file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw := json.RawMessage("{}")
			if strings.TrimSpace(argsJSON) != "" {
				if !json.Valid([]byte(argsJSON)) {
					return fmt.Errorf("invalid --args %q: not JSON; give an object, e.g. --args '{\"x\": 5}'", argsJSON)
				}
				raw = json.RawMessage(argsJSON)
			}
			f, err := openflow.ParseFile(args[0])
			if err != nil {
				return a.refused(args[0], err)
			}
			cfg, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			return a.runFlow(cmd.Context(), cfg, b, f, raw, args[0])
		},
	}
	c.Flags().StringVar(&argsJSON, "args", "{}", "the flow's input, a JSON object")
	c.Flags().IntVar(&a.concurrency, "concurrency", 0, "runs the in-process worker executes at once (default 10) [$"+config.EnvWorkerConcurrency+"]")
	return c
}

// flowRunResult is the JSON document of 'ow flow run --json'.
type flowRunResult struct {
	Success bool            `json:"success"`
	Result  json.RawMessage `json:"result"`
}

func (a *app) runFlow(ctx context.Context, cfg *config.Config, b backend.Backend, f *openflow.Flow, args json.RawMessage, file string) error {
	client := ow.NewClient(b)
	e := openflow.New(openflow.Options{Dirs: cfg.OpenFlow.Dirs})
	h, err := e.Start(ctx, client, f, args, file)
	if err != nil {
		return a.refused(file, err)
	}
	w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: cfg.Worker.Concurrency,
		LeaseDuration: 5 * time.Second, ShutdownGracePeriod: 5 * time.Second})
	if err := e.Register(w, false); err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = w.Stop(context.Background()) }()
	fmt.Fprintf(a.stderr, "run %s of %s on %s %s\n", h.ID, file, cfg.Kind(), cfg.Location())

	watchCtx, stopWatch := context.WithCancel(ctx)
	var watched sync.WaitGroup
	watched.Add(1)
	go func() {
		defer watched.Done()
		_ = openflow.Watch(watchCtx, client, h.ID, func(ev openflow.Event) { printEvent(a, h.ID, ev) })
	}()
	res, err := openflow.Wait(ctx, client, h.ID)
	if err == nil {
		watched.Wait() // Watch returns once it has reported the finished run's last steps
	}
	stopWatch()
	watched.Wait()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: run %s stays; 'ow worker' on this backend finishes it", h.ID)
		}
		return err
	}
	if a.jsonOut {
		if err := a.printJSON(flowRunResult{Success: res.Success, Result: res.Result}); err != nil {
			return err
		}
	} else {
		var v any
		_ = json.Unmarshal(res.Result, &v)
		out, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintln(a.stdout, string(out))
	}
	if !res.Success {
		return fmt.Errorf("flow failed (run %s)", h.ID)
	}
	if res.Skipped {
		fmt.Fprintln(a.stderr, "the flow stopped early and is marked skipped")
	}
	return nil
}

// refused reports a flow (or its args) refused before any run exists;
// with --json, stdout still holds one {success, result} object, whose
// result is {"error": {"name": "ValidationError", "message", "problems"}}.
func (a *app) refused(file string, err error) error {
	err = fmt.Errorf("%s: %w", file, err)
	var ve *openflow.ValidationError
	if a.jsonOut && errors.As(err, &ve) {
		res, _ := json.Marshal(map[string]any{"error": map[string]any{"name": "ValidationError", "message": err.Error(), "problems": ve.Problems}})
		if perr := a.printJSON(flowRunResult{Success: false, Result: res}); perr != nil {
			return perr
		}
	}
	return err
}

// printEvent prints one progress line to stderr.
func printEvent(a *app, runID string, ev openflow.Event) {
	switch ev.Status {
	case "suspended":
		fmt.Fprintf(a.stderr, "  ⏸ %s: waiting for a resume event; approve with: ow flow resume %s --payload '<json>' (or --disapprove)\n", ev.Module, runID)
	case "sleeping":
		fmt.Fprintf(a.stderr, "  … %s: sleeping until %s\n", ev.Module, ev.Until.Local().Format("15:04:05"))
	default:
		mark := map[string]string{"success": "✓", "failure": "✗", "skipped": "↷"}[ev.Status]
		line := fmt.Sprintf("  %s %s", mark, ev.Module)
		if ev.Language != "" {
			line += " (" + ev.Language + ")"
		}
		line += " " + formatDuration(ev.Duration)
		if ev.Message != "" {
			line += ": " + firstLine(ev.Message)
		}
		fmt.Fprintln(a.stderr, line)
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// flowResumed is the JSON document of 'ow flow resume'.
type flowResumed struct {
	RunID      string `json:"runId"`
	Module     string `json:"module"`
	Disapprove bool   `json:"disapproved"`
}

func (a *app) flowResumeCommand() *cobra.Command {
	var payload, approver, module string
	var disapprove bool
	c := &cobra.Command{
		Use:   "resume <run>",
		Short: "Approve (or disapprove) a suspended module of a flow run",
		Long: `Deliver a resume event to the module of a flow run that is suspended
(suspend.required_events): the payload becomes resume (and is appended to
resumes) in the next module's expressions. --disapprove fails the flow with
SuspendedDisapproved instead. When several modules wait at once (parallel
branches), name one with --module. An approval's payload must match the
suspend's resume_form.schema, if it has one: else nothing is delivered,
the command fails naming what is wrong, and the flow keeps waiting.`,
		Args: exactArgs("run"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var raw json.RawMessage
			if cmd.Flags().Changed("payload") {
				if !json.Valid([]byte(payload)) {
					return fmt.Errorf("invalid --payload %q: not JSON; quote strings, e.g. --payload '\"ok\"'", payload)
				}
				raw = json.RawMessage(payload)
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			mod, err := openflow.Resume(cmd.Context(), ow.NewClient(b), args[0],
				openflow.ResumeEvent{Payload: raw, Approver: approver, Disapprove: disapprove, Module: module})
			if err != nil {
				return runError(err, args[0])
			}
			if a.jsonOut {
				return a.printJSON(flowResumed{RunID: args[0], Module: mod, Disapprove: disapprove})
			}
			verb := "resumed"
			if disapprove {
				verb = "disapproved"
			}
			fmt.Fprintf(a.stdout, "%s module %s of run %s\n", verb, mod, args[0])
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&payload, "payload", "", "the event's JSON payload (default null)")
	f.BoolVar(&disapprove, "disapprove", false, "disapprove: fail the flow with SuspendedDisapproved")
	f.StringVar(&approver, "approver", "", "who approves (default anonymous)")
	f.StringVar(&module, "module", "", "the suspended module's key, when several wait")
	return c
}
