package main

// Tests of how 'ow runs get' shows runs in the states a new user met:
// a step being retried, a canceled run's open wait, a failed run.

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// startWorker starts a worker executing defs on the env's database and
// stops it when the test ends.
func startWorker(t *testing.T, e *env, defs ...ow.Definition) *ow.Client {
	t.Helper()
	c := e.client()
	w := ow.NewWorker(c.Backend().(backend.Backend), ow.WorkerOptions{Concurrency: 2})
	if err := w.Register(defs...); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = w.Stop(ctx)
	})
	return c
}

// detailRow returns the value of the "key:" row of 'ow runs get' output,
// and whether there is one.
func detailRow(out, key string) (string, bool) {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `:\s+(.*)$`).FindStringSubmatch(out)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// stepLine returns the line of the step table that starts with name.
func stepLine(t *testing.T, out, name string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	t.Fatalf("no step %q in:\n%s", name, out)
	return ""
}

func TestRunsGetShowsARetriedStepsErrorAsTheLastStepError(t *testing.T) {
	t.Parallel()
	bothEnvs(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var attempts atomic.Int32
		retrying, release := make(chan struct{}), make(chan struct{})
		defer close(release)
		wf := ow.Define(ow.Spec{Name: "flaky"}, func(ctx ow.Context, _ struct{}) (string, error) {
			return ow.Run(ctx, "fetch", func(ctx context.Context) (string, error) {
				if attempts.Add(1) == 1 {
					return "", errors.New("upstream said 503")
				}
				close(retrying)
				select {
				case <-release:
				case <-ctx.Done():
				}
				return "ok", nil
			}, ow.WithRetryPolicy(ow.RetryPolicy{InitialInterval: 10 * time.Millisecond, BackoffCoefficient: 1, MaximumInterval: time.Second}))
		})
		c := startWorker(t, e, wf)
		h, err := wf.Start(ctx, c, struct{}{})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-retrying:
		case <-ctx.Done():
			t.Fatal("the step was never retried")
		}
		out := e.ok("runs", "get", h.ID).stdout
		if st, _ := detailRow(out, "status"); st != "running" {
			t.Fatalf("status %q, want running:\n%s", st, out)
		}
		if v, ok := detailRow(out, "error"); ok {
			t.Errorf("a running run shows its retried step's old error as the run's error: %s", v)
		}
		v, ok := detailRow(out, "last step error")
		if !ok {
			t.Fatalf("no 'last step error' row:\n%s", out)
		}
		mustContain(t, "last step error", v, "fetch", "upstream said 503", "retried")
		// The claim of the retry set the run's start again; the first
		// attempt's start is shown.
		started, _ := detailRow(out, "started")
		mustContain(t, "started", started, "first step attempt")
	})
}

func TestRunsGetShowsACanceledRunsOpenWaitAsAbandoned(t *testing.T) {
	t.Parallel()
	bothEnvs(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		wf := ow.Define(ow.Spec{Name: "await-approval"}, func(ctx ow.Context, _ struct{}) (bool, error) {
			ok, _, err := ow.WaitForSignal[bool](ctx, "approve")
			return ok, err
		})
		c := startWorker(t, e, wf)
		h, err := wf.Start(ctx, c, struct{}{})
		if err != nil {
			t.Fatal(err)
		}
		waitForSignalWait(t, ctx, c, h.ID)
		e.ok("runs", "cancel", h.ID)

		out := e.ok("runs", "get", h.ID).stdout
		line := stepLine(t, out, "approve")
		if strings.Contains(line, "running") || strings.Contains(line, "…") {
			t.Errorf("the canceled run's wait shows as still running, with a growing duration:\n%s", line)
		}
		mustContain(t, "wait step", line, "canceled")
		// The duration shown ends when the run was canceled.
		d := decode[runDetail](t, e.ok("runs", "get", h.ID, "--json"))
		if d.Run.Status != backend.RunCanceled || d.Run.FinishedAt == nil || len(d.Steps) != 1 || d.Steps[0].StartedAt == nil {
			t.Fatalf("run %+v, steps %+v", d.Run, d.Steps)
		}
		if want := formatDuration(d.Run.FinishedAt.Sub(*d.Steps[0].StartedAt)); !strings.Contains(line, "  "+want+"  ") {
			t.Errorf("the wait's duration is not %s, from its start to the cancel:\n%s", want, line)
		}
	})
}

func TestRunsGetShowsAFailedRunsStart(t *testing.T) {
	t.Parallel()
	bothEnvs(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		wf := ow.Define(ow.Spec{Name: "doomed"}, func(ctx ow.Context, _ struct{}) (string, error) {
			return ow.Run(ctx, "parse", func(context.Context) (string, error) {
				return "", ow.NonRetryable(errors.New("bad input"))
			})
		})
		c := startWorker(t, e, wf)
		h, err := wf.Start(ctx, c, struct{}{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Result(ctx); err == nil {
			t.Fatal("the run did not fail")
		}
		d := decode[runDetail](t, e.ok("runs", "get", h.ID, "--json"))
		if len(d.Steps) != 1 || d.Steps[0].StartedAt == nil {
			t.Fatalf("steps %+v", d.Steps)
		}
		out := e.ok("runs", "get", h.ID).stdout
		started, _ := detailRow(out, "started")
		mustContain(t, "started", started, formatTime(d.Steps[0].StartedAt), "first step")
		if dur, _ := detailRow(out, "duration"); dur == "-" || dur == "" {
			t.Errorf("a failed run shows no duration:\n%s", out)
		}
		mustContain(t, "runs get", out, "\n1 step attempt\n")
		if v, _ := detailRow(out, "error"); !strings.Contains(v, "bad input") {
			t.Errorf("error row %q; want the run's error", v)
		}
	})
}
