package openworkflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/testhooks"
	"github.com/openworkflow-go/openworkflow/owtest"
)

func TestSleepUntilParksUntilTheTimeAndNotBefore(t *testing.T) {
	t.Parallel()
	clock := owtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	b := openTestBackend(t, clock.Now)
	base := clock.Now()
	var passes atomic.Int32
	wf := ow.Define(ow.Spec{Name: "until"}, func(ctx ow.Context, _ int) (int, error) {
		wake := base.Add(5 * time.Second)
		if passes.Add(1) > 1 {
			wake = base.Add(time.Hour) // ignored: the time recorded first wins
		}
		if err := ow.SleepUntil(ctx, "until", wake); err != nil {
			return 0, err
		}
		return int(passes.Load()), nil
	})
	// ClaimAhead off: claims at the due time only.
	w := ow.NewWorker(b, ow.WorkerOptions{Now: clock.Now, ClaimAhead: -1, ID: "until"})
	if err := w.Register(wf); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tick := func() int {
		n, err := testhooks.Tick(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	h, err := wf.Start(ctx, ow.NewClient(b), 0)
	if err != nil {
		t.Fatal(err)
	}
	tick()
	r, err := b.GetWorkflowRun(ctx, h.ID)
	if err != nil || r.Status != backend.RunRunning || r.WorkerID != nil || r.AvailableAt == nil || !r.AvailableAt.Equal(base.Add(5*time.Second)) {
		t.Fatalf("after the first pass: %+v, %v; want parked until base+5s", r, err)
	}
	clock.Advance(5*time.Second - time.Millisecond)
	if tick() != 0 {
		t.Fatal("the run was claimed before its wake-up")
	}
	clock.Advance(time.Millisecond)
	if tick() != 1 {
		t.Fatal("the run was not claimed at its wake-up")
	}
	if got, err := h.Result(ctx); err != nil || got != 2 {
		t.Fatalf("Result = %d, %v; want 2 passes", got, err)
	}
}

func TestSleepUntilATimeNotAheadRecordsACompletedSleepAndGoesOn(t *testing.T) {
	t.Parallel()
	t.Run("on "+testBackend(), func(t *testing.T) {
		b := openTestBackend(t, nil)
		var passes atomic.Int32
		wf := ow.Define(ow.Spec{Name: "until"}, func(ctx ow.Context, wake time.Time) (int, error) {
			passes.Add(1)
			if err := ow.SleepUntil(ctx, "past", time.Now().Add(-time.Hour)); err != nil {
				return 0, err
			}
			if err := ow.SleepUntil(ctx, "until", wake); err != nil {
				return 0, err
			}
			return int(passes.Load()), nil
		})
		ctx := startWorker(t, b, ow.WorkerOptions{}, wf)
		c := ow.NewClient(b)
		wake := time.Now().Add(time.Second).UTC().Truncate(time.Millisecond)
		h, err := wf.Start(ctx, c, wake)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := h.Result(ctx); err != nil || out != 2 {
			t.Fatalf("Result = %d, %v; want 2 passes (parked once, at \"until\" only)", out, err)
		}
		run, err := c.GetRun(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		if run.FinishedAt.Before(wake) {
			t.Errorf("finished at %v, before the wake-up %v", run.FinishedAt, wake)
		}
		page, err := c.ListSteps(ctx, backend.ListStepAttemptsParams{WorkflowRunID: h.ID})
		if err != nil || len(page.Data) != 2 {
			t.Fatalf("steps %+v, %v; want past and until", page, err)
		}
		for i, name := range []string{"past", "until"} {
			a := page.Data[i]
			var sc struct{ Kind, ResumeAt string }
			_ = json.Unmarshal(a.Context, &sc)
			if a.StepName != name || a.Kind != backend.StepSleep || a.Status != backend.StepCompleted || sc.Kind != "sleep" || sc.ResumeAt == "" {
				t.Errorf("step %d = %s %s %s context %s; want %s, a completed sleep with its resumeAt", i, a.StepName, a.Kind, a.Status, a.Context, name)
			}
		}
		var until struct{ ResumeAt string }
		if err := json.Unmarshal(page.Data[1].Context, &until); err != nil || until.ResumeAt != backend.FormatTime(wake) {
			t.Errorf("until's context %s, want resumeAt %s", page.Data[1].Context, backend.FormatTime(wake))
		}
	})
}

func TestClientDefinitions(t *testing.T) {
	t.Parallel()
	t.Run("on "+testBackend(), func(t *testing.T) {
		b := openTestBackend(t, nil)
		ctx := context.Background()
		c := ow.NewClient(b)
		if _, err := c.PutDefinition(ctx, "dag", "order", json.RawMessage(`{"v":1}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutDefinition(ctx, "dag", "order", json.RawMessage(`{"v":2}`)); err != nil {
			t.Fatal(err)
		}
		d, err := c.GetDefinition(ctx, "dag", "order")
		if err != nil || string(d.Body) != `{"v": 2}` && string(d.Body) != `{"v":2}` {
			t.Fatalf("GetDefinition = %+v, %v", d, err)
		}
		page, err := c.ListDefinitions(ctx, backend.ListDefinitionsParams{Kind: "dag"})
		if err != nil || len(page.Data) != 1 || page.Data[0].Name != "order" {
			t.Fatalf("ListDefinitions = %+v, %v", page, err)
		}
		if _, err := c.GetDefinition(ctx, "dag", "other"); !errors.Is(err, backend.ErrDefinitionNotFound) {
			t.Fatalf("GetDefinition of a missing one: %v", err)
		}
	})

	t.Run("a backend without the capability", func(t *testing.T) {
		c := ow.NewClient(struct{ backend.Backend }{})
		if _, err := c.PutDefinition(context.Background(), "dag", "x", json.RawMessage(`{}`)); !errors.Is(err, backend.ErrNotSupported) {
			t.Fatalf("PutDefinition: %v, want ErrNotSupported", err)
		}
		if _, err := c.GetDefinition(context.Background(), "dag", "x"); !errors.Is(err, backend.ErrNotSupported) {
			t.Fatalf("GetDefinition: %v, want ErrNotSupported", err)
		}
		if _, err := c.ListDefinitions(context.Background(), backend.ListDefinitionsParams{}); !errors.Is(err, backend.ErrNotSupported) {
			t.Fatalf("ListDefinitions: %v, want ErrNotSupported", err)
		}
	})
}
