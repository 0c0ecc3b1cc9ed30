package dashboard

import (
	"fmt"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
)

// timeline is a run's Gantt chart: one row per step (durable key), in the
// order the steps first ran, each with a bar per attempt, so retries sit
// side by side on their step's row with the back-off between them drawn
// as a dashed gap. Sleeps, waits for a signal, a hook or a child run are
// bars of their own kind, spanning the wait; a child run's bar links to
// it. Positions are percentages of the run's span (created → finished,
// or now), drawn by the template as SVG, with no script.
type timeline struct {
	Start, End time.Time
	Rows       []timelineRow
	Ticks      []timelineTick
	// RunBar is the run's own row: queued (created → started), then
	// executing and parked (started → finished or now).
	Queued, Active timelineBar
	// Truncated says how many attempts were left out of a very long run.
	Truncated int
	// Retries mark the manual retries of the run (POST …/retry).
	Retries []timelineTick
}

type timelineRow struct {
	Name, Kind string
	// Attempts counts the step's attempts (retries included).
	Attempts int
	// FirstID is the step's first attempt, the row's link.
	FirstID string
	Bars    []timelineBar
	// Gaps are the back-offs between an attempt that failed and the next
	// attempt of the same step.
	Gaps []timelineBar
}

type timelineBar struct {
	X, W float64 // percent of the chart's width
	// Class is the attempt's state (completed, failed, running, waiting,
	// abandoned) and Kind its step kind, for colour and pattern.
	Class, Kind string
	Href        string
	Title       string
}

type timelineTick struct {
	X     float64
	Label string
}

// maxTimelineAttempts bounds the attempts a chart draws; a run has at
// most 1000 (the engine's limit), so this is a guard, not a policy.
const maxTimelineAttempts = 1000

// buildTimeline lays out run's attempts (oldest first) at now.
func buildTimeline(run *api.Run, steps []api.Step, now time.Time) timeline {
	tl := timeline{Start: run.CreatedAt, End: now}
	if run.FinishedAt != nil {
		tl.End = *run.FinishedAt
	}
	if len(steps) > maxTimelineAttempts {
		tl.Truncated = len(steps) - maxTimelineAttempts
		steps = steps[:maxTimelineAttempts]
	}
	// Attempts may outlast the run's end (an abandoned attempt's row has
	// no end) or a wait may end after now by its own clock: extend the
	// span to cover what is drawn.
	for i := range steps {
		if e := attemptEnd(&steps[i], run, now); e.After(tl.End) {
			tl.End = e
		}
	}
	span := tl.End.Sub(tl.Start)
	if span <= 0 {
		span = time.Millisecond
	}
	pos := func(t time.Time) float64 {
		f := float64(t.Sub(tl.Start)) / float64(span) * 100
		return min(max(f, 0), 100)
	}
	bar := func(from, to time.Time) (float64, float64) {
		x := pos(from)
		w := pos(to) - x
		const minW = 0.5 // an instant step stays visible
		if w < minW {
			w = minW
			if x+w > 100 {
				x = 100 - w
			}
		}
		return x, w
	}

	if began := firstActivity(run, steps); began != nil {
		tl.Queued.X, tl.Queued.W = bar(run.CreatedAt, *began)
		tl.Queued.Class, tl.Queued.Title = "queued", "queued "+fmtDuration(began.Sub(run.CreatedAt))
		tl.Active.X, tl.Active.W = bar(*began, tl.End)
		tl.Active.Class = run.Status
		tl.Active.Title = run.Status + " " + fmtDuration(tl.End.Sub(*began))
	} else {
		tl.Queued.X, tl.Queued.W = bar(run.CreatedAt, tl.End)
		tl.Queued.Class, tl.Queued.Title = "queued", "not started"
	}

	index := map[string]int{}
	lastEnd := map[string]time.Time{}
	lastFailed := map[string]bool{}
	var lastRetry time.Time // the latest manual retry so far
	for i := range steps {
		s := &steps[i]
		if s.Kind == "retry" { // the mark of a manual retry: a marker, not a step
			lastRetry = s.CreatedAt
			label := "retried by hand "
			if strings.HasPrefix(s.StepName, "__fork:") {
				label = "forked " // a fork's mark (POST /v1/runs/{id}/fork): the steps before it were reused
			}
			tl.Retries = append(tl.Retries, timelineTick{X: pos(s.CreatedAt), Label: label + absTime(s.CreatedAt)})
			continue
		}
		r, ok := index[s.StepName]
		if !ok {
			r = len(tl.Rows)
			index[s.StepName] = r
			tl.Rows = append(tl.Rows, timelineRow{Name: s.StepName, Kind: s.Kind, FirstID: s.ID})
		}
		tl.Rows[r].Attempts++
		from := attemptStart(s)
		to := attemptEnd(s, run, now)
		if lastFailed[s.StepName] {
			gx, gw := bar(lastEnd[s.StepName], from)
			gap := timelineBar{X: gx, W: gw, Class: "backoff", Title: "back-off " + fmtDuration(from.Sub(lastEnd[s.StepName])) + " before the next attempt"}
			if lastRetry.After(lastEnd[s.StepName]) {
				gap.Class, gap.Title = "retried", "the run failed; retried by hand after "+fmtDuration(lastRetry.Sub(lastEnd[s.StepName]))
			}
			tl.Rows[r].Gaps = append(tl.Rows[r].Gaps, gap)
		}
		x, w := bar(from, to)
		b := timelineBar{X: x, W: w, Class: attemptClass(run, s), Kind: s.Kind, Href: "#" + s.ID}
		b.Title = fmt.Sprintf("%s · %s · %s", s.StepName, b.Class, fmtDuration(to.Sub(from)))
		if s.Kind == "workflow" && s.ChildRunID != nil {
			b.Href = "/runs/" + *s.ChildRunID
			b.Title += " · child run " + *s.ChildRunID
		}
		tl.Rows[r].Bars = append(tl.Rows[r].Bars, b)
		lastEnd[s.StepName], lastFailed[s.StepName] = to, s.Status == "failed"
	}

	step := niceStep(span, 6)
	for t := time.Duration(0); t <= span; t += step {
		tl.Ticks = append(tl.Ticks, timelineTick{X: float64(t) / float64(span) * 100, Label: "+" + fmtDuration(t)})
	}
	if len(tl.Ticks) > 0 {
		tl.Ticks[0].Label = "0"
	}
	return tl
}

// attemptClass is how an attempt of run is drawn: its state as the ow
// command shows it too (api.AttemptState): completed, failed (an OpenFlow
// module that raised included), canceled, abandoned, waiting (a wait in
// progress) or running.
func attemptClass(run *api.Run, s *api.Step) string {
	return api.AttemptState(run, s)
}

func attemptStart(s *api.Step) time.Time {
	if s.StartedAt != nil {
		return *s.StartedAt
	}
	return s.CreatedAt
}

// attemptEnd is when an attempt ended; for one still running, now (for
// an abandoned one, the run's end or now: nobody ends it).
func attemptEnd(s *api.Step, run *api.Run, now time.Time) time.Time {
	if s.FinishedAt != nil {
		return *s.FinishedAt
	}
	if run.FinishedAt != nil {
		return *run.FinishedAt
	}
	return now
}

// firstActivity is when a run began: its first claim, which is the
// earlier of its started_at and its first attempt's start (a reschedule
// after a failed step or a retry clears started_at, so it may be a later
// claim's). The attempts a fork copied from its origin ran there, before
// the fork was created, and do not count. Nil for a run never claimed.
func firstActivity(run *api.Run, steps []api.Step) *time.Time {
	began := run.StartedAt
	for i := range steps {
		t := attemptStart(&steps[i])
		if t.Before(run.CreatedAt) || steps[i].Kind == "retry" {
			continue // a fork's copy, or its mark
		}
		if began == nil || t.Before(*began) {
			began = &t
		}
		break // attempts are oldest first: the first is the earliest
	}
	return began
}
