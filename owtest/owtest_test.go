package owtest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/owtest"
)

var greet = ow.Define(ow.Spec{Name: "greet"}, func(ctx ow.Context, name string) (string, error) {
	upper, err := ow.Run(ctx, "shout", func(context.Context) (string, error) { return strings.ToUpper(name), nil })
	if err != nil {
		return "", err
	}
	if err := ow.Sleep(ctx, "pause", time.Hour); err != nil {
		return "", err
	}
	return "hello, " + upper, nil
})

func TestAnEnvMovesARunAsItsClockIsAdvanced(t *testing.T) {
	env := owtest.New(t, ow.WorkerOptions{}, greet)
	h, err := greet.Start(t.Context(), env.Client, "ada")
	if err != nil {
		t.Fatal(err)
	}
	env.Drain()
	if r := env.Run(h.ID); r.Status != backend.RunRunning || r.WorkerID != nil {
		t.Fatalf("after the first drain the run is %s under %v, want parked on its sleep", r.Status, r.WorkerID)
	}
	env.Clock.Advance(time.Hour - time.Second)
	if n := env.Tick(); n != 0 {
		t.Fatalf("a second before the sleep ends, %d runs were claimed", n)
	}
	env.Clock.Advance(time.Second)
	env.Drain()
	out, err := h.Result(t.Context())
	if err != nil || out != "hello, ADA" {
		t.Fatalf("result %q, %v; want hello, ADA", out, err)
	}
	if steps := env.Steps(h.ID); len(steps) != 2 {
		t.Fatalf("%d step attempts, want the step and the sleep", len(steps))
	}
}

var nightly = ow.Define(ow.Spec{Name: "nightly"}, func(ctx ow.Context, team string) (string, error) {
	return team + " @ " + ctx.RunInfo().Schedule.ScheduledAt.Format(time.RFC3339), nil
})

func TestAnEnvFiresSchedulesAsItsClockIsAdvanced(t *testing.T) {
	env := owtest.New(t, ow.WorkerOptions{}, nightly)
	if _, err := env.Client.PutSchedule(t.Context(), ow.ScheduleSpec{Name: "n", Workflow: "nightly", Cron: "0 2 * * *", Input: "ops"}); err != nil {
		t.Fatal(err)
	}
	env.Drain()
	if n := env.FireSchedules(); n != 0 {
		t.Fatalf("before 02:00 a tick started %d runs", n)
	}
	env.Clock.Advance(22*time.Hour + 56*time.Minute) // 2026-01-03 02:00:05: the tick of 02:00 has come
	env.Drain()
	page, err := env.Client.ListRuns(t.Context(), backend.ListWorkflowRunsParams{})
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("runs after the tick: %d, %v", len(page.Data), err)
	}
	if r := env.Run(page.Data[0].ID); r.Status != backend.RunCompleted || string(r.Output) != `"ops @ 2026-01-03T02:00:00Z"` {
		t.Fatalf("the tick's run: %s, output %s", r.Status, r.Output)
	}
}

func TestAnEnvSkipsTicksOlderThanTheCatchUpWindow(t *testing.T) {
	env := owtest.New(t, ow.WorkerOptions{}, nightly)
	if _, err := env.Client.PutSchedule(t.Context(), ow.ScheduleSpec{Name: "n", Workflow: "nightly", Cron: "0 2 * * *", Input: "ops"}); err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(23 * time.Hour) // 02:04:05: the tick of 02:00 is 4 min old, the window 1 min
	if n := env.FireSchedules(); n != 0 {
		t.Fatalf("a tick older than the catch-up window started %d runs", n)
	}
	if s, err := env.Client.GetSchedule(t.Context(), "n"); err != nil || s.Missed != 1 {
		t.Fatalf("schedule %+v, %v; want the tick counted as missed", s, err)
	}
}
