package openworkflow_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// describeRecord renders what LookupStep returned, for comparisons.
func describeRecord(rec ow.StepRecord, ok bool) string {
	if !ok {
		return "none"
	}
	s := fmt.Sprintf("%s %s", rec.Kind, rec.Status)
	if rec.Output != nil {
		s += " " + string(rec.Output)
	}
	if rec.Error != nil {
		s += " error=" + rec.Error.Message
	}
	if rec.StartedAt.IsZero() {
		s += " no-start"
	}
	if rec.Status != backend.StepRunning && rec.FinishedAt.IsZero() {
		s += " no-finish"
	}
	return s
}

func TestLookupStepSeesRecordedAttemptsWithoutExecutingOrUsingTheKey(t *testing.T) {
	t.Parallel()
	t.Run("on "+testBackend(), func(t *testing.T) {
		b := openTestBackend(t, nil)
		var (
			passes atomic.Int32
			mu     sync.Mutex
			seen   = map[int]map[string]string{}
		)
		wf := ow.Define(ow.Spec{Name: "lookup"}, func(ctx ow.Context, _ int) (int, error) {
			pass := int(passes.Add(1))
			got := map[string]string{}
			got["ok before"] = describeRecord(ow.LookupStep(ctx, "ok"))
			if _, err := ow.Run(ctx, "ok", func(context.Context) (int, error) { return 7, nil }); err != nil {
				return 0, err
			}
			got["ok after"] = describeRecord(ow.LookupStep(ctx, "ok"))
			if pass == 1 {
				// A failure the workflow does not return: recorded, and
				// not called again on the next pass.
				_, _ = ow.Run(ctx, "bad", func(context.Context) (int, error) { return 0, errors.New("boom") })
				started, release := make(chan struct{}), make(chan struct{})
				f := ow.Go(ctx, "slow", func(context.Context) (int, error) { close(started); <-release; return 1, nil })
				<-started
				got["slow while executing"] = describeRecord(ow.LookupStep(ctx, "slow"))
				close(release)
				if _, err := f.Get(); err != nil {
					return 0, err
				}
			}
			got["bad"] = describeRecord(ow.LookupStep(ctx, "bad"))
			got["missing"] = describeRecord(ow.LookupStep(ctx, "missing"))
			mu.Lock()
			seen[pass] = got
			mu.Unlock()
			if err := ow.Sleep(ctx, "nap", 20*time.Millisecond); err != nil {
				return 0, err
			}
			got["nap after"] = describeRecord(ow.LookupStep(ctx, "nap"))
			return pass, nil
		})
		ctx := startWorker(t, b, ow.WorkerOptions{}, wf)
		h, err := wf.Start(ctx, ow.NewClient(b), 0)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := h.Result(ctx); err != nil || out != 2 {
			t.Fatalf("Result = %d, %v; want 2 (one park)", out, err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := map[int]map[string]string{
			1: {
				"ok before": "none", "ok after": "function completed 7",
				"slow while executing": "function running",
				"bad":                  "function failed error=boom", "missing": "none",
			},
			2: {
				"ok before": "function completed 7", "ok after": "function completed 7",
				"bad": "function failed error=boom", "missing": "none", "nap after": "sleep completed null",
			},
		}
		for pass, w := range want {
			for k, v := range w {
				if seen[pass][k] != v {
					t.Errorf("pass %d, %s: LookupStep saw %q, want %q", pass, k, seen[pass][k], v)
				}
			}
		}
		page, err := ow.NewClient(b).ListSteps(ctx, backend.ListStepAttemptsParams{WorkflowRunID: h.ID})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, a := range page.Data {
			names = append(names, a.StepName)
		}
		if fmt.Sprint(names) != "[ok bad slow nap]" {
			t.Errorf("durable keys %v, want [ok bad slow nap]: a lookup must not use its key", names)
		}
	})

	t.Run("outside a workflow pass", func(t *testing.T) {
		if rec, ok := ow.LookupStep(nil, "ok"); ok {
			t.Fatalf("LookupStep(nil) = %+v, true; want false", rec)
		}
	})
}
