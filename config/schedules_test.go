package config

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

func TestSchedulesFromTheFileArePutAndPuttingAgainChangesNothing(t *testing.T) {
	clearEnv(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, FileName), `
schedules:
  - name: nightly-report
    workflow: send-report
    version: v2
    cron: "0 2 * * *"
    time_zone: Europe/Paris
    input: {team: ops, "days": [1, 2]}
    overlap: buffer_one
    catchup_window: 5m
    priority: -3
  - name: heartbeat
    workflow: ping
    cron: "@every 30s"
    paused: true
`)
	c, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := c.OpenBackend(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n, err := c.ApplySchedules(ctx, b); err != nil || n != 2 {
		t.Fatalf("ApplySchedules = %d, %v; want 2", n, err)
	}
	ss := b.(backend.ScheduleStore)
	got, err := ss.GetSchedule(ctx, "nightly-report")
	if err != nil {
		t.Fatal(err)
	}
	if got.WorkflowName != "send-report" || *got.Version != "v2" || got.Cron != "0 2 * * *" || got.TimeZone != "Europe/Paris" ||
		string(got.Input) != `{"days":[1,2],"team":"ops"}` || got.Overlap != backend.OverlapBufferOne || got.CatchupWindow != 5*time.Minute || got.Priority != -3 || got.Paused {
		t.Fatalf("nightly-report as stored: %+v (input %s)", got, got.Input)
	}
	if hb, err := ss.GetSchedule(ctx, "heartbeat"); err != nil || !hb.Paused || hb.TimeZone != "UTC" || hb.Overlap != backend.OverlapSkip {
		t.Fatalf("heartbeat as stored: %+v, %v; want paused, UTC, skip", hb, err)
	}
	if _, err := ss.ResumeSchedule(ctx, "heartbeat"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ApplySchedules(ctx, b); err != nil {
		t.Fatal(err)
	}
	again, _ := ss.GetSchedule(ctx, "nightly-report")
	if !again.NextFireAt.Equal(got.NextFireAt) || !again.CreatedAt.Equal(got.CreatedAt) {
		t.Fatalf("applying again moved the next tick: %v, was %v", again.NextFireAt, got.NextFireAt)
	}
	if hb, _ := ss.GetSchedule(ctx, "heartbeat"); hb.Paused {
		t.Fatal("applying the file again paused a schedule an operator had resumed")
	}
}

func TestABadScheduleInTheFileIsAnErrorNamingItsEntryAndKey(t *testing.T) {
	clearEnv(t)
	for _, c := range []struct {
		name, entry string
		want        []string
	}{
		{"an unknown time zone", "  - {name: nightly, workflow: wf, cron: '@daily', time_zone: Mars/Olympus}",
			[]string{"schedules[0] (nightly): time_zone \"Mars/Olympus\"", "IANA"}},
		{"a bad cron", "  - {name: nightly, workflow: wf, cron: '0 25 * * *'}",
			[]string{"schedules[0] (nightly): cron \"0 25 * * *\"", "above maximum"}},
		{"no workflow", "  - {name: nightly, cron: '@daily'}",
			[]string{"schedules[0] (nightly): workflow \"\""}},
		{"a bad overlap", "  - {name: nightly, workflow: wf, cron: '@daily', overlap: queue}",
			[]string{"overlap \"queue\"", "skip, buffer_one, allow_all"}},
		{"a short catch-up window", "  - {name: nightly, workflow: wf, cron: '@daily', catchup_window: 10ms}",
			[]string{"catchup_window \"10ms\"", "at least 1s"}},
		{"a priority beyond 32 bits", "  - {name: nightly, workflow: wf, cron: '@daily', priority: 2147483648}",
			[]string{"priority \"2147483648\"", "from -2147483647 to 2147483647"}},
		// Issue 19: a run's limits hold in the file too, and @every
		// intervals robfig/cron would round to a second are refused.
		{"a workflow name longer than a run's", "  - {name: nightly, workflow: " + strings.Repeat("w", 300) + ", cron: '@daily'}",
			[]string{"schedules[0] (nightly): workflow", "300 bytes, longer than the limit of 255"}},
		{"a version longer than a run's", "  - {name: nightly, workflow: wf, version: " + strings.Repeat("v", 256) + ", cron: '@daily'}",
			[]string{"schedules[0] (nightly): version", "longer than the limit of 255"}},
		{"an interval under a second", "  - {name: nightly, workflow: wf, cron: '@every 500ms'}",
			[]string{"cron \"@every 500ms\"", "whole number of seconds, at least 1s"}},
		{"a zero interval", "  - {name: nightly, workflow: wf, cron: '@every 0s'}",
			[]string{"cron \"@every 0s\"", "at least 1s"}},
		{"a name taken twice", "  - {name: a, workflow: wf, cron: '@daily'}\n  - {name: a, workflow: wf, cron: '@hourly'}",
			[]string{"schedules[1] (a): the name \"a\" is taken by schedules[0] too"}},
		{"a misspelt key", "  - {name: a, workflow: wf, cron: '@daily', timezone: UTC}",
			[]string{"unknown key \"timezone\"", "time_zone"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			file := filepath.Join(root, FileName)
			writeFile(t, file, "schedules:\n"+c.entry+"\n")
			_, err := Load(root)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, w := range append(c.want, file) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
