package main

import (
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/openworkflow-go/openworkflow/backend"
)

func (a *app) fairQueuesCommand() *cobra.Command {
	var limit int
	var after string
	c := &cobra.Command{
		Use:         "fair-queues",
		Annotations: readsOnly(),
		Short:       "List the per-key queues of fair shares",
		Long: `List the namespace's fairness keys (runs started with --fairness-key,
ow.WithFairness or a Spec's Fairness), by key: each key's weight, its
runs waiting in the fair queue and those started and not finished, the
lowest pass among its waiting runs and the pass its last run got, and
how long its oldest waiting run has been due. VTIME is the highest pass
a claim took: a key's next run is claimed about when it reaches the
key's next pass. --after pages on from a key.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			l, ok := b.(backend.FairQueueLister)
			if !ok {
				return errors.New("this backend lists no fair queues")
			}
			page, err := l.ListFairQueues(cmd.Context(), backend.ListFairQueuesParams{Limit: limit, After: after})
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(page)
			}
			if len(page.Queues) == 0 {
				fmt.Fprintln(a.stdout, "no run was started under fair shares")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tWEIGHT\tQUEUED\tRUNNING\tNEXT PASS\tLAST PASS\tOLDEST WAIT")
			for _, q := range page.Queues {
				next, wait := "-", "-"
				if q.NextPass != nil {
					next = strconv.FormatInt(*q.NextPass, 10)
				}
				if q.OldestQueuedAt != nil {
					wait = time.Since(*q.OldestQueuedAt).Round(time.Millisecond).String()
				}
				fmt.Fprintf(tw, "%s\t%g\t%d\t%d\t%s\t%d\t%s\n", q.Key, q.Weight, q.Queued, q.Running, next, q.LastPass, wait)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "VTIME %d\n", page.VTime)
			if page.Next != nil {
				fmt.Fprintf(a.stderr, "more keys: ow fair-queues --after %q\n", *page.Next)
			}
			return nil
		},
	}
	c.Flags().IntVar(&limit, "limit", backend.DefaultPageSize, "at most this many keys")
	c.Flags().StringVar(&after, "after", "", "list the keys after this one (the next page)")
	return c
}
