package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
)

// eventsCommand is 'ow events': publish and list events.
func (a *app) eventsCommand() *cobra.Command {
	return groupCommand("events", "Publish and list events, and list or declare the workflows they trigger (triggers, cancelOn)",
		a.eventsPublishCommand(), a.eventsListCommand(), a.eventsGetCommand(),
		a.eventsTriggersCommand(), a.eventsDeclareCommand())
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

// eventsTriggersCommand is 'ow events triggers [workflow]': the stored
// triggers and cancelOn declarations (GET /v1/event-triggers).
func (a *app) eventsTriggersCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "triggers [workflow]",
		Short: "List the stored event triggers and cancelOn declarations, of every workflow or of one",
		Long: `List the declarations publishers apply: those the workers stored when
they registered workflows with ow.Spec.Triggers and ow.Spec.CancelOn, and
those declared with 'ow events declare' or PUT /v1/event-triggers. Each
line is a workflow, start or cancel, the event name, its CEL condition,
and the flow control its triggered runs get (Spec.Singleton or
Spec.Batch).`,
		Args:        cobra.MaximumNArgs(1),
		Annotations: readsOnly(),
		RunE: func(cmd *cobra.Command, args []string) error {
			workflow := ""
			if len(args) == 1 {
				workflow = args[0]
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			ts, err := ow.NewClient(b).ListEventTriggers(cmd.Context(), workflow)
			if err != nil {
				return err
			}
			if a.jsonOut {
				if ts == nil {
					ts = []backend.EventTrigger{}
				}
				return a.printJSON(ts)
			}
			if len(ts) == 0 {
				fmt.Fprintln(a.stdout, "no event triggers declared")
				return nil
			}
			for _, t := range ts {
				line := fmt.Sprintf("%-24s %-6s %s", t.WorkflowName, t.Kind, t.EventName)
				if t.Condition != "" {
					line += " if " + t.Condition
				}
				if t.Singleton != nil {
					line += fmt.Sprintf("  [singleton %s, key %q]", t.Singleton.Mode, t.Singleton.Key)
				}
				if t.Batch != nil {
					line += fmt.Sprintf("  [batched by %d or %s]", t.Batch.MaxSize, t.Batch.Timeout)
				}
				fmt.Fprintln(a.stdout, line)
			}
			return nil
		},
	}
}

// eventsDeclareCommand is 'ow events declare <workflow>':
// Client.DeclareEventTriggers (PUT /v1/event-triggers/{workflow}).
func (a *app) eventsDeclareCommand() *cobra.Command {
	var triggers, cancelOn, version string
	var none bool
	cmd := &cobra.Command{
		Use:   "declare <workflow>",
		Short: "Store the event triggers and cancelOn declarations of a workflow no Go worker registers",
		Long: `Store the triggers and cancelOn declarations of a workflow, replacing the
stored ones, for a workflow that no Go worker declares itself: one that
TypeScript workers execute, a DAG or an OpenFlow flow. --triggers and
--cancel-on are JSON arrays of {"event": name, "if": CEL condition}, as in
the body of PUT /v1/event-triggers/{workflow}. Every condition is compiled
first; a bad one is refused naming it (triggers[i], with the CEL issue's
line:column) and nothing is stored. --none removes the workflow's
declarations. A Go worker that registers the workflow with declarations
of its own replaces these when it starts.`,
		Example: `  ow events declare ship --triggers '[{"event":"order.created","if":"event.data.amount > 100.0"}]'
  ow events declare ship --cancel-on '[{"event":"order.canceled","if":"event.data.orderId == input.orderId"}]'
  ow events declare ship --none`,
		Args: exactArgs("workflow"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, err := eventDeclarationsFlag("triggers", triggers)
			if err != nil {
				return err
			}
			cs, err := eventDeclarationsFlag("cancel-on", cancelOn)
			if err != nil {
				return err
			}
			if none && (len(ts) > 0 || len(cs) > 0 || version != "") {
				return fmt.Errorf("--none removes every declaration: give it alone, without --triggers, --cancel-on or --version")
			}
			if !none && len(ts) == 0 && len(cs) == 0 {
				return fmt.Errorf("nothing to declare: give --triggers or --cancel-on (JSON arrays of {\"event\", \"if\"}), or --none to remove the declarations of %q", args[0])
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			c := ow.NewClient(b)
			var changed bool
			if none {
				changed, err = c.DeleteEventTriggers(cmd.Context(), args[0])
			} else {
				changed, err = c.DeclareEventTriggers(cmd.Context(), args[0], version, ts, cs)
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"workflow": args[0], "changed": changed})
			}
			switch {
			case none && changed:
				fmt.Fprintf(a.stdout, "removed the event declarations of %s\n", args[0])
			case none:
				fmt.Fprintf(a.stdout, "%s had no event declarations\n", args[0])
			case changed:
				fmt.Fprintf(a.stdout, "stored %d trigger(s) and %d cancelOn declaration(s) of %s\n", len(ts), len(cs), args[0])
			default:
				fmt.Fprintf(a.stdout, "the declarations of %s were already these; nothing changed\n", args[0])
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&triggers, "triggers", "", `JSON array of {"event","if"}: each matching event starts a run`)
	cmd.Flags().StringVar(&cancelOn, "cancel-on", "", `JSON array of {"event","if"}: each matching event cancels the active runs whose input it matches`)
	cmd.Flags().StringVar(&version, "version", "", "the version triggered runs start with (default: unversioned)")
	cmd.Flags().BoolVar(&none, "none", false, "remove the workflow's declarations")
	return cmd
}

// eventDeclarationsFlag reads --triggers or --cancel-on of 'ow events
// declare': a JSON array of {"event", "if"} objects, the shape of
// api.TriggerDeclaration in PUT /v1/event-triggers' body; empty gives none.
// A value of another shape is refused naming the flag and the shape.
func eventDeclarationsFlag(flag, text string) ([]ow.EventTrigger, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	var ds []api.TriggerDeclaration
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ds); err != nil {
		var ute *json.UnmarshalTypeError
		switch {
		case errors.As(err, &ute) && ute.Field != "":
			err = fmt.Errorf("a JSON %s where a string was expected (field %q)", ute.Value, ute.Field)
		case errors.As(err, &ute):
			err = fmt.Errorf(`a JSON %s where a JSON array of {"event","if"} objects was expected`, ute.Value)
		}
		return nil, fmt.Errorf("invalid --%s: %v; give a JSON array, e.g. --%s '[{\"event\":\"order.created\",\"if\":\"event.data.amount > 100.0\"}]'", flag, err, flag)
	}
	out := make([]ow.EventTrigger, len(ds))
	for i, d := range ds {
		out[i] = ow.EventTrigger{Event: d.Event, If: d.If}
	}
	return out, nil
}
