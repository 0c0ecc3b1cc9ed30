package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
)

// signalResult is the JSON document of 'ow signal send'.
type signalResult struct {
	Signal         string   `json:"signal"`
	WorkflowRunIDs []string `json:"workflowRunIds"`
}

func (a *app) signalCommand() *cobra.Command {
	var data, key string
	send := &cobra.Command{
		Use:   "send <signal>",
		Short: "Deliver a signal to every run waiting for it now",
		Long: `Deliver a signal, with optional JSON data, to every run currently waiting
for it (ow.WaitForSignal). Signals sent by name are not kept: a run that
starts waiting later does not receive it ('ow runs signal' sends to one
run and keeps the signal until the run waits). With --idempotency-key,
sending again delivers nothing new and reports the first send's runs.`,
		Args: exactArgs("signal"),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := signalData(cmd, data)
			if err != nil {
				return err
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			ids, err := ow.NewClient(b).SendSignal(cmd.Context(), args[0], raw, key)
			if err != nil {
				return err
			}
			if ids == nil {
				ids = []string{}
			}
			if a.jsonOut {
				return a.printJSON(signalResult{Signal: args[0], WorkflowRunIDs: ids})
			}
			if len(ids) == 0 {
				fmt.Fprintf(a.stdout, "signal %q sent; no run was waiting for it\n", args[0])
				return nil
			}
			fmt.Fprintf(a.stdout, "signal %q delivered to %d run(s): %s\n", args[0], len(ids), strings.Join(ids, ", "))
			return nil
		},
	}
	send.Flags().StringVar(&data, "data", "", "JSON payload (default null)")
	send.Flags().StringVar(&key, "idempotency-key", "", "dedupe repeated sends with this key")
	return groupCommand("signal", "Send signals to waiting runs", send)
}

// runSignalResult is the JSON document of 'ow runs signal'.
type runSignalResult struct {
	WorkflowRunID string `json:"workflowRunId"`
	Signal        string `json:"signal"`
	ID            string `json:"id"`
	Delivered     bool   `json:"delivered"`
	Duplicate     bool   `json:"duplicate"`
}

func (a *app) runsSignalCommand() *cobra.Command {
	var data, key string
	cmd := &cobra.Command{
		Use:   "signal <run-id> <signal>",
		Short: "Send a signal to one run, kept until the run waits for it",
		Long: `Send a signal, with optional JSON data, to one run. Unlike 'ow signal send',
the signal is kept until the run waits for it (ow.WaitForSignal with that
name), then received by exactly one wait; signals sent to one run and name
are received in send order. A run waiting for it now is woken at once.
With --idempotency-key, sending again to the same run and signal stores
nothing and reports the first send. A finished run refuses the signal.`,
		Args: exactArgs("run-id", "signal"),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := signalData(cmd, data)
			if err != nil {
				return err
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			s, err := ow.NewClient(b).SignalRun(cmd.Context(), args[0], args[1], raw, key)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(runSignalResult{WorkflowRunID: args[0], Signal: args[1], ID: s.ID, Delivered: s.Delivered, Duplicate: s.Duplicate})
			}
			switch {
			case s.Duplicate:
				fmt.Fprintf(a.stdout, "signal %q to run %s was sent before with this key (%s); nothing sent\n", args[1], args[0], s.ID)
			case s.Delivered:
				fmt.Fprintf(a.stdout, "signal %q delivered to run %s, which was waiting for it (%s)\n", args[1], args[0], s.ID)
			default:
				fmt.Fprintf(a.stdout, "signal %q kept for run %s until it waits for it (%s)\n", args[1], args[0], s.ID)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "JSON payload (default null)")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "dedupe repeated sends to this run and signal with this key")
	return cmd
}

// signalData is a signal command's --data: null when the flag is not
// given, else its value, which must be JSON.
func signalData(cmd *cobra.Command, data string) (json.RawMessage, error) {
	if !cmd.Flags().Changed("data") {
		return json.RawMessage("null"), nil
	}
	if !json.Valid([]byte(data)) {
		var v any
		err := json.Unmarshal([]byte(data), &v)
		return nil, fmt.Errorf("invalid --data %q: not JSON (%v); quote strings, e.g. --data '\"text\"' or --data '{\"ok\":true}'", data, err)
	}
	return json.RawMessage(data), nil
}
