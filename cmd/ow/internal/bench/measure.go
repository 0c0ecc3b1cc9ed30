package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// pollInterval is how often the bench counts completed runs. The end of a
// throughput measurement is read from the runs' finished_at, not from
// the poll, so this bounds only the detection delay. Each count scans the
// runs table on the database the engine is measured on (4–6 ms of
// PostgreSQL time in W1): every 50 ms, that took about a tenth of a core
// from the engine; every 250 ms, about a fiftieth. The TypeScript harness
// (tsbench/bench.mjs, POLL_MS) polls at the same interval.
const pollInterval = 250 * time.Millisecond

// stallTimeout fails a workload when no run finished for that long.
const stallTimeout = 60 * time.Second

// progressEvery is how often a long phase reports progress.
const progressEvery = 2 * time.Second

// progress prints "<label>: 2,300/5,000 runs" lines at most every
// progressEvery.
type progress struct {
	w     io.Writer
	label string
	last  time.Time
}

func (p *progress) update(done, total int, what string) {
	if p == nil || time.Since(p.last) < progressEvery {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "%s: %s/%s %s\n", p.label, thousands(done), thousands(total), what)
}

// waitAll polls c until n runs have completed and returns when it saw
// them. It fails at once when a run failed or was canceled, and when no
// run completed for stallTimeout.
func waitAll(ctx context.Context, c runCounter, n int, p *progress) (time.Time, error) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	last, lastChange := -1, time.Now()
	for {
		counts, err := c.count(ctx)
		if err != nil {
			return time.Time{}, fmt.Errorf("count runs: %w", err)
		}
		now := time.Now()
		if counts.Failed+counts.Canceled > 0 {
			return now, fmt.Errorf("%d runs failed and %d were canceled (%d/%d completed); a bench workflow never fails, so the engine is wrong", counts.Failed, counts.Canceled, counts.Completed, n)
		}
		if counts.Completed >= n {
			return now, nil
		}
		if counts.Completed != last {
			last, lastChange = counts.Completed, now
		} else if now.Sub(lastChange) > stallTimeout {
			return now, fmt.Errorf("no run completed for %s: %d/%d completed, %d pending, %d running", stallTimeout, counts.Completed, n, counts.Pending, counts.Running)
		}
		p.update(counts.Completed, n, "runs")
		select {
		case <-ctx.Done():
			return now, ctx.Err()
		case <-tick.C:
		}
	}
}

// listRuns returns every run of the namespace.
func listRuns(ctx context.Context, b backend.Backend) ([]backend.WorkflowRun, error) {
	var all []backend.WorkflowRun
	after := ""
	for {
		page, err := b.ListWorkflowRuns(ctx, backend.ListWorkflowRunsParams{Limit: 1000, After: after})
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		all = append(all, page.Data...)
		if page.Next == nil || len(page.Data) == 0 {
			return all, nil
		}
		after = *page.Next
	}
}

// verify checks that runs are exactly the n runs of workflow name with
// inputs 0…n−1, each completed with the output of a workflow of steps
// function steps. Its error lists the first problems and how many there
// are.
func verify(runs []backend.WorkflowRun, name string, n, steps int) error {
	var problems []string
	seen := make([]bool, n)
	for _, r := range runs {
		var in Input
		if err := json.Unmarshal(r.Input, &in); err != nil || in.I < 0 || in.I >= n || r.WorkflowName != name {
			problems = append(problems, fmt.Sprintf("run %s: unexpected run of %q with input %s", r.ID, r.WorkflowName, r.Input))
			continue
		}
		if seen[in.I] {
			problems = append(problems, fmt.Sprintf("run %s: a second run with input %d", r.ID, in.I))
			continue
		}
		seen[in.I] = true
		if r.Status.Normalize() != backend.RunCompleted {
			problems = append(problems, fmt.Sprintf("run %s (input %d): status %s, error %s", r.ID, in.I, r.Status, r.Error))
			continue
		}
		var out Output
		want := expectedOutput(in.I, steps)
		if err := json.Unmarshal(r.Output, &out); err != nil || out != want {
			problems = append(problems, fmt.Sprintf("run %s (input %d): output %s, want {\"i\":%d,\"sum\":%d}", r.ID, in.I, r.Output, want.I, want.Sum))
		}
	}
	for i, ok := range seen {
		if !ok {
			problems = append(problems, fmt.Sprintf("no run with input %d", i))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	shown := problems[:min(len(problems), 5)]
	return fmt.Errorf("output verification failed: %d problems among %d runs of %s (%d expected):\n  %s", len(problems), len(runs), name, n, strings.Join(shown, "\n  "))
}

// lastFinish is the latest finished_at of runs (zero if none).
func lastFinish(runs []backend.WorkflowRun) time.Time {
	var t time.Time
	for _, r := range runs {
		if r.FinishedAt != nil && r.FinishedAt.After(t) {
			t = *r.FinishedAt
		}
	}
	return t
}

// endOf is when the last run finished: its finished_at when that lies
// between start and seen (the moment the bench saw the last completion),
// else seen.
func endOf(runs []backend.WorkflowRun, start, seen time.Time) time.Time {
	if t := lastFinish(runs); t.After(start) && !t.After(seen) {
		return t
	}
	return seen
}

// percentile is the nearest-rank p-th percentile of vs (0 if empty).
func percentile(vs []float64, p float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// median is the median of vs (0 if empty).
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// thousands formats n with comma separators: 5000 → "5,000".
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
