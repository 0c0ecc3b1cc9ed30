package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/config"
)

func (a *app) schedulesCommand() *cobra.Command {
	return groupCommand("schedules", "List, inspect, pause, resume and trigger schedules (cron-started runs)",
		a.schedulesListCommand(), a.schedulesGetCommand(), a.schedulesPauseCommand(), a.schedulesResumeCommand(),
		a.schedulesTriggerCommand(), a.schedulesDeleteCommand(), a.schedulesApplyCommand())
}

// withClient opens the configured backend and calls f with a client on
// it.
func (a *app) withClient(cmd *cobra.Command, f func(ctx context.Context, c *ow.Client) error) error {
	_, b, err := a.openBackend(cmd)
	if err != nil {
		return err
	}
	defer b.Close()
	return f(cmd.Context(), ow.NewClient(b))
}

// scheduleError says what to do about an error naming a schedule.
func scheduleError(err error, name string) error {
	if errors.Is(err, backend.ErrScheduleNotFound) {
		return fmt.Errorf("no schedule %q in this namespace: see 'ow schedules list' (and --namespace)", name)
	}
	return err
}

func (a *app) schedulesListCommand() *cobra.Command {
	var cursor string
	var limit int
	c := &cobra.Command{
		Use:         "list",
		Annotations: readsOnly(),
		Short:       "List schedules by name, with their next tick",
		Long: `List the namespace's schedules by name: the workflow each starts, its cron
and time zone, its overlap policy, its next tick (in its time zone) or
"paused", and how many runs it started and ticks it skipped or missed.

Schedules are fired by the workers of the namespace (every Go worker,
'ow worker' and 'ow server --worker'); define them in Go
(Client.PutSchedule), in openworkflow.yaml (schedules:) or with
PUT /v1/schedules/{name}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkPageFlags(limit, cursor, backend.DecodeScheduleCursor, "ow schedules list"); err != nil {
				return err
			}
			return a.withClient(cmd, func(ctx context.Context, c *ow.Client) error {
				page, err := c.ListSchedules(ctx, backend.ListSchedulesParams{Limit: limit, After: cursor})
				if err != nil {
					return err
				}
				list := api.List[api.Schedule]{Data: []api.Schedule{}, Cursor: page.Next, HasMore: page.Next != nil}
				for i := range page.Data {
					list.Data = append(list.Data, api.ScheduleOf(&page.Data[i]))
				}
				if a.jsonOut {
					return a.printJSON(list)
				}
				return a.printSchedules(list, nextPageCommand(cmd, a.inv))
			})
		},
	}
	c.Flags().IntVar(&limit, "limit", 50, fmt.Sprintf("schedules per page (1 to %d)", maxListLimit))
	c.Flags().StringVar(&cursor, "cursor", "", "next-page cursor printed by a previous list")
	return c
}

// printSchedules prints a page of schedules as a table.
func (a *app) printSchedules(page api.List[api.Schedule], next string) error {
	if len(page.Data) == 0 {
		fmt.Fprintln(a.stdout, "no schedules")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWORKFLOW\tCRON\tTIME ZONE\tOVERLAP\tNEXT TICK\tSTARTED\tSKIPPED\tMISSED\tLAST ERROR")
	for _, s := range page.Data {
		wf := s.WorkflowName
		if s.Version != nil {
			wf += "@" + *s.Version
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", s.Name, wf, s.Cron, s.TimeZone, s.Overlap,
			nextTick(s), s.Started, s.Skipped, s.Missed, lastErrorCell(s))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Cursor != nil {
		fmt.Fprintf(a.stdout, "\nnext page: %s --cursor %s\n", next, *page.Cursor)
	}
	return nil
}

// lastErrorCell is a failing schedule's last error for the list, on one
// line and cut to 80 characters ('ow schedules get' shows it whole), or
// "-".
func lastErrorCell(s api.Schedule) string {
	if s.LastError == nil {
		return "-"
	}
	msg := strings.Join(strings.Fields(*s.LastError), " ")
	if r := []rune(msg); len(r) > 80 {
		msg = string(r[:79]) + "…"
	}
	return msg
}

// nextTick is a schedule's next tick in its time zone, or "paused".
func nextTick(s api.Schedule) string {
	if s.Paused || s.NextFireAt == nil {
		return "paused"
	}
	return inZone(*s.NextFireAt, s.TimeZone)
}

// inZone formats t in the IANA time zone tz, with its abbreviation.
func inZone(t time.Time, tz string) string {
	if loc, err := time.LoadLocation(tz); err == nil {
		t = t.In(loc)
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

func (a *app) schedulesGetCommand() *cobra.Command {
	var n int
	c := &cobra.Command{
		Use:         "get <name>",
		Annotations: readsOnly(),
		Short:       "Show a schedule and its next ticks",
		Args:        exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 1 || n > 100 {
				return fmt.Errorf("invalid --next %d: want 1 to 100", n)
			}
			return a.withClient(cmd, func(ctx context.Context, c *ow.Client) error {
				s, err := c.GetSchedule(ctx, args[0])
				if err != nil {
					return scheduleError(err, args[0])
				}
				out := api.ScheduleOf(s)
				if !s.Paused {
					if out.Upcoming, err = ow.UpcomingTicks(s, n); err != nil {
						return err
					}
				}
				if a.jsonOut {
					return a.printJSON(out)
				}
				a.printSchedule(out)
				return nil
			})
		},
	}
	c.Flags().IntVar(&n, "next", api.UpcomingTicks, "how many next ticks to show (1 to 100)")
	return c
}

// printSchedule prints one schedule and its next ticks.
func (a *app) printSchedule(s api.Schedule) {
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	wf := s.WorkflowName
	if s.Version != nil {
		wf += " (version " + *s.Version + ")"
	}
	state := "running"
	if s.Paused {
		state = "paused: 'ow schedules resume " + s.Name + "' resumes it from its next tick"
	}
	fmt.Fprintf(tw, "schedule\t%s\n", s.Name)
	fmt.Fprintf(tw, "workflow\t%s\n", wf)
	fmt.Fprintf(tw, "cron\t%s (%s)\n", s.Cron, s.TimeZone)
	fmt.Fprintf(tw, "input\t%s\n", s.Input)
	fmt.Fprintf(tw, "overlap\t%s\n", s.Overlap)
	fmt.Fprintf(tw, "catch-up window\t%s\n", s.CatchupWindow)
	if s.Priority != 0 {
		fmt.Fprintf(tw, "priority\t%d (of the runs it starts)\n", s.Priority)
	}
	fmt.Fprintf(tw, "state\t%s\n", state)
	if s.BufferedAt != nil {
		fmt.Fprintf(tw, "buffered tick\t%s (starts when the latest run ends)\n", inZone(*s.BufferedAt, s.TimeZone))
	}
	if s.LastRunID != nil {
		fmt.Fprintf(tw, "latest run\t%s (for %s)\n", *s.LastRunID, inZone(*s.LastFireAt, s.TimeZone))
	}
	fmt.Fprintf(tw, "ticks\t%s started, %d skipped (overlap), %d missed (older than the catch-up window)\n",
		count(int(s.Started), "run"), s.Skipped, s.Missed)
	if s.LastError != nil {
		at := ""
		if s.LastErrorAt != nil {
			at = " at " + inZone(*s.LastErrorAt, s.TimeZone)
		}
		fmt.Fprintf(tw, "last error\t%s\n", strings.Join(strings.Fields(*s.LastError), " "))
		fmt.Fprintf(tw, "failing\t%s in a row, the latest%s", count(s.Failures, "failed fire"), at)
		if s.RetryAt != nil {
			fmt.Fprintf(tw, "; tried again at %s", inZone(*s.RetryAt, s.TimeZone))
		}
		fmt.Fprintf(tw, "\n\tthe other schedules go on; fix the field the error names ('ow schedules apply', or PUT /v1/schedules/%s) or 'ow schedules delete %s'\n", s.Name, s.Name)
	}
	_ = tw.Flush()
	if len(s.Upcoming) > 0 {
		fmt.Fprintln(a.stdout, "next ticks:")
		for _, t := range s.Upcoming {
			fmt.Fprintf(a.stdout, "  %s  (%s UTC)\n", inZone(t, s.TimeZone), t.UTC().Format("2006-01-02 15:04:05"))
		}
	}
}

// scheduleChange is a subcommand that changes one schedule (pause,
// resume) and prints it after.
func (a *app) scheduleChange(use, short, long, done string, change func(*ow.Client, context.Context, string) (*ow.Schedule, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use + " <name>",
		Short: short,
		Long:  long,
		Args:  exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withClient(cmd, func(ctx context.Context, c *ow.Client) error {
				s, err := change(c, ctx, args[0])
				if err != nil {
					return scheduleError(err, args[0])
				}
				out := api.ScheduleOf(s)
				if a.jsonOut {
					return a.printJSON(out)
				}
				fmt.Fprintf(a.stdout, "schedule %s %s; next tick: %s\n", s.Name, done, nextTick(out))
				return nil
			})
		},
	}
}

func (a *app) schedulesPauseCommand() *cobra.Command {
	return a.scheduleChange("pause", "Stop a schedule's ticks until it is resumed",
		`Pause a schedule: its ticks start no run until 'ow schedules resume'. Runs
already started go on. Pausing a paused schedule changes nothing, and a
paused schedule stays paused when its definition is put again (a deploy).`,
		"paused", (*ow.Client).PauseSchedule)
}

func (a *app) schedulesResumeCommand() *cobra.Command {
	return a.scheduleChange("resume", "Resume a paused schedule from its next tick",
		`Resume a paused schedule from its next tick after now: the ticks that
passed while it was paused are not run. Resuming a running schedule changes
nothing.`,
		"resumed", (*ow.Client).ResumeSchedule)
}

func (a *app) schedulesTriggerCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "trigger <name>",
		Short: "Start a run of a schedule now",
		Long: `Start a run of the schedule's workflow now, with its input, whatever its
overlap policy and even while it is paused. The run's scheduled time is
now (RunInfo().Schedule, marked triggered). Its ticks are unchanged.`,
		Args: exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withClient(cmd, func(ctx context.Context, c *ow.Client) error {
				h, err := c.TriggerSchedule(ctx, args[0])
				if err != nil {
					return scheduleError(err, args[0])
				}
				if a.jsonOut {
					return a.printJSON(api.RunOf(h.Run, false))
				}
				fmt.Fprint(a.stdout, a.hint(fmt.Sprintf("started run %s of %s; follow it with 'ow runs get %s'\n", h.ID, h.WorkflowName, h.ID)))
				return nil
			})
		},
	}
}

func (a *app) schedulesDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete <name>",
		Short: "Delete a schedule (its runs are kept)",
		Long: `Delete a schedule; the runs it started are kept. A schedule still
declared in openworkflow.yaml or in a worker's code comes back when that
is put again (ow server, ow worker, or the program's worker starting).`,
		Args: exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withClient(cmd, func(ctx context.Context, c *ow.Client) error {
				if err := c.DeleteSchedule(ctx, args[0]); err != nil {
					return scheduleError(err, args[0])
				}
				if a.jsonOut {
					return a.printJSON(map[string]string{"deleted": args[0]})
				}
				fmt.Fprintf(a.stdout, "deleted schedule %s\n", args[0])
				return nil
			})
		},
	}
}

func (a *app) schedulesApplyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "apply",
		Short: "Put the schedules of openworkflow.yaml",
		Long: `Put the schedules of the configuration file's schedules: section, as
'ow server' and 'ow worker' do when they start (a deploy script may run it
when the workers are Go programs). Putting them again changes nothing: a
schedule keeps its next tick unless its cron or time zone changed, and an
operator's pause stays.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			if len(cfg.Schedules) == 0 {
				where := "no " + config.FileName + " found"
				if cfg.File != "" {
					where = cfg.File + " has no schedules: section"
				}
				return fmt.Errorf("nothing to apply: %s", where)
			}
			n, err := cfg.ApplySchedules(cmd.Context(), b)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]int{"applied": n})
			}
			fmt.Fprintf(a.stdout, "put %s from %s\n", count(n, "schedule"), cfg.File)
			return nil
		},
	}
}

// applySchedules puts the configuration's schedules for ow server and ow
// worker, saying so on stderr.
func (a *app) applySchedules(ctx context.Context, cfg *config.Config, b backend.Backend) error {
	n, err := cfg.ApplySchedules(ctx, b)
	if err != nil {
		return err
	}
	if n > 0 {
		fmt.Fprintf(a.stderr, "put %s from %s\n", count(n, "schedule"), cfg.File)
	}
	return nil
}
