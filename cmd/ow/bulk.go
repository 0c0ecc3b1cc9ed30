package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// bulkFollowEvery is how often a followed bulk action is read again (a
// variable for tests).
var bulkFollowEvery = 500 * time.Millisecond

func (a *app) runsBulkCommand() *cobra.Command {
	return groupCommand("bulk", "Cancel, retry, delete, pause or resume every run a query selects, as a durable bulk action",
		a.bulkOperationCommand(backend.BulkCancel, "Cancel the pending and running runs a query selects"),
		a.bulkOperationCommand(backend.BulkRetry, "Retry the failed runs a query selects (not those marked not retryable)"),
		a.bulkOperationCommand(backend.BulkDelete, "Delete the finished runs a query selects, with everything they own"),
		a.bulkOperationCommand(backend.BulkPause, "Pause the pending and running runs a query selects (--reason is the pause's reason)"),
		a.bulkOperationCommand(backend.BulkResume, "Resume the paused runs a query selects, and its canceled runs in place"),
		a.bulkListCommand(), a.bulkGetCommand(), a.bulkCancelActionCommand())
}

func (a *app) bulkOperationCommand(op backend.BulkOperation, short string) *cobra.Command {
	var (
		query, reason   string
		dryRun, yes, bg bool
		rate            int
	)
	c := &cobra.Command{
		Use:   string(op) + " --query '<query>'",
		Short: short,
		Long: short + `.

The query is the run query language (docs/queries.md), e.g.
'status = "failed" AND workflow = "sync" AND created > "2026-11-01"'; ""
selects every run. The statuses the operation applies to are added to it. The command first counts the runs the action would
act on; --dry-run stops there. Without --yes it asks for confirmation, and
refuses when stdin is not a terminal.

The action is durable: it is stored, and the workers of the namespace ('ow
worker', 'ow server' with a worker, 'ow dev', or any program running a
Worker) apply it page by page, each page one transaction with the action's
progress, so it survives a restart, goes on from where it was and acts on
each run at most once. Runs created after it are not selected. The command
shows its progress until it ends; Ctrl-C (or --background) leaves it
running: follow it with 'ow runs bulk get <id> --follow', stop it with 'ow
runs bulk cancel-action <id>'.`,
		Example: `  ow runs bulk ` + string(op) + ` --query 'status = "failed" AND workflow = "sync"' --dry-run
  ow runs bulk ` + string(op) + ` --query 'workflow = "sync" AND created < "2026-11-01"' --reason 'bad deploy' --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("query") {
				return fmt.Errorf("--query is required: the runs to %s, e.g. --query 'workflow = \"x\"' (--query '' selects every run)", op)
			}
			if rate < 0 {
				return fmt.Errorf("invalid --rate %d: want 0 (the default, %d runs/s) or more", rate, ow.DefaultBulkRate)
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			c := ow.NewClient(b)
			dry, err := c.DryRunBulkAction(cmd.Context(), op, query)
			if err != nil {
				return bulkQueryError(err)
			}
			if dryRun {
				if a.jsonOut {
					return a.printJSON(dry)
				}
				fmt.Fprintf(a.stdout, "%s would act on %d runs (the query selects %d now); nothing was changed\n", op, dry.Eligible, dry.Matched)
				return nil
			}
			if !yes {
				if err := confirmBulk(cmd.InOrStdin(), a.stderr, op, dry); err != nil {
					return err
				}
			}
			act, err := c.StartBulkAction(cmd.Context(), op, query, ow.BulkActionOptions{Reason: reason, RequestedBy: "ow " + currentUser(), MaxPerSecond: rate})
			if err != nil {
				return bulkQueryError(err)
			}
			fmt.Fprintf(a.stderr, "started bulk action %s: %s %d runs\n", act.ID, op, act.Matched)
			if bg {
				return a.printBulk(act)
			}
			return a.followBulk(cmd.Context(), c, act)
		},
	}
	c.Flags().StringVar(&query, "query", "", "the runs to act on (run query language)")
	c.Flags().StringVar(&reason, "reason", "", "why, kept with the action")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "count the runs and change nothing")
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	c.Flags().BoolVar(&bg, "background", false, "start the action and return without following it")
	c.Flags().IntVar(&rate, "rate", 0, fmt.Sprintf("runs acted on per second at most (0: %d)", ow.DefaultBulkRate))
	return c
}

// confirmBulk asks on in (a terminal) whether to go on; it refuses when
// in is not a terminal.
func confirmBulk(in io.Reader, out io.Writer, op backend.BulkOperation, dry ow.BulkDryRun) error {
	if !stdinIsTerminal(in) {
		return fmt.Errorf("%s would act on %d runs: confirm with --yes (stdin is not a terminal to ask on), or look first with --dry-run", op, dry.Eligible)
	}
	fmt.Fprintf(out, "%s %d runs (the query selects %d now)? [y/N] ", op, dry.Eligible, dry.Matched)
	line, _ := bufio.NewReader(in).ReadString('\n')
	if answer := strings.ToLower(strings.TrimSpace(line)); answer != "y" && answer != "yes" {
		return errors.New("not confirmed; nothing was changed")
	}
	return nil
}

// stdinIsTerminal reports whether in is a terminal (a character device)
// to ask on; a variable so that tests decide.
var stdinIsTerminal = func(in io.Reader) bool {
	f, ok := in.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// currentUser names the user running ow, for the action's record.
func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "cli"
}

// bulkQueryError says what to do about a refused bulk action.
func bulkQueryError(err error) error {
	if errors.Is(err, backend.ErrInvalidArgument) {
		return fmt.Errorf("%w\n(see docs/queries.md and 'ow runs bulk --help')", err)
	}
	return err
}

// followBulk prints act's progress on stderr until it ends or ctx does
// (Ctrl-C), which leaves it running.
func (a *app) followBulk(ctx context.Context, c *ow.Client, act *ow.BulkAction) error {
	last := ""
	waited := time.Now()
	hinted := false
	t := time.NewTicker(bulkFollowEvery)
	defer t.Stop()
	for {
		line := fmt.Sprintf("%s: %s %d/%d acted, %d skipped, %d failed, %d pages", act.ID, act.State, act.Acted, act.Matched, act.Skipped, act.Failed, act.Pages)
		if line != last {
			fmt.Fprintln(a.stderr, line)
			last = line
		}
		if !act.State.Open() {
			return a.printBulk(act)
		}
		if act.StartedAt == nil && !hinted && time.Since(waited) > 5*time.Second {
			fmt.Fprintln(a.stderr, "no worker has taken the action yet: workers drive bulk actions ('ow worker', 'ow dev', 'ow server' with a worker)")
			hinted = true
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(a.stderr, "stopped following; bulk action %s keeps running: follow it with 'ow runs bulk get %s --follow', stop it with 'ow runs bulk cancel-action %s'\n", act.ID, act.ID, act.ID)
			return nil
		case <-t.C:
		}
		next, err := c.GetBulkAction(ctx, act.ID)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			return err
		}
		act = next
	}
}

// printBulk prints one action.
func (a *app) printBulk(act *ow.BulkAction) error {
	if a.jsonOut {
		return a.printJSON(act)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\n", act.ID)
	fmt.Fprintf(tw, "operation\t%s\n", act.Operation)
	fmt.Fprintf(tw, "query\t%s\n", act.Query)
	fmt.Fprintf(tw, "state\t%s\n", act.State)
	fmt.Fprintf(tw, "matched\t%d\n", act.Matched)
	fmt.Fprintf(tw, "acted\t%d\n", act.Acted)
	fmt.Fprintf(tw, "skipped\t%d\n", act.Skipped)
	fmt.Fprintf(tw, "failed\t%d\n", act.Failed)
	if act.Reason != "" {
		fmt.Fprintf(tw, "reason\t%s\n", act.Reason)
	}
	if act.LastError != "" {
		fmt.Fprintf(tw, "last error\t%s\n", act.LastError)
	}
	fmt.Fprintf(tw, "created\t%s\n", act.CreatedAt.Format(time.RFC3339))
	if act.FinishedAt != nil {
		fmt.Fprintf(tw, "finished\t%s\n", act.FinishedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

func (a *app) bulkListCommand() *cobra.Command {
	var (
		limit  int
		cursor string
	)
	c := &cobra.Command{
		Use:         "list",
		Annotations: readsOnly(),
		Short:       "List bulk actions, newest first, with what each did",
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkPageFlags(limit, cursor, backend.DecodeCursor, "ow runs bulk list"); err != nil {
				return err
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			page, err := ow.NewClient(b).ListBulkActions(cmd.Context(), backend.ListBulkActionsParams{Limit: limit, After: cursor})
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(page)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tOPERATION\tSTATE\tACTED\tSKIPPED\tMATCHED\tCREATED\tQUERY")
			for _, act := range page.Data {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", act.ID, act.Operation, act.State, act.Acted, act.Skipped, act.Matched,
					act.CreatedAt.Format(time.RFC3339), act.Query)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.Next != nil {
				fmt.Fprintf(a.stdout, "more: ow runs bulk list --cursor %s\n", *page.Next)
			}
			return nil
		},
	}
	c.Flags().IntVar(&limit, "limit", 20, "page size")
	c.Flags().StringVar(&cursor, "cursor", "", "the cursor of the next page")
	return c
}

func (a *app) bulkGetCommand() *cobra.Command {
	var follow bool
	c := &cobra.Command{
		Use:         "get <action-id>",
		Annotations: readsOnly(),
		Short:       "Show a bulk action and its progress",
		Args:        exactArgs("action-id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			c := ow.NewClient(b)
			act, err := c.GetBulkAction(cmd.Context(), args[0])
			if err != nil {
				return bulkActionError(err, args[0])
			}
			if follow {
				return a.followBulk(cmd.Context(), c, act)
			}
			return a.printBulk(act)
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "show the progress until the action ends")
	return c
}

func (a *app) bulkCancelActionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel-action <action-id>",
		Short: "Stop a bulk action at its next page, keeping what it did",
		Args:  exactArgs("action-id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			act, err := ow.NewClient(b).CancelBulkAction(cmd.Context(), args[0])
			if err != nil {
				return bulkActionError(err, args[0])
			}
			if a.jsonOut {
				return a.printJSON(act)
			}
			fmt.Fprintf(a.stdout, "bulk action %s is %s (it stops at its next page; %d runs acted on so far)\n", act.ID, act.State, act.Acted)
			return nil
		},
	}
}

// bulkActionError says what to do about an error naming an action.
func bulkActionError(err error, id string) error {
	switch {
	case errors.Is(err, backend.ErrBulkActionNotFound):
		return fmt.Errorf("no bulk action %q in this namespace: see 'ow runs bulk list'", id)
	case errors.Is(err, backend.ErrBulkActionFinished):
		return fmt.Errorf("bulk action %q has already ended; 'ow runs bulk get %s' shows what it did", id, id)
	}
	return err
}
