package openworkflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
	"github.com/openworkflow-go/openworkflow/owtest"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// sharedBackends opens n backends of this round's kind on one store (one
// SQLite file, one PostgreSQL schema) and one clock: n processes' worth.
func sharedBackends(t *testing.T, n int, now func() time.Time) []backend.Backend {
	t.Helper()
	var bs []backend.Backend
	schema, path := "", filepath.Join(t.TempDir(), "ow.db")
	if testBackend() == "postgres" {
		first := pgtest.Open(t, postgres.Options{Now: now})
		schema, bs = first.Schema(), append(bs, first)
	}
	for len(bs) < n {
		var b backend.Backend
		var err error
		if schema != "" {
			b, err = postgres.Open(context.Background(), pgtest.URL(), postgres.Options{Schema: schema, Now: now})
		} else {
			b, err = sqlite.Open(context.Background(), path, sqlite.Options{Now: now, Synchronous: "NORMAL"})
		}
		if err != nil {
			t.Fatalf("open backend %d: %v", len(bs), err)
		}
		t.Cleanup(func() { b.Close() })
		bs = append(bs, b)
	}
	return bs
}

// scheduledAt is a workflow that returns the tick its run is for, read
// from RunInfo.
var scheduledAt = ow.Define(ow.Spec{Name: "scheduled-at"}, func(ctx ow.Context, _ struct{}) (time.Time, error) {
	s := ctx.RunInfo().Schedule
	if s == nil {
		return time.Time{}, errors.New("RunInfo().Schedule is nil in a scheduled run")
	}
	return s.ScheduledAt, nil
})

// listRuns lists every run of b (up to 1,000).
func listRuns(t *testing.T, b backend.Backend) []backend.WorkflowRun {
	t.Helper()
	p, err := b.ListWorkflowRuns(context.Background(), backend.ListWorkflowRunsParams{Limit: 1000})
	if err != nil {
		t.Fatalf("list runs: %v", err)
	}
	return p.Data
}

// waitFor polls cond every 5 ms until it holds, failing t after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestScheduleEachTickStartsExactlyOneRunWithThreeWorkers(t *testing.T) {
	clock := owtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	bs := sharedBackends(t, 3, clock.Now)
	for i, b := range bs {
		startWorker(t, b, ow.WorkerOptions{Concurrency: 4, ID: "w" + string(rune('a'+i)), Now: clock.Now, MaxPollInterval: 5 * time.Millisecond, ClaimAhead: -1}, scheduledAt)
	}
	client := ow.NewClient(bs[0])
	s, err := client.PutSchedule(context.Background(), ow.ScheduleSpec{Name: "every-second", Workflow: "scheduled-at", Cron: "* * * * * *", Overlap: ow.OverlapAllowAll})
	if err != nil {
		t.Fatal(err)
	}
	first := s.NextFireAt
	const ticks = 100
	for tick := 1; tick <= ticks; tick++ {
		clock.Advance(time.Second)
		waitFor(t, "the run of tick "+clock.Now().Format(time.TimeOnly), func() bool { return len(listRuns(t, bs[0])) >= tick })
	}
	waitFor(t, "every run to complete", func() bool {
		for _, r := range listRuns(t, bs[0]) {
			if r.Status != backend.RunCompleted {
				return false
			}
		}
		return true
	})
	time.Sleep(100 * time.Millisecond) // several looks of every worker at the schedule: nothing more may start
	runs := listRuns(t, bs[0])
	if len(runs) != ticks {
		t.Fatalf("%d runs for %d ticks", len(runs), ticks)
	}
	seen := map[time.Time]string{}
	for _, r := range runs {
		var at time.Time
		if err := json.Unmarshal(r.Output, &at); err != nil {
			t.Fatalf("run %s output %s: %v", r.ID, r.Output, err)
		}
		if prev, dup := seen[at]; dup {
			t.Fatalf("tick %v has two runs: %s and %s", at, prev, r.ID)
		}
		seen[at] = r.ID
		if n := at.Sub(first) / time.Second; at.Before(first) || n >= ticks || at.Sub(first)%time.Second != 0 {
			t.Fatalf("run %s read scheduled time %v, not one of the %d ticks from %v", r.ID, at, ticks, first)
		}
	}
	got, err := client.GetSchedule(context.Background(), "every-second")
	if err != nil || got.Started != ticks || got.Skipped != 0 || got.Missed != 0 {
		t.Fatalf("schedule after %d ticks: %+v, %v", ticks, got, err)
	}
}

// blockingWorkflow returns a workflow that blocks its first pass of each
// run until release is closed.
func blockingWorkflow(name string, release <-chan struct{}) *ow.Workflow[struct{}, string] {
	return ow.Define(ow.Spec{Name: name}, func(ctx ow.Context, _ struct{}) (string, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "done", nil
	})
}

func TestScheduleBufferOneStartsTheBufferedTickWhenTheRunEnds(t *testing.T) {
	clock := owtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	b := openTestBackend(t, clock.Now)
	release := make(chan struct{})
	wf := blockingWorkflow("blocking", release)
	// A long MaxPollInterval: the buffered run must start because the
	// blocking one ended, not because the worker looked again.
	startWorker(t, b, ow.WorkerOptions{Concurrency: 4, Now: clock.Now, MaxPollInterval: time.Hour, ClaimAhead: -1}, wf)
	client := ow.NewClient(b)
	if _, err := client.PutSchedule(context.Background(), ow.ScheduleSpec{Name: "s", Workflow: "blocking", Cron: "* * * * * *", Overlap: ow.OverlapBufferOne}); err != nil {
		t.Fatal(err)
	}
	var s *ow.Schedule
	get := func() *ow.Schedule {
		var err error
		if s, err = client.GetSchedule(context.Background(), "s"); err != nil {
			t.Fatal(err)
		}
		return s
	}
	clock.Advance(time.Second)
	pokeSchedules(t, client)
	waitFor(t, "the first run", func() bool { return get().Started == 1 })
	clock.Advance(2 * time.Second)
	pokeSchedules(t, client)
	waitFor(t, "a buffered tick and a skipped one", func() bool { return get().BufferedAt != nil && s.Skipped == 1 })
	buffered := *s.BufferedAt
	close(release)
	waitFor(t, "the buffered tick's run", func() bool { return get().Started == 2 })
	var startedAt []time.Time
	for _, r := range listRuns(t, b) {
		sr, _ := backend.ScheduledRunOf(r.Context)
		startedAt = append(startedAt, sr.ScheduledAt)
	}
	if len(startedAt) != 2 || !(startedAt[0].Equal(buffered) || startedAt[1].Equal(buffered)) {
		t.Fatalf("runs for ticks %v, want one for the buffered tick %v", startedAt, buffered)
	}
}

// pokeSchedules wakes the workers of client's namespace at once, as a
// changed schedule does (PutSchedule announces EventScheduleChanged):
// with a fake clock they would otherwise look at the schedule only at
// their fallback look.
func pokeSchedules(t *testing.T, client *ow.Client) {
	t.Helper()
	s, err := client.GetSchedule(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	spec := ow.ScheduleSpec{Name: s.Name, Workflow: s.WorkflowName, Cron: s.Cron, TimeZone: s.TimeZone, Overlap: s.Overlap, CatchupWindow: s.CatchupWindow}
	if _, err := client.PutSchedule(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
}

func TestScheduleCatchUpAfterDowntimeRunsOnlyTheWindowAndLogsTheRest(t *testing.T) {
	clock := owtest.NewClock(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC))
	b := openTestBackend(t, clock.Now)
	client := ow.NewClient(b)
	if _, err := client.PutSchedule(context.Background(), ow.ScheduleSpec{
		Name: "s", Workflow: "scheduled-at", Cron: "*/10 * * * * *", CatchupWindow: 30 * time.Second, Overlap: ow.OverlapAllowAll,
	}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Minute) // no worker for 5 min: 30 ticks, the last 4 within the window (4:30 … 5:00)
	var logs syncBuffer
	startWorker(t, b, ow.WorkerOptions{Now: clock.Now, Logger: slog.New(slog.NewTextHandler(&logs, nil)), ClaimAhead: -1}, scheduledAt)
	waitFor(t, "the catch-up", func() bool { return len(listRuns(t, b)) == 4 && strings.Contains(logs.String(), "missed=26") })
	if !strings.Contains(logs.String(), "older than the catch-up window") || !strings.Contains(logs.String(), "schedule=s") {
		t.Fatalf("the worker's log does not say which ticks were missed:\n%s", logs.String())
	}
	s, err := client.GetSchedule(context.Background(), "s")
	if err != nil || s.Missed != 26 || s.Started != 4 {
		t.Fatalf("schedule: %+v, %v; want 26 missed, 4 started", s, err)
	}
}

func TestSchedulePauseResumeAndTriggerFromAClient(t *testing.T) {
	clock := owtest.NewClock(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC))
	b := openTestBackend(t, clock.Now)
	client := ow.NewClient(b)
	ctx := context.Background()
	if _, err := client.PutSchedule(ctx, ow.ScheduleSpec{Name: "s", Workflow: "scheduled-at", Cron: "@every 1m", Overlap: ow.OverlapAllowAll, Priority: 7}); err != nil {
		t.Fatal(err)
	}
	startWorker(t, b, ow.WorkerOptions{Now: clock.Now, MaxPollInterval: 5 * time.Millisecond, ClaimAhead: -1}, scheduledAt)
	if _, err := client.PauseSchedule(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Minute)
	h, err := client.TriggerSchedule(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if h.Run.Priority != 7 {
		t.Errorf("the triggered run has priority %d, want the schedule's 7", h.Run.Priority)
	}
	out, err := ow.Declare[struct{}, time.Time](ow.Spec{Name: "scheduled-at"}).Start(ctx, client, struct{}{}) // an unscheduled run: fails, Schedule is nil
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := h.Result(rctx)
	if err != nil {
		t.Fatalf("triggered run: %v", err)
	}
	var at time.Time
	if err := json.Unmarshal(raw, &at); err != nil || !at.Equal(clock.Now()) {
		t.Fatalf("the triggered run read scheduled time %s (%v), want the trigger's time %v", raw, err, clock.Now())
	}
	if _, err := out.Result(rctx); err == nil || !strings.Contains(err.Error(), "Schedule is nil") {
		t.Fatalf("an unscheduled run read RunInfo().Schedule: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // ten looks at the paused schedule
	if n := len(listRuns(t, b)); n != 2 {
		t.Fatalf("%d runs while paused, want the triggered one and the unscheduled one", n)
	}
	s, err := client.ResumeSchedule(ctx, "s")
	if err != nil || s.Paused || !s.NextFireAt.Equal(clock.Now().Add(time.Minute)) {
		t.Fatalf("resumed: %+v, %v; want running, next tick a minute from now", s, err)
	}
	clock.Advance(time.Minute)
	waitFor(t, "the first tick after the resume", func() bool { return len(listRuns(t, b)) == 3 })
}

func TestScheduleSpecErrorsNameTheField(t *testing.T) {
	b := openTestBackend(t, nil)
	client := ow.NewClient(b)
	for _, c := range []struct {
		spec      ow.ScheduleSpec
		field     string
		mentioned string
	}{
		{ow.ScheduleSpec{Name: "s", Workflow: "wf", Cron: "0 25 * * *"}, "cron", "0 25 * * *"},
		{ow.ScheduleSpec{Name: "s", Workflow: "wf", Cron: "every day"}, "cron", "every day"},
		{ow.ScheduleSpec{Name: "s", Workflow: "wf", Cron: "@daily", TimeZone: "Europe/Pariss"}, "timeZone", "Europe/Pariss"},
		{ow.ScheduleSpec{Name: "s", Workflow: "wf", Cron: "@daily", Overlap: "buffer"}, "overlap", "buffer_one"},
		{ow.ScheduleSpec{Name: "s", Workflow: "wf", Cron: "@daily", Input: func() {}}, "input", "func()"},
		{ow.ScheduleSpec{Name: "s", Cron: "@daily"}, "workflowName", "workflow"},
		{ow.ScheduleSpec{Name: "s", Workflow: "wf", Cron: "@daily", Priority: backend.MaxPriority + 1}, "priority", "2147483648"},
		// Issue 19: a run's limits hold for a schedule's runs, and @every
		// intervals robfig/cron would round to a second are refused.
		{ow.ScheduleSpec{Name: "s", Workflow: strings.Repeat("w", 1_000_000), Cron: "@daily"}, "workflowName", "longer than the limit of 255"},
		{ow.ScheduleSpec{Name: "s", Workflow: "bad\xffname", Cron: "@daily"}, "workflowName", "not valid text"},
		{ow.ScheduleSpec{Name: "s", Workflow: "wf", Version: strings.Repeat("v", 256), Cron: "@daily"}, "version", "255"},
		{ow.ScheduleSpec{Name: "s", Workflow: "wf", Cron: "@every 500ms"}, "cron", "whole number of seconds, at least 1s"},
		{ow.ScheduleSpec{Name: "s", Workflow: "wf", Cron: "@every 0s"}, "cron", "at least 1s"},
	} {
		_, err := client.PutSchedule(context.Background(), c.spec)
		var fe *backend.ScheduleFieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), c.mentioned) {
			t.Errorf("PutSchedule(%+v): %v; want an error on %s mentioning %q", c.spec, err, c.field, c.mentioned)
		}
		w := ow.NewWorker(b, ow.WorkerOptions{})
		if err := w.RegisterSchedules(c.spec); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("RegisterSchedules(%+v): %v; want an error on %s", c.spec, err, c.field)
		}
	}
	if _, err := client.GetSchedule(context.Background(), "s"); !errors.Is(err, ow.ErrScheduleNotFound) {
		t.Fatalf("after refused puts: %v, want no schedule", err)
	}
}

func TestScheduleRegisteredOnAWorkerIsPutAtEachStartWithoutMovingItsTick(t *testing.T) {
	clock := owtest.NewClock(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC))
	b := openTestBackend(t, clock.Now)
	spec := ow.ScheduleSpec{Name: "nightly", Workflow: "report", Cron: "0 2 * * *", TimeZone: "Europe/Paris"}
	deploy := func() *ow.Schedule {
		t.Helper()
		w := ow.NewWorker(b, ow.WorkerOptions{Now: clock.Now, SkipSchedules: true})
		if err := w.RegisterSchedules(spec); err != nil {
			t.Fatal(err)
		}
		if err := w.RegisterSchedules(spec); err == nil || !strings.Contains(err.Error(), "declared twice") {
			t.Fatalf("registering %q twice: %v", spec.Name, err)
		}
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := w.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		s, err := ow.NewClient(b).GetSchedule(context.Background(), "nightly")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := deploy()
	if want := time.Date(2026, 1, 3, 1, 0, 0, 0, time.UTC); !first.NextFireAt.Equal(want) { // 02:00 in Paris (UTC+1 in January)
		t.Fatalf("next fire %v, want %v", first.NextFireAt, want)
	}
	clock.Advance(12 * time.Hour)
	if again := deploy(); !again.NextFireAt.Equal(first.NextFireAt) || !again.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("after a redeploy: next fire %v (created %v), want %v kept", again.NextFireAt, again.CreatedAt, first.NextFireAt)
	}
	ticks, err := ow.UpcomingTicks(first, 3)
	if err != nil || len(ticks) != 3 || !ticks[2].Equal(first.NextFireAt.Add(48*time.Hour)) {
		t.Fatalf("UpcomingTicks = %v, %v", ticks, err)
	}
}

// failingSchedules is a backend whose FireDueSchedules reports one
// schedule's fire as failed, as a store does when a schedule's run is
// refused, beside another that fired.
type failingSchedules struct {
	backend.Backend
	backend.ScheduleStore
}

func (f failingSchedules) FireDueSchedules(context.Context, backend.FireDueSchedulesParams) (*backend.FireReport, error) {
	return &backend.FireReport{
		Firings: []backend.ScheduleFiring{{Schedule: "good", Ticks: []backend.TickResult{{Outcome: backend.TickStarted, RunID: "wrun_x"}}}},
		Failures: []backend.ScheduleFailure{{Schedule: "bad", Failures: 3, RetryAt: time.Date(2026, 1, 2, 3, 4, 8, 0, time.UTC),
			Err: &backend.ScheduleFieldError{Schedule: "bad", Field: "workflowName", Value: "www…", Reason: "1000000 bytes, longer than the limit of 255"}}},
	}, nil
}

// scheduleFailureMetrics records the schedules ObserveScheduleFailure
// reports on a channel, dropping them when it is full (a metric must
// never block the worker).
type scheduleFailureMetrics struct {
	telemetry.NoMetrics
	failed chan string
}

func (m scheduleFailureMetrics) ObserveScheduleFailure(schedule string) {
	select {
	case m.failed <- schedule:
	default:
	}
}

func TestScheduleFailureIsLoggedAndCountedByTheWorker(t *testing.T) {
	b := openTestBackend(t, nil)
	m := scheduleFailureMetrics{failed: make(chan string, 16)}
	var logs syncBuffer
	startWorker(t, failingSchedules{Backend: b, ScheduleStore: b.(backend.ScheduleStore)},
		ow.WorkerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Metrics: m, ClaimAhead: -1})
	select {
	case name := <-m.failed:
		if name != "bad" {
			t.Fatalf("ObserveScheduleFailure(%q), want bad", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker reported no schedule failure to its metrics")
	}
	// The log line is written before the metric is observed.
	for _, want := range []string{"level=ERROR", "schedule=bad", "workflowName", "failures=3", "retryAt=2026-01-02T03:04:08", "ow schedules put", "other schedules go on"} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("the worker's log lacks %q:\n%s", want, logs.String())
		}
	}
}
