package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// eventsCommand is 'ow events': publish and list events.
func (a *app) eventsCommand() *cobra.Command {
	return groupCommand("events", "Publish and list events (event-triggered workflows, cancelOn)",
		a.eventsPublishCommand(), a.eventsListCommand(), a.eventsGetCommand())
}

func (a *app) eventsPublishCommand() *cobra.Command {
	var data, id, key string
	cmd := &cobra.Command{
		Use:   "publish <name>",
		Short: "Publish an event: start the workflows it triggers, cancel the runs it cancels",
		Long: `Publish an event with optional JSON data (default {}). In the same
transaction every workflow whose trigger (ow.Spec.Triggers) matches starts
one run with the event as input, the runs matching a cancelOn declaration
are canceled, and runs waiting for the event get it. --id is an idempotency
key: publishing again with it within 24 hours reports the first event and
does nothing. --key is a key the event carries (the runs it starts get it
as their concurrency key).`,
		Args: exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var raw json.RawMessage
			if cmd.Flags().Changed("data") {
				if !json.Valid([]byte(data)) {
					return fmt.Errorf("invalid --data %q: not JSON; quote strings, e.g. --data '\"text\"' or --data '{\"amount\":150}'", data)
				}
				raw = json.RawMessage(data)
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			p, err := ow.NewClient(b).PublishEvent(cmd.Context(), args[0], raw, ow.PublishOptions{IdempotencyKey: id, Key: key})
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(p)
			}
			switch {
			case p.Duplicate:
				fmt.Fprintf(a.stdout, "event %s was published before with idempotency key %q; nothing done\n", p.ID, id)
			default:
				fmt.Fprintf(a.stdout, "event %s published; started %d run(s)%s, canceled %d run(s)%s\n", p.ID,
					len(p.Started), list(p.Started), len(p.Canceled), list(p.Canceled))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "JSON payload (default {})")
	cmd.Flags().StringVar(&id, "id", "", "idempotency key: a second publish with it within 24 h does nothing")
	cmd.Flags().StringVar(&key, "key", "", "a key the event carries")
	return cmd
}

func list(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return " (" + strings.Join(ids, ", ") + ")"
}

func (a *app) eventsListCommand() *cobra.Command {
	var name, cursor string
	var limit int
	cmd := &cobra.Command{
		Use:         "list",
		Short:       "List events, newest first",
		Args:        exactArgs(),
		Annotations: readsOnly(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkPageFlags(limit, cursor, backend.DecodeEventCursor, "ow events list"); err != nil {
				return err
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			page, err := ow.NewClient(b).ListEvents(cmd.Context(), backend.ListEventsParams{Name: name, Limit: limit, After: cursor})
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(page)
			}
			if len(page.Data) == 0 {
				fmt.Fprintln(a.stdout, "no events")
				return nil
			}
			for _, e := range page.Data {
				data := string(e.Data)
				if len(data) > 60 {
					data = data[:57] + "..."
				}
				fmt.Fprintf(a.stdout, "%s  %s  %-24s %s\n", e.ID, e.CreatedAt.Format("2006-01-02 15:04:05.000"), e.Name, data)
			}
			if page.Next != nil {
				fmt.Fprintf(a.stdout, "more: ow events list --cursor %s\n", *page.Next)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "only events of this name")
	cmd.Flags().IntVar(&limit, "limit", backend.DefaultPageSize, "page size")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the cursor a previous page printed")
	return cmd
}

func (a *app) eventsGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:         "get <event-id>",
		Short:       "Show an event and what it did (runs started, woken, canceled; condition errors)",
		Args:        exactArgs("event-id"),
		Annotations: readsOnly(),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			e, err := ow.NewClient(b).GetEvent(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(e)
			}
			fmt.Fprintf(a.stdout, "%s %s at %s\ndata: %s\n", e.ID, e.Name, e.CreatedAt.Format("2006-01-02 15:04:05.000"), e.Data)
			for _, f := range e.Effects {
				run, msg := "", ""
				if f.WorkflowRunID != nil {
					run = " " + *f.WorkflowRunID
				}
				if f.Message != nil {
					msg = ": " + *f.Message
				}
				fmt.Fprintf(a.stdout, "  %-8s %s%s%s\n", f.Kind, f.WorkflowName, run, msg)
			}
			return nil
		},
	}
}
