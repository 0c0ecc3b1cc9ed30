package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// jsonFlag checks a flag's JSON value, saying how to quote it when it is
// not JSON.
func jsonFlag(name, value string) (json.RawMessage, error) {
	if !json.Valid([]byte(value)) {
		var v any
		err := json.Unmarshal([]byte(value), &v)
		return nil, fmt.Errorf("invalid --%s %q: not JSON (%v); quote strings, e.g. --%s '\"text\"' or --%s '{\"ok\":true}'", name, value, err, name, name)
	}
	return json.RawMessage(value), nil
}

// timeFlag parses an RFC 3339 time flag.
func timeFlag(name, value string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid --%s %q: want an RFC 3339 time, e.g. %s", name, value, time.Now().UTC().Add(time.Hour).Format(time.RFC3339))
	}
	return t, nil
}

func (a *app) runsStartCommand() *cobra.Command {
	var (
		input, version, key, startAt, deadline, concurrencyKey string
		singletonKey, singletonMode                            string
		singletonSkipError                                     bool
		delay                                                  time.Duration
		wait                                                   bool
		debounceKey                                            string
		debounce, debounceMax                                  time.Duration
		debounceLeading                                        bool
		priority                                               int
		attrs                                                  []string
		fairnessKey                                            string
		fairnessWeight                                         float64
	)
	c := &cobra.Command{
		Use:   "start <workflow>",
		Short: "Start a run of a workflow",
		Long: `Start a run of a workflow registered on some worker, with JSON input, and
print its id. A worker that has the workflow executes it; with --wait the
command waits for the run to finish and prints its output (exit status 1
if it failed or was canceled).

  ow runs start greet --input '"ada"' --wait
  ow runs start nightly-report --delay 1h --idempotency-key 2026-11-23
  ow runs start sync-account --input '"c-42"' --concurrency-key c-42 --priority 10
  ow runs start sync-account --attr customer=c-42 --attr amount=12 --attr 'tags=["eu","vip"]'
  ow runs start deploy --input '"main"' --singleton main --singleton-mode cancel
  ow runs start reindex --input '"c-42"' --debounce-key c-42 --debounce 2s --debounce-max 1m
  ow runs start import --input '"t-7"' --fairness-key t-7 --fairness-weight 2

With --singleton, at most one run of the workflow per key is active (not
finished): --singleton-mode skip (the default) starts nothing and prints
the key's active run (exit status 1 with --singleton-skip-error), queue
starts the run held until the key's earlier runs end, one at a time, and
cancel cancels the key's active runs, then starts this one.

With --debounce-key, a start of the workflow with that key joins the run a
previous start made if no worker has claimed it yet: that run is then due
--debounce after this start (never later than --debounce-max after the
burst's first start) and takes this input (the last one wins; with
--debounce-leading the first one stays).

With --fairness-key, the run waits in the fair queue: when runs of many
keys wait, claims take turns between the keys, a key of --fairness-weight
2 about twice as often as one of weight 1 (ow fair-queues lists them).`,
		Args: exactArgs("workflow"),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw := json.RawMessage("null")
			var err error
			if cmd.Flags().Changed("input") {
				if raw, err = jsonFlag("input", input); err != nil {
					return err
				}
			}
			var opts []ow.StartOption
			if key != "" {
				opts = append(opts, ow.WithIdempotencyKey(key))
			}
			switch {
			case startAt != "" && delay != 0:
				return errors.New("give --start-at or --delay, not both")
			case startAt != "":
				t, err := timeFlag("start-at", startAt)
				if err != nil {
					return err
				}
				opts = append(opts, ow.WithStartAt(t))
			case delay < 0:
				return fmt.Errorf("invalid --delay %s: want a positive duration, e.g. 90s or 2h", delay)
			case delay > 0:
				opts = append(opts, ow.WithStartAt(time.Now().Add(delay)))
			}
			if deadline != "" {
				t, err := timeFlag("deadline", deadline)
				if err != nil {
					return err
				}
				opts = append(opts, ow.WithDeadline(t))
			}
			if concurrencyKey != "" {
				if err := backend.ValidateConcurrencyKey(concurrencyKey); err != nil {
					return fmt.Errorf("invalid --concurrency-key: want text of at most %d bytes", backend.MaxConcurrencyKeyLength)
				}
				opts = append(opts, ow.WithConcurrencyKey(concurrencyKey))
			}
			if priority > backend.MaxPriority || priority < -backend.MaxPriority {
				return fmt.Errorf("invalid --priority %d: want a whole number from %d to %d", priority, -backend.MaxPriority, backend.MaxPriority)
			}
			opts = append(opts, ow.WithPriority(priority))
			if cmd.Flags().Changed("singleton") {
				mode, err := backend.ParseSingletonMode(singletonMode)
				if err != nil {
					return fmt.Errorf("invalid --singleton-mode %q: want skip, queue or cancel", singletonMode)
				}
				if err := (backend.Singleton{Key: singletonKey, Mode: mode}).Validate(); err != nil {
					return fmt.Errorf("invalid --singleton: %w", err)
				}
				opts = append(opts, ow.WithSingleton(singletonKey, mode))
				if singletonSkipError {
					opts = append(opts, ow.WithSingletonSkipError())
				}
			} else if cmd.Flags().Changed("singleton-mode") || singletonSkipError {
				return errors.New("--singleton-mode and --singleton-skip-error need --singleton <key>")
			}
			switch {
			case debounceKey != "":
				if debounce <= 0 {
					return fmt.Errorf("--debounce-key needs --debounce, the quiet period after the latest start, e.g. --debounce 2s")
				}
				opts = append(opts, ow.WithDebounce(ow.Debounce{Key: debounceKey, Period: debounce, MaxDelay: debounceMax, Leading: debounceLeading}))
			case debounce != 0 || debounceMax != 0 || debounceLeading:
				return fmt.Errorf("--debounce, --debounce-max and --debounce-leading need --debounce-key, the key of the burst")
			}
			switch {
			case cmd.Flags().Changed("fairness-key"):
				if err := (backend.Fairness{Key: fairnessKey, Weight: fairnessWeight}).Validate(); err != nil {
					return fmt.Errorf("invalid --fairness-key or --fairness-weight: %w", err)
				}
				opts = append(opts, ow.WithFairness(fairnessKey, fairnessWeight))
			case cmd.Flags().Changed("fairness-weight"):
				return errors.New("--fairness-weight needs --fairness-key, the key whose share it weighs")
			}
			if len(attrs) > 0 {
				sa, err := attrFlags(attrs)
				if err != nil {
					return err
				}
				opts = append(opts, ow.WithSearchAttributes(sa))
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			h, err := ow.NewClient(b).StartByName(cmd.Context(), args[0], version, raw, opts...)
			if err != nil {
				return err
			}
			if err := h.Conflict(); err != nil {
				return err // the key started a run of another input: this one's was dropped
			}
			verb := "started run"
			switch {
			case h.Reused:
				verb = "the key already started run" // a replay: nothing new was started
			case h.SingletonSkipped:
				verb = "nothing started: the singleton key has active run" // mode skip
			case cmd.Flags().Changed("fairness-key") && h.Run != nil && h.Run.Status == backend.RunPending && h.Run.AvailableAt == nil && h.Run.QueuedAt == nil && !h.Run.Paused():
				verb = fmt.Sprintf("started run (in the fair queue of key %q)", fairnessKey)
			case h.Run != nil && h.Run.Status == backend.RunPending && h.Run.AvailableAt == nil && h.Run.QueuedAt == nil && !h.Run.Paused():
				verb = "started run (held until the singleton key's earlier runs end)"
			case h.Debounced:
				verb = "debounced into pending run" // joined the burst's run
			}
			if !wait {
				if a.jsonOut {
					return a.printJSON(h.Run)
				}
				fmt.Fprintf(a.stdout, "%s %s (%s)\n", verb, h.ID, args[0])
				fmt.Fprintf(a.stderr, "follow it with: ow runs get %s\n", h.ID)
				return nil
			}
			fmt.Fprintf(a.stderr, "%s %s (%s); waiting for it to finish (Ctrl-C stops waiting, not the run)\n", verb, h.ID, args[0])
			return a.printResult(cmd, h)
		},
	}
	f := c.Flags()
	f.StringVar(&input, "input", "", "the run's JSON input (default null)")
	f.StringArrayVar(&attrs, "attr", nil, `a search attribute name=value, repeatable: a JSON number, true/false or array of strings is typed so, anything else is a keyword (--attr customer=c-42 --attr amount=12 --attr 'tags=["eu","vip"]')`)
	f.StringVar(&version, "version", "", "the workflow version (default: unversioned)")
	f.StringVar(&key, "idempotency-key", "", "a repeated start with this key within 24 h returns the first run (an error if its input differs)")
	f.DurationVar(&delay, "delay", 0, "start after this duration, e.g. 90s")
	f.StringVar(&startAt, "start-at", "", "start at this RFC 3339 time")
	f.StringVar(&deadline, "deadline", "", "fail the run if it has not finished by this RFC 3339 time")
	f.BoolVar(&wait, "wait", false, "wait for the run to finish and print its output")
	f.StringVar(&concurrencyKey, "concurrency-key", "", "the key the per-key limits of the workflow count the run under, e.g. a customer id")
	f.IntVar(&priority, "priority", 0, "claims take pending runs of higher priority first (negative: after the default 0)")
	f.StringVar(&singletonKey, "singleton", "", "a singleton key: at most one active run of the workflow per key (see --singleton-mode)")
	f.StringVar(&singletonMode, "singleton-mode", "skip", "what a start does when the key has an active run: skip, queue or cancel")
	f.BoolVar(&singletonSkipError, "singleton-skip-error", false, "with --singleton-mode skip, fail (exit status 1) when nothing was started")
	f.StringVar(&debounceKey, "debounce-key", "", "debounce the start under this key: join the pending run of the key, if any (needs --debounce)")
	f.DurationVar(&debounce, "debounce", 0, "with --debounce-key: the run is due this long after the latest start, e.g. 2s")
	f.DurationVar(&debounceMax, "debounce-max", 0, "with --debounce-key: the longest wait from the burst's first start (default 1h)")
	f.BoolVar(&debounceLeading, "debounce-leading", false, "with --debounce-key: keep the first start's input rather than the latest")
	f.StringVar(&fairnessKey, "fairness-key", "", "put the run under fair shares with this key (a tenant): claims take turns between keys")
	f.Float64Var(&fairnessWeight, "fairness-weight", 0, "with --fairness-key: the key's share relative to other keys' (default 1; 0.001 to 1000)")
	return c
}

func (a *app) runsRetryCommand() *cobra.Command {
	var deadline string
	c := &cobra.Command{
		Use:   "retry <run-id>",
		Short: "Retry a failed run from its failed step",
		Long: `Retry a failed run: it becomes pending again and a worker executes it from
where it failed. Its completed steps keep their results and are not
executed again; the failed step gets a fresh retry budget. A DAG run that
began to compensate is refused (its completed steps were undone): start a
new run instead.`,
		Args: exactArgs("run-id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := backend.RetryWorkflowRunParams{WorkflowRunID: args[0]}
			if deadline != "" {
				t, err := timeFlag("deadline", deadline)
				if err != nil {
					return err
				}
				p.DeadlineAt = &t
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			run, err := ow.NewClient(b).RetryRun(cmd.Context(), p)
			if errors.Is(err, backend.ErrRunNotFailed) {
				return fmt.Errorf("run %q has not failed; only a failed run can be retried (see its status with 'ow runs get %s')", args[0], args[0])
			}
			if errors.Is(err, ow.ErrRunNotRetryable) {
				return fmt.Errorf("%w (start a new run with 'ow runs start', or copy this one from a step with 'ow runs fork %s --from-step <step>')", err, args[0])
			}
			if err != nil {
				return runError(err, args[0])
			}
			if a.jsonOut {
				return a.printJSON(run)
			}
			fmt.Fprintf(a.stdout, "retrying run %s (%s) from its failed step\n", run.ID, run.WorkflowName)
			return nil
		},
	}
	c.Flags().StringVar(&deadline, "deadline", "", "the retried run's deadline, an RFC 3339 time (default none)")
	return c
}

func (a *app) runsTailCommand() *cobra.Command {
	var stream string
	var after int64
	c := &cobra.Command{
		Use:         "tail <run-id>",
		Annotations: readsOnly(),
		Short:       "Print a run's stream as its steps write it",
		Long: `Print the chunks a run's steps write to a stream (ow.OpenStream): those
written so far, then new ones as they come, until the stream is closed or
the run finishes. The bytes go to stdout as they are; with --json, one
JSON object per chunk. Without --stream, the run's only stream is tailed
(the command waits for it if the run has written none yet).`,
		Args: exactArgs("run-id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			ctx, c := cmd.Context(), ow.NewClient(b)
			if _, err := c.GetRun(ctx, args[0]); err != nil {
				return runError(err, args[0])
			}
			if stream == "" {
				if stream, err = onlyStream(ctx, c, args[0]); err != nil || stream == "" {
					return err
				}
			}
			enc := json.NewEncoder(a.stdout)
			for ch, err := range c.TailStream(ctx, args[0], stream, after) {
				if err != nil {
					return err
				}
				if a.jsonOut {
					if err := enc.Encode(ch); err != nil {
						return err
					}
					continue
				}
				if _, err := a.stdout.Write(ch.Data); err != nil {
					return err
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&stream, "stream", "", "the stream's name (default: the run's only stream)")
	c.Flags().Int64Var(&after, "after", 0, "start after this chunk (its seq, as --json prints)")
	return c
}

// onlyStream waits for the run's streams and returns its only one; "" if
// the run ended without writing any.
func onlyStream(ctx context.Context, c *ow.Client, runID string) (string, error) {
	for {
		streams, err := c.ListStreams(ctx, runID)
		if err != nil {
			return "", err
		}
		switch len(streams) {
		case 1:
			return streams[0].Stream, nil
		case 0:
		default:
			names := make([]string, len(streams))
			for i, s := range streams {
				names[i] = s.Stream
			}
			slices.Sort(names)
			return "", fmt.Errorf("run %s has %d streams (%s): choose one with --stream", runID, len(names), oneOf(names...))
		}
		run, err := c.GetRun(ctx, runID)
		if err != nil {
			return "", err
		}
		if run.Status.Terminal() {
			return "", nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (a *app) hooksCommand() *cobra.Command {
	var payload string
	resume := &cobra.Command{
		Use:   "resume <token>",
		Short: "Deliver a payload to the hook holding a token",
		Long: `Deliver a JSON payload to the live hook holding a token (ow.CreateHook):
the workflow receives it with Hook.Receive, in the order payloads came,
each once; a run parked waiting on the hook is woken at once. A payload the
hook's schema refuses (ow.WithPayloadSchema; an OpenFlow suspend's hook
wants {"approved": true|false, "approver", "payload"}) is not delivered:
the command fails naming what is wrong, and the run keeps waiting.`,
		Args: exactArgs("token"),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw := json.RawMessage("null")
			var err error
			if cmd.Flags().Changed("payload") {
				if raw, err = jsonFlag("payload", payload); err != nil {
					return err
				}
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			hook, p, err := ow.NewClient(b).ResumeHook(cmd.Context(), args[0], raw)
			if errors.Is(err, backend.ErrHookNotFound) {
				return fmt.Errorf("no live hook holds token %q: the run that created it may have finished (hooks end with their run), or the token is mistyped", args[0])
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"hookId": hook.ID, "runId": hook.WorkflowRunID, "seq": p.Seq})
			}
			fmt.Fprintf(a.stdout, "payload %d delivered to hook %s of run %s\n", p.Seq, hook.StepName, hook.WorkflowRunID)
			return nil
		},
	}
	resume.Flags().StringVar(&payload, "payload", "", "the JSON payload (default null)")
	return groupCommand("hooks", "Resume runs waiting on hooks", resume)
}

func (a *app) runsForkCommand() *cobra.Command {
	var fromStep string
	var wait bool
	c := &cobra.Command{
		Use:   "fork <run-id> --from-step <step>",
		Short: "Start a new run of a run's workflow and input that reuses its results before a step",
		Long: `Fork a run: start a new run of the same workflow and input whose history
starts with the results the run recorded for its steps before --from-step.
A worker replays those steps from their results without executing them
again, then executes --from-step and everything after it. The run itself
is left as it is, whatever its status.

--from-step is a step's name as 'ow runs get <run-id>' lists it
("charge", or "charge:1" for the second call of a step name).`,
		Example: `  ow runs get wrun_01J…            # the steps and their names
  ow runs fork wrun_01J… --from-step charge --wait`,
		Args: exactArgs("run-id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if fromStep == "" {
				return fmt.Errorf("--from-step is required: the name of the first step to execute again (see 'ow runs get %s')", args[0])
			}
			_, b, err := a.openBackend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			c := ow.NewClient(b)
			h, err := c.ForkRun(cmd.Context(), args[0], fromStep)
			if errors.Is(err, backend.ErrInvalidArgument) {
				return fmt.Errorf("%w\n(see the run's steps with 'ow runs get %s')", err, args[0])
			}
			if err != nil {
				return runError(err, args[0])
			}
			if !wait {
				if a.jsonOut {
					return a.printJSON(h.Run)
				}
				fmt.Fprintf(a.stdout, "forked run %s from step %q: new run %s (%s)\n", args[0], fromStep, h.ID, h.WorkflowName)
				return nil
			}
			fmt.Fprintf(a.stderr, "forked run %s from step %q: new run %s; waiting for it to finish (Ctrl-C stops waiting, not the run)\n", args[0], fromStep, h.ID)
			return a.printResult(cmd, h)
		},
	}
	c.Flags().StringVar(&fromStep, "from-step", "", "the first step to execute again; the steps before it are reused (required)")
	c.Flags().BoolVar(&wait, "wait", false, "wait for the new run to finish and print its output")
	return c
}

// printResult waits for run h to finish and prints its output.
func (a *app) printResult(cmd *cobra.Command, h *ow.RunHandle) error {
	out, err := h.Result(cmd.Context())
	if err != nil {
		return err
	}
	if a.jsonOut {
		return a.printJSON(out)
	}
	fmt.Fprintln(a.stdout, string(out))
	return nil
}

// attrFlags parses --attr name=value flags: a value that is a JSON number,
// boolean or array is that (numbers kept exact), anything else a keyword
// (a string; a name declared as a time takes an RFC 3339 string).
func attrFlags(flags []string) (backend.SearchAttributes, error) {
	attrs := backend.SearchAttributes{}
	for _, f := range flags {
		name, value, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("invalid --attr %q: want name=value, e.g. --attr customer=c-42", f)
		}
		var v any = value
		dec := json.NewDecoder(strings.NewReader(value))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err == nil && !dec.More() {
			switch x.(type) {
			case json.Number, bool, []any:
				v = x
			}
		}
		attrs[name] = v
	}
	if err := attrs.Validate(); err != nil {
		return nil, fmt.Errorf("invalid --attr: %w", err)
	}
	return attrs, nil
}
