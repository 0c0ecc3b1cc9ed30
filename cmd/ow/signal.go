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
for it (ow.WaitForSignal). Signals are not buffered: a run that starts
waiting later does not receive it. With --idempotency-key, sending again
delivers nothing new and reports the first send's runs.`,
		Args: exactArgs("signal"),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw := json.RawMessage("null")
			if cmd.Flags().Changed("data") {
				if !json.Valid([]byte(data)) {
					var v any
					err := json.Unmarshal([]byte(data), &v)
					return fmt.Errorf("invalid --data %q: not JSON (%v); quote strings, e.g. --data '\"text\"' or --data '{\"ok\":true}'", data, err)
				}
				raw = json.RawMessage(data)
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
