package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

func (a *app) limitsCommand() *cobra.Command {
	list := &cobra.Command{
		Use:         "list",
		Annotations: readsOnly(),
		Short:       "List the stored limits of the namespace's workflows",
		Long: `List the concurrency and rate limits stored for the namespace's workflows.
Workers store them when they start with workflows that declare limits
(ow.Spec.Limits, or worker.limits in openworkflow.yaml) and enforce them
in every claim; a worker's per-worker limit is its own and not stored.
DECLARED BY names the worker that stored them (its id and the versions it
registered); when its declaration replaced different limits, they are
shown below the table with who had declared them: workers declaring
different limits replace each other's at every start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			ls, err := ow.NewClient(b).ListWorkflowLimits(cmd.Context())
			if err != nil {
				return err
			}
			if a.jsonOut {
				if ls == nil {
					ls = []backend.WorkflowLimits{}
				}
				return a.printJSON(ls)
			}
			if len(ls) == 0 {
				fmt.Fprintln(a.stdout, "no workflow has stored limits")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKFLOW\tCONCURRENCY\tPER KEY\tRATE\tUPDATED\tDECLARED BY\tREPLACED")
			var replaced []backend.WorkflowLimits
			for _, l := range ls {
				rep := "-"
				if l.Replaced != nil {
					rep = "see below"
					replaced = append(replaced, l)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.WorkflowName, limitText(l.Concurrency), limitText(l.ConcurrencyPerKey),
					rateText(l.Limits), l.UpdatedAt.Format("2006-01-02 15:04:05"), orDash(&l.DeclaredBy), rep)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			// The last change of each workflow's limits that replaced
			// other ones: two deployments declaring different limits
			// replace each other's at every start.
			for _, l := range replaced {
				fmt.Fprintf(a.stdout, "\n%s: at %s the limits %s (declared by %s) were replaced by %s (declared by %s); workers declaring different limits replace each other's at every start\n",
					l.WorkflowName, l.Replaced.At.Format("2006-01-02 15:04:05"), limitsText(l.Replaced.Limits), orDash(&l.Replaced.DeclaredBy),
					limitsText(l.Limits), orDash(&l.DeclaredBy))
			}
			return nil
		},
	}
	del := &cobra.Command{
		Use:   "delete <workflow>",
		Short: "Remove a workflow's stored limits, releasing its waiting runs",
		Long: `Remove the stored limits of a workflow: its runs waiting for admission
become ordinary pending runs at once, and runs started from now on do not
wait. A worker whose registration declares no limits never removes them
(so that an older deployment restarting mid-rollout cannot lift them);
this command does. A worker that starts with the workflow's limits
declared stores them again.`,
		Args: exactArgs("workflow"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			n, err := ow.NewClient(b).DeleteWorkflowLimits(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"workflowName": args[0], "released": n})
			}
			fmt.Fprintf(a.stdout, "removed the limits of %s; %d waiting run(s) released\n", args[0], n)
			return nil
		},
	}
	return groupCommand("limits", "List and remove the concurrency and rate limits of workflows", list, del)
}

// limitsText is l in words: "concurrency 2, per key 1, rate 5 per 1s".
func limitsText(l backend.Limits) string {
	var parts []string
	if l.Concurrency > 0 {
		parts = append(parts, fmt.Sprint("concurrency ", l.Concurrency))
	}
	if l.ConcurrencyPerKey > 0 {
		parts = append(parts, fmt.Sprint("per key ", l.ConcurrencyPerKey))
	}
	if l.RateLimit > 0 {
		parts = append(parts, "rate "+rateText(l))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func limitText(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func rateText(l backend.Limits) string {
	if l.RateLimit == 0 {
		return "-"
	}
	return fmt.Sprintf("%d per %s", l.RateLimit, strings.TrimSuffix(l.RatePeriod.String(), "0s"))
}
