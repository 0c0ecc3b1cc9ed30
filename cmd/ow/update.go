package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
)

// runUpdateResult is the JSON document of 'ow runs update'.
type runUpdateResult struct {
	WorkflowRunID string          `json:"workflowRunId"`
	Name          string          `json:"name"`
	ID            string          `json:"id"`
	State         string          `json:"state"`
	Result        json.RawMessage `json:"result,omitempty"`
	Error         json.RawMessage `json:"error,omitempty"`
	Duplicate     bool            `json:"duplicate"`
}

func (a *app) runsUpdateCommand() *cobra.Command {
	var data, updateID string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "update <run-id> <name>",
		Short: "Send an update to a run and wait for its handler's result",
		Long: `Send an update, with optional JSON data, to one run and wait for the result
of the workflow's handler for <name> (ow.HandleUpdate). The run handles it
at its next wait point, or at once if it is parked. The workflow's
validator may reject it: the command then fails with the reason, and the
run's history is unchanged. --id sets the update's id, its idempotency key
within the run: an id sent before is never handled twice, and sending it
again reports its outcome, so after a --wait that ran out, send the same
command with the id it printed to go on waiting. Needs a worker running
the workflow.`,
		Args: exactArgs("run-id", "name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := signalData(cmd, data)
			if err != nil {
				return err
			}
			if wait <= 0 {
				return fmt.Errorf("invalid --wait %s: give a positive duration, such as --wait 30s", wait)
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			c := ow.NewClient(b)
			var opts []ow.UpdateOption
			if updateID != "" {
				opts = append(opts, ow.WithUpdateID(updateID))
			}
			u, err := c.AdmitUpdate(cmd.Context(), args[0], args[1], raw, opts...)
			if err != nil {
				return err
			}
			dup := u.Duplicate
			if !u.State.Settled() {
				ctx, cancel := context.WithTimeout(cmd.Context(), wait)
				defer cancel()
				settled, err := c.WaitUpdate(ctx, args[0], u.ID)
				var te *ow.UpdateTimeoutError
				switch {
				case errors.As(err, &te):
					return fmt.Errorf("update %q (id %s) of run %s is not handled yet after %s (is a worker running its workflow?); "+
						"wait more with: ow runs update %s %s --id %s --wait 1m", args[1], u.ID, args[0], wait, args[0], args[1], u.ID)
				case err != nil:
					return err
				}
				u = settled
			}
			if a.jsonOut {
				if err := a.printJSON(runUpdateResult{WorkflowRunID: args[0], Name: args[1], ID: u.ID, State: string(u.State),
					Result: u.Result, Error: u.Error, Duplicate: dup}); err != nil {
					return err
				}
			}
			result, err := ow.UpdateOutcome(u)
			if err != nil {
				if errors.Is(err, ow.ErrUpdateRejected) {
					return fmt.Errorf("%w; the run's history is unchanged: fix the input, or send it to a run whose workflow handles it", err)
				}
				return err
			}
			if !a.jsonOut {
				fmt.Fprintf(a.stdout, "%s\n", result)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "JSON input of the update (default null)")
	cmd.Flags().StringVar(&updateID, "id", "", "the update's id (default: a new one); sending an id again reports its outcome")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the run to handle the update")
	return cmd
}
