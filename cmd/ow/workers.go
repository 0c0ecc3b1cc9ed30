package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
)

// typeScriptNote says who is missing from the registry of workers.
const typeScriptNote = "TypeScript workers write no record: their runs show the slot ids they hold (ow runs list --status running)"

func (a *app) workersCommand() *cobra.Command {
	return &cobra.Command{
		Use:         "workers",
		Annotations: readsOnly(),
		Short:       "List the namespace's Go workers: state, slots, registered workflows",
		Long: `List the Go workers of the namespace from the registry of workers: each
worker writes its record when it starts, every 10 s (WorkerOptions.RegistryInterval)
and when it stops. STATE is running (idle ones included), draining (stopping,
its runs finishing), stopped, or gone (no heartbeat for 3 intervals: its
process died or lost the database); a worker silent for 24 h is forgotten.
SLOTS is slots in use / slots at the last heartbeat. TypeScript workers
write no record. With --json, the records as GET /v1/workers answers them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			ws, err := ow.NewClient(b).ListWorkers(cmd.Context())
			if err != nil {
				return err
			}
			if a.jsonOut {
				out := make([]api.Worker, 0, len(ws))
				for i := range ws {
					out = append(out, api.WorkerOf(&ws[i]))
				}
				return a.printJSON(out)
			}
			if len(ws) == 0 {
				fmt.Fprintln(a.stdout, "no Go worker has written a record in the last 24 h; start one (ow dev, ow worker, or your program's ow.Worker)")
				fmt.Fprintln(a.stdout, typeScriptNote)
				return nil
			}
			now := time.Now()
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKER\tSTATE\tHOST\tPID\tSDK\tSLOTS\tLAST HEARTBEAT\tWORKFLOWS")
			for _, w := range ws {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s %s\t%d/%d\t%s ago\t%s\n", w.ID, w.State, w.Host, w.PID, w.SDK, w.SDKVersion,
					w.InUse, w.Concurrency, formatDuration(max(0, now.Sub(w.LastHeartbeatAt)).Truncate(time.Second)), workflowNames(w.Workflows))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, typeScriptNote)
			return nil
		},
	}
}

// workflowNames lists registered workflows as name or name@version.
func workflowNames(ws []backend.RegisteredWorkflow) string {
	if len(ws) == 0 {
		return "-"
	}
	names := make([]string, len(ws))
	for i, r := range ws {
		names[i] = r.Name
		if r.Version != "" {
			names[i] += "@" + r.Version
		}
	}
	return strings.Join(names, ", ")
}

func (a *app) workflowsCommand() *cobra.Command {
	return &cobra.Command{
		Use:         "workflows",
		Annotations: readsOnly(),
		Short:       "List the namespace's workflows: who serves them, active runs, input examples",
		Long: `List the workflows of the namespace: each workflow a Go worker of the
registry registered (ow workers), with the running workers serving it and
its example input (ow.Spec.InputExample), and each workflow with pending or
running runs, registered or not. A workflow no live worker serves keeps its
runs pending until one registers it. PENDING and RUNNING count its active
runs (ow runs list --status … lists them). With --json, the summaries as
GET /v1/workflows answers them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			ss, err := ow.NewClient(b).ListWorkflows(cmd.Context())
			if err != nil {
				return err
			}
			if a.jsonOut {
				out := make([]api.WorkflowSummary, 0, len(ss))
				for i := range ss {
					out = append(out, api.WorkflowSummaryOf(&ss[i]))
				}
				return a.printJSON(out)
			}
			if len(ss) == 0 {
				fmt.Fprintln(a.stdout, "no workflow is registered by a Go worker or has active runs")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKFLOW\tVERSION\tSERVED BY\tPENDING\tRUNNING\tINPUT EXAMPLE")
			for _, s := range ss {
				served := strings.Join(s.LiveWorkers, ", ")
				if !s.Served() {
					served = "nobody"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", s.Name, orDash(&s.Version), served, s.Active.Pending, s.Active.Running, orDash(&s.InputExample))
			}
			return tw.Flush()
		},
	}
}
