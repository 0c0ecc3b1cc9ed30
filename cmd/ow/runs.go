package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/dag"
	"github.com/openworkflow-go/openworkflow/runquery"
)

// listStatuses are the values --status accepts.
var listStatuses = []backend.RunStatus{backend.RunPending, backend.RunRunning, backend.RunCompleted, backend.RunFailed, backend.RunCanceled}

// maxListLimit caps --limit.
const maxListLimit = 1000

func (a *app) runsCommand() *cobra.Command {
	return groupCommand("runs", "Start, list, inspect, follow, cancel, pause, resume, retry, fork, prune, signal and update workflow runs, and act on many by query",
		a.runsStartCommand(), a.runsListCommand(), a.runsGetCommand(), a.runsTailCommand(), a.runsCancelCommand(),
		a.runsPauseCommand(), a.runsResumeCommand(), a.runsRetryCommand(),
		a.runsForkCommand(), a.runsPruneCommand(), a.runsSignalCommand(), a.runsUpdateCommand(), a.runsBulkCommand())
}

// checkPageFlags checks a list command's --limit (1 to maxListLimit) and
// --cursor (one decode accepts; "" is the first page), naming the command
// whose output the cursor must come from.
func checkPageFlags[C any](limit int, cursor string, decode func(string) (C, error), command string) error {
	if limit < 1 || limit > maxListLimit {
		return fmt.Errorf("invalid --limit %d: want 1 to %d", limit, maxListLimit)
	}
	if cursor != "" {
		if _, err := decode(cursor); err != nil {
			return fmt.Errorf("invalid --cursor %q: pass the cursor printed by a previous '%s'", cursor, command)
		}
	}
	return nil
}

func (a *app) runsListCommand() *cobra.Command {
	var (
		status, workflow, cursor, query string
		limit                           int
	)
	c := &cobra.Command{
		Use:         "list",
		Annotations: readsOnly(),
		Short:       "List runs, newest first",
		Long: `List runs of the namespace, newest first, one page at a time.

The table shows id, workflow, version, status, attempts (claims), creation
time and duration. When there are more runs, the command prints the cursor
of the next page: pass it back with --cursor. --query selects runs with the
query language of docs/queries.md:

  ow runs list --query 'status = "failed" AND attrs.customer = "c-42" AND created > "2026-11-01"'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := backend.ListWorkflowRunsParams{WorkflowName: workflow, Limit: limit, After: cursor}
			var err error
			if p.Query, err = runquery.Parse(query); err != nil {
				return queryError(query, err)
			}
			if status != "" {
				s := backend.RunStatus(status)
				if !slices.Contains(listStatuses, s) {
					return fmt.Errorf("invalid --status %q: want one of %s", status, oneOf(listStatuses...))
				}
				p.Status = s
			}
			if err := checkPageFlags(limit, cursor, backend.DecodeCursor, "ow runs list"); err != nil {
				return err
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			p.OmitPayloads = !a.jsonOut // the table shows no input or output: read none
			page, err := ow.NewClient(b).ListRuns(cmd.Context(), p)
			if err != nil {
				return queryError(query, err)
			}
			if a.jsonOut {
				return a.printJSON(page)
			}
			return a.printRuns(page, nextPageCommand(cmd, a.inv))
		},
	}
	f := c.Flags()
	f.StringVar(&status, "status", "", "only runs with this status: "+oneOf(listStatuses...))
	f.StringVar(&workflow, "workflow", "", "only runs of this workflow name")
	f.IntVar(&limit, "limit", 20, fmt.Sprintf("runs per page (1 to %d)", maxListLimit))
	f.StringVar(&cursor, "cursor", "", "next-page cursor printed by a previous list")
	f.StringVar(&query, "query", "", `only runs the query selects (docs/queries.md), e.g. 'status = "failed" AND attrs.customer = "c-42"'`)
	return c
}

// queryError explains a query that cannot run: the message, then the
// query's line at fault with a caret under the position. Other errors
// are returned as they are.
func queryError(query string, err error) error {
	var qe *runquery.Error
	if !errors.As(err, &qe) {
		return err
	}
	lines := strings.Split(query, "\n")
	if qe.Pos.Line < 1 || qe.Pos.Line > len(lines) {
		return fmt.Errorf("invalid --query: %s (see docs/queries.md)", qe)
	}
	line := lines[qe.Pos.Line-1]
	pad := strings.Repeat(" ", max(0, min(qe.Pos.Column-1, len(line))))
	return fmt.Errorf("invalid --query at line %d, column %d: %s\n  %s\n  %s^\nfix the query (the fields, operators and value types are in docs/queries.md)", qe.Pos.Line, qe.Pos.Column, qe.Msg, line, pad)
}

// printRuns prints a page of runs as a table; next is the command that
// lists the following page, to which the page's cursor is appended.
func (a *app) printRuns(page *backend.Page[backend.WorkflowRun], next string) error {
	if len(page.Data) == 0 {
		fmt.Fprintln(a.stdout, "no runs")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWORKFLOW\tVERSION\tSTATUS\tATTEMPTS\tCREATED\tDURATION")
	for _, r := range page.Data {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.WorkflowName, orDash(r.Version), statusText(&r),
			r.Attempts, formatTime(&r.CreatedAt), runDuration(r.StartedAt, r.FinishedAt, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != nil {
		fmt.Fprintf(a.stdout, "\nnext page: %s --cursor %s\n", next, *page.Next)
	}
	return nil
}

func (a *app) runsGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:         "get <run-id>",
		Annotations: readsOnly(),
		Short:       "Show a run and its step attempts",
		Args:        exactArgs("run-id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			ctx, c := cmd.Context(), ow.NewClient(b)
			run, err := c.GetRun(ctx, args[0])
			if err != nil {
				return runError(err, args[0])
			}
			d := runDetail{Run: run, Steps: []backend.StepAttempt{}}
			for after := ""; ; {
				page, err := c.ListSteps(ctx, backend.ListStepAttemptsParams{WorkflowRunID: run.ID, Limit: maxListLimit, After: after})
				if err != nil {
					return err
				}
				d.Steps = append(d.Steps, page.Data...)
				if page.Next == nil {
					break
				}
				after = *page.Next
			}
			if st, err := dag.StatusOf(run, d.Steps); err == nil {
				d.DAG = st
			}
			// Advisory, as the registry is: a registry that cannot be read
			// is said, and the run shown.
			if d.Unserved, err = c.UnservedReason(ctx, run); err != nil {
				fmt.Fprintf(a.stderr, "ow: whether a live worker serves the run's workflow could not be read: %v\n", err)
			}
			if attrs, err := c.SearchAttributes(ctx, run.ID); err == nil {
				d.SearchAttributes = attrs[run.ID]
			} else if !errors.Is(err, backend.ErrNotSupported) {
				return err
			}
			if a.jsonOut {
				return a.printJSON(d)
			}
			return a.printRunDetail(d)
		},
	}
}

func (a *app) runsCancelCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel <run-id>",
		Short: "Cancel a pending or running run",
		Long: `Cancel a pending or running run. The worker executing it stops at its
next step; its children keep running. Canceling a canceled run is a no-op.`,
		Args: exactArgs("run-id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			run, err := ow.NewClient(b).CancelRun(cmd.Context(), args[0])
			if err != nil {
				return runError(err, args[0])
			}
			if a.jsonOut {
				return a.printJSON(run)
			}
			fmt.Fprintf(a.stdout, "canceled run %s (%s)\n", run.ID, run.WorkflowName)
			return nil
		},
	}
}

// exactArgs requires the named positional arguments, naming them when
// they are missing or blank (an empty or all-space argument, as a shell
// variable that was not set gives).
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return fmt.Errorf("'%s' takes %d argument(s) <%s>, got %d (see '%s --help')",
				cmd.CommandPath(), len(names), oneOf(names...), len(args), cmd.CommandPath())
		}
		for i, arg := range args {
			if strings.TrimSpace(arg) == "" {
				return fmt.Errorf("'%s': <%s> is empty (%q): give a %s (see '%s --help')",
					cmd.CommandPath(), names[i], arg, strings.ReplaceAll(names[i], "-", " "), cmd.CommandPath())
			}
		}
		return nil
	}
}
