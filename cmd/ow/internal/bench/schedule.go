package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// s1Workers is the number of worker processes S1 fires and executes its
// schedule with: each wakes for every tick, one starts its run.
const s1Workers = 3

// s1Schedule is S1's schedule: bench-one every second, allow_all (so
// that every tick must start a run, whatever the previous one does).
const s1Schedule = "bench-every-second"

// schedule is S1: a schedule of bench-one ticking every second, fired
// and executed by s1Workers worker processes for Options.S1Duration from
// their start. Each tick must have exactly one run, completed with the
// right output; the figures are each run's created_at − its tick (how
// late the tick started its run) and started_at − its tick (how late a
// worker took it), over the ticks due once the workers were running.
func (m *measurement) schedule(ctx context.Context) (Result, error) {
	res := m.result(0, 0)
	b, err := m.t.open(ctx)
	if err != nil {
		return res, err
	}
	defer b.Close()
	// The schedule exists before the workers start, so that they find it
	// at their first look: on SQLite a schedule put by another process is
	// announced to nobody, and the workers would learn of it only at
	// their fallback look (5 s), catching up its first ticks late.
	c := ow.NewClient(b)
	s, err := c.PutSchedule(ctx, ow.ScheduleSpec{Name: s1Schedule, Workflow: nameOne, Cron: "* * * * * *", Input: Input{I: 0}, Overlap: ow.OverlapAllowAll})
	if err != nil {
		return res, err
	}
	stop, err := m.startWorkers(ctx)
	if err != nil {
		return res, err
	}
	// Ticks due before the workers were running (their start-up takes a
	// second or two) are verified but not measured.
	first, released, p := s.NextFireAt, time.Now(), m.progress()
	end := released.Add(m.o.S1Duration)
	for err == nil && time.Now().Before(end) {
		p.update(int(time.Since(released)/time.Second), int(m.o.S1Duration/time.Second), "s of ticks")
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if err == nil {
		s, err = c.PauseSchedule(ctx, s1Schedule)
	}
	if err == nil {
		var counter runCounter
		if counter, err = m.t.counter(ctx); err == nil {
			_, err = waitAll(ctx, counter, int(s.Started), p)
			err = errors.Join(err, counter.close())
		}
	}
	if err = errors.Join(err, stop()); err != nil {
		return res, err
	}
	runs, err := listRuns(ctx, b)
	if err != nil {
		return res, err
	}
	late, claim, err := verifyTicks(runs, s, first, released)
	if err != nil {
		return res, err
	}
	res.Runs, res.Steps = len(late), len(late)
	res.Metrics[MetricSeconds] = m.o.S1Duration.Seconds()
	res.Metrics[MetricTickP50] = percentile(late, 50)
	res.Metrics[MetricTickP99] = percentile(late, 99)
	res.Metrics[MetricTickMax] = percentile(late, 100)
	res.Metrics[MetricTickStartP99] = percentile(claim, 99)
	return res, nil
}

// verifyTicks checks that runs are one completed bench-one run per tick
// of s, every second from first on, as many as s started, none skipped or
// missed, and returns the created_at − tick and started_at − tick of the
// runs of the ticks from measured on, in milliseconds.
func verifyTicks(runs []backend.WorkflowRun, s *ow.Schedule, first, measured time.Time) (late, claim []float64, err error) {
	var problems []string
	if int64(len(runs)) != s.Started || s.Skipped != 0 || s.Missed != 0 {
		problems = append(problems, fmt.Sprintf("%d runs; the schedule started %d, skipped %d, missed %d", len(runs), s.Started, s.Skipped, s.Missed))
	}
	var ticks []time.Time
	want := expectedOutput(0, 1)
	for _, r := range runs {
		sr, ok := backend.ScheduledRunOf(r.Context)
		var out Output
		switch {
		case !ok || sr.Name != s1Schedule || r.WorkflowName != nameOne:
			problems = append(problems, fmt.Sprintf("run %s of %s: not a run of the schedule (context %s)", r.ID, r.WorkflowName, r.Context))
			continue
		case r.Status.Normalize() != backend.RunCompleted || r.StartedAt == nil:
			problems = append(problems, fmt.Sprintf("run %s: status %s, error %s", r.ID, r.Status, r.Error))
			continue
		case json.Unmarshal(r.Output, &out) != nil || out != want:
			problems = append(problems, fmt.Sprintf("run %s: output %s, want {\"i\":0,\"sum\":0}", r.ID, r.Output))
		}
		ticks = append(ticks, sr.ScheduledAt)
		if !sr.ScheduledAt.Before(measured) {
			late = append(late, ms(r.CreatedAt.Sub(sr.ScheduledAt)))
			claim = append(claim, ms(r.StartedAt.Sub(sr.ScheduledAt)))
		}
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Before(ticks[j]) })
	for i, t := range ticks {
		if want := first.Add(time.Duration(i) * time.Second); !t.Equal(want) {
			problems = append(problems, fmt.Sprintf("the %d-th run is for tick %v, want %v: a tick with no run or two", i, t, want))
			break
		}
	}
	if len(problems) > 0 {
		return nil, nil, fmt.Errorf("schedule verification failed:\n  %s", strings.Join(problems[:min(len(problems), 5)], "\n  "))
	}
	return late, claim, nil
}
