package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// statusText is a run's status as the tables show it: its stored status,
// with "(paused)" while it is paused (paused is not a status of its own).
func statusText(r *backend.WorkflowRun) string {
	if r.Paused() {
		return string(r.Status.Normalize()) + " (paused)"
	}
	return string(r.Status.Normalize())
}

// pauseReasonText is ": <reason>" for a paused run with a reason, else "".
func pauseReasonText(r *backend.WorkflowRun) string {
	if r.PauseReason == nil {
		return ""
	}
	return fmt.Sprintf(": %q", *r.PauseReason)
}

func (a *app) runsPauseCommand() *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:   "pause <run-id>",
		Short: "Pause a run: no worker starts a step of it until it is resumed",
		Long: `Pause a pending or running run. It keeps its status and shows "(paused)".
A step a worker is executing finishes and is recorded; the worker then
hands the run back without starting another (at its next heartbeat). No
worker, not even a TypeScript one on the same database, takes a paused run.
Signals, hook payloads and children's ends are recorded meanwhile. The
run's deadline keeps running: a paused run whose deadline passes fails.
Pausing a paused run changes nothing. Resume it with 'ow runs resume'.`,
		Args: exactArgs("run-id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(reason) > backend.MaxPauseReasonLength {
				return fmt.Errorf("invalid --reason: %d bytes, at most %d allowed", len(reason), backend.MaxPauseReasonLength)
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			res, err := ow.NewClient(b).PauseRun(cmd.Context(), args[0], reason)
			if errors.Is(err, backend.ErrRunTerminal) {
				return fmt.Errorf("%w: only a pending or running run can be paused (see its status with 'ow runs get %s')", err, args[0])
			}
			if err != nil {
				return runError(err, args[0])
			}
			if a.jsonOut {
				return a.printJSON(res.Run)
			}
			if !res.Acted {
				fmt.Fprintf(a.stdout, "run %s (%s) was already paused since %s%s\n", res.Run.ID, res.Run.WorkflowName, formatTime(res.Run.PausedAt), pauseReasonText(res.Run))
				return nil
			}
			fmt.Fprintf(a.stdout, "paused run %s (%s); resume it with 'ow runs resume %s'\n", res.Run.ID, res.Run.WorkflowName, res.Run.ID)
			return nil
		},
	}
	c.Flags().StringVar(&reason, "reason", "", fmt.Sprintf("why the run is paused, shown with it (at most %d bytes)", backend.MaxPauseReasonLength))
	return c
}

func (a *app) runsResumeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "resume <run-id>",
		Short: "Resume a paused run, or a canceled run from where it stopped",
		Long: `Resume a paused run where it was: it is due again when it was due, or at
once if a signal, a hook payload or a child's end came while it was paused.

Resume a canceled run in place: the same run becomes pending again; its
completed steps keep their results and are not executed again, and the
step it was executing when canceled runs again. Its deadline is kept: a
canceled run whose deadline has passed is refused (fork it instead, with
'ow runs fork'). A failed run is retried with 'ow runs retry', not resumed;
a completed run cannot be resumed.`,
		Args: exactArgs("run-id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			res, err := ow.NewClient(b).ResumeRun(cmd.Context(), args[0])
			switch {
			case errors.Is(err, backend.ErrRunNotCanceled):
				return fmt.Errorf("run %q failed; retry it with 'ow runs retry %s' instead", args[0], args[0])
			case errors.Is(err, backend.ErrDeadlinePassed):
				return fmt.Errorf("%w (copy it from a step with 'ow runs fork %s --from-step <step>')", err, args[0])
			case errors.Is(err, backend.ErrRunTerminal):
				return fmt.Errorf("%w (start a new run with 'ow runs start')", err)
			case err != nil:
				return runError(err, args[0])
			}
			if a.jsonOut {
				return a.printJSON(res.Run)
			}
			if !res.Acted {
				fmt.Fprintf(a.stdout, "run %s (%s) is %s, neither paused nor canceled: nothing to resume\n", res.Run.ID, res.Run.WorkflowName, res.Run.Status.Normalize())
				return nil
			}
			fmt.Fprintf(a.stdout, "resumed run %s (%s)\n", res.Run.ID, res.Run.WorkflowName)
			return nil
		},
	}
}
