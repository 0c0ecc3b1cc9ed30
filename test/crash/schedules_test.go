package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// scheduledWorkflow returns the tick its run is for (RunInfo().Schedule).
var scheduledWorkflow = ow.Define(ow.Spec{Name: "crashtest-scheduled"}, func(ctx ow.Context, _ struct{}) (time.Time, error) {
	if s := ctx.RunInfo().Schedule; s != nil {
		return s.ScheduledAt, nil
	}
	return time.Time{}, fmt.Errorf("run %s was not started by a schedule", ctx.RunInfo().ID)
})

// Settings of the schedule test: a clock running scheduleSpeed times
// faster than the wall clock, shared by the test and its worker processes,
// so that scheduleTicks ticks of a per-second schedule take a tenth of the
// time; a poll interval short enough that every worker looks at the
// schedule several times per tick.
const (
	scheduleWorkers = 3
	scheduleTicks   = 100
	scheduleSpeed   = 10
)

func TestEachScheduleTickStartsOneRunAcrossWorkerProcesses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		target func(*testing.T) target
	}{{"sqlite", sqliteTarget}, {"postgres", postgresTarget}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testScheduleAcrossProcesses(t, tc.target(t))
		})
	}
}

// testScheduleAcrossProcesses starts three worker processes on one
// target, on one fast clock, lets a per-second schedule (allow_all, so
// that every tick must start a run) tick at least 100 times, pauses it,
// and checks that the ticks fired are consecutive seconds, each with
// exactly one run, which read its tick as its scheduled time, and that the
// processes shared the work.
func testScheduleAcrossProcesses(t *testing.T, tg target) {
	clk := &fastClock{Base: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Start: time.Now().Round(0), Speed: scheduleSpeed}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := openBackendOn(ctx, tg.kind, tg.dsn, tg.schema, tg.namespace, clk.Now)
	if err != nil {
		t.Fatalf("open %s backend: %v", tg.kind, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	client := ow.NewClient(b)

	stepLog := filepath.Join(t.TempDir(), "steps.log")
	cfg := workerConfig{
		Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: stepLog, Clock: clk,
		Concurrency: 8, LeaseDuration: time.Hour, HeartbeatInterval: time.Minute, // on the fast clock
		MaxPollInterval: 10 * time.Millisecond, ShutdownGrace: 5 * time.Second,
	}
	workers := make([]*workerProcess, scheduleWorkers)
	for i := range workers {
		workers[i] = startWorkerProcess(t, cfg)
	}
	waitFor(t, time.Minute, "the worker processes to be ready", func() (bool, error) {
		events, err := readStepLog(stepLog)
		return len(readyPIDs(events)) == scheduleWorkers, err
	})

	s, err := client.PutSchedule(ctx, ow.ScheduleSpec{Name: "every-second", Workflow: "crashtest-scheduled", Cron: "* * * * * *", Overlap: ow.OverlapAllowAll})
	if err != nil {
		t.Fatal(err)
	}
	first := s.NextFireAt
	waitFor(t, 2*time.Minute, fmt.Sprintf("%d ticks", scheduleTicks), func() (bool, error) {
		for _, w := range workers {
			if w.exited() {
				return false, fmt.Errorf("worker process %d exited: %v", w.pid(), w.cmd.ProcessState)
			}
		}
		got, err := client.GetSchedule(ctx, "every-second")
		return err == nil && got.Started >= scheduleTicks, err
	})
	s, err = client.PauseSchedule(ctx, "every-second")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "every run to complete", func() (bool, error) {
		c, err := client.CountRuns(ctx)
		return c.Completed == int(s.Started), err
	})

	var runs []backend.WorkflowRun
	for after := ""; ; {
		page, err := client.ListRuns(ctx, backend.ListWorkflowRunsParams{Limit: backend.MaxPageSize, After: after})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, page.Data...)
		if page.Next == nil {
			break
		}
		after = *page.Next
	}
	if int64(len(runs)) != s.Started || s.Skipped != 0 || s.Missed != 0 {
		t.Fatalf("%d runs; the schedule counts %d started, %d skipped, %d missed", len(runs), s.Started, s.Skipped, s.Missed)
	}
	ticks := make([]time.Time, 0, len(runs))
	executedBy := map[string]int{}
	for _, r := range runs {
		var at time.Time
		if err := json.Unmarshal(r.Output, &at); err != nil {
			t.Fatalf("run %s: output %s: %v", r.ID, r.Output, err)
		}
		if sr, ok := backend.ScheduledRunOf(r.Context); !ok || !sr.ScheduledAt.Equal(at) || sr.Name != "every-second" {
			t.Fatalf("run %s read %v as its scheduled time; its context says %s", r.ID, at, r.Context)
		}
		ticks = append(ticks, at)
		if r.WorkerID != nil {
			executedBy[strings.SplitN(*r.WorkerID, "/", 2)[0]]++
		}
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Before(ticks[j]) })
	for i, at := range ticks {
		if want := first.Add(time.Duration(i) * time.Second); !at.Equal(want) {
			t.Fatalf("tick %d of the runs is %v, want %v: every second from %v has exactly one run", i, at, want, first)
		}
	}
	t.Logf("%s: %d ticks, one run each, executed by %d worker processes: %v", tg.kind, len(ticks), len(executedBy), executedBy)
	if len(executedBy) < 2 {
		t.Errorf("runs executed by %v: want the worker processes to share them", executedBy)
	}
}
