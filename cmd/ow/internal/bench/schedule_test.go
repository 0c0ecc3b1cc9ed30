package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

func TestTheScheduleWorkloadMeasuresEveryTickOnBothBackends(t *testing.T) {
	for _, kind := range []string{SQLite, Postgres} {
		t.Run("on "+kind, func(t *testing.T) {
			o := Options{Workloads: []string{S1}, S1Duration: 4 * time.Second, Concurrency: 4, Backends: []string{kind},
				TempDir: t.TempDir(), WorkerCommand: testWorkerCommand}
			if kind == Postgres {
				o.PostgresURL = requirePostgres(t)
			}
			var progress syncBuffer
			o.Progress = &progress
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := Run(ctx, o)
			if err != nil {
				t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
			}
			if len(rep.Results) != 1 {
				t.Fatalf("results: %+v", rep.Results)
			}
			r := rep.Results[0]
			if r.Workload != S1 || r.Workers != s1Workers || r.Runs < 3 || r.Error != "" {
				t.Fatalf("S1: %+v; want %d worker processes and a run per measured tick (4 s: 3 or more)", r, s1Workers)
			}
			for _, m := range []string{MetricTickP50, MetricTickP99, MetricTickMax, MetricTickStartP99} {
				if v, ok := r.Metrics[m]; !ok || v < 0 || v > 60_000 {
					t.Errorf("metric %s = %v (present %v), want a lateness in ms", m, v, ok)
				}
			}
			if r.Metrics[MetricTickP50] > r.Metrics[MetricTickMax] {
				t.Errorf("p50 %v above max %v", r.Metrics[MetricTickP50], r.Metrics[MetricTickMax])
			}
		})
	}
}

func TestVerifyTicksFailsOnAMissingOrDoubledTick(t *testing.T) {
	first := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	run := func(k int, late time.Duration) backend.WorkflowRun {
		at := first.Add(time.Duration(k) * time.Second)
		created, started := at.Add(late), at.Add(late+time.Millisecond)
		out, _ := json.Marshal(expectedOutput(0, 1))
		return backend.WorkflowRun{ID: fmt.Sprintf("wrun_%d", k), WorkflowName: nameOne, Status: backend.RunCompleted, Output: out,
			Context: backend.ScheduledRun{Name: s1Schedule, ScheduledAt: at}.Context(), CreatedAt: created, StartedAt: &started}
	}
	sched := func(started int64) *backend.Schedule { return &backend.Schedule{Name: s1Schedule, Started: started} }
	runs := []backend.WorkflowRun{run(0, 900*time.Millisecond), run(1, 2*time.Millisecond), run(2, 4*time.Millisecond)}
	late, claim, err := verifyTicks(runs, sched(3), first, first.Add(500*time.Millisecond))
	if err != nil || len(late) != 2 || late[0] != 2 || late[1] != 4 || claim[1] != 5 {
		t.Fatalf("verifyTicks = %v, %v, %v; want the two ticks after the workers started: 2 and 4 ms late", late, claim, err)
	}
	for _, c := range []struct {
		name string
		runs []backend.WorkflowRun
		s    *backend.Schedule
		want string
	}{
		{"a tick with no run", []backend.WorkflowRun{run(0, 0), run(2, 0)}, sched(2), "a tick with no run or two"},
		{"a tick with two runs", []backend.WorkflowRun{run(0, 0), run(1, 0), run(1, 0)}, sched(3), "a tick with no run or two"},
		{"a count that does not match", runs, sched(4), "3 runs; the schedule started 4"},
		{"a skipped tick", runs, &backend.Schedule{Name: s1Schedule, Started: 3, Skipped: 1}, "skipped 1"},
	} {
		if _, _, err := verifyTicks(c.runs, c.s, first, first); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: verifyTicks = %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
