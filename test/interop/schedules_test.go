package interop

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestScheduleTicksAreOrdinaryRunsToATSWorker: a schedule fired by a Go
// worker (which registers no workflow) starts runs of a TypeScript
// workflow, which the TypeScript worker executes as any other run: the
// schedule's record in the run's context column is ignored by it, and the
// run's input is the schedule's.
func TestScheduleTicksAreOrdinaryRunsToATSWorker(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	ts.startWorker(2, tsWorkflow{Name: "interop-scheduled-ts", Kind: "echo"})
	e.goWorker() // fires the schedule; claims nothing (none registered)

	ctx := contextWithTimeout(t, 60*time.Second)
	_, err := e.client.PutSchedule(ctx, ow.ScheduleSpec{Name: "every-second", Workflow: "interop-scheduled-ts", Cron: "* * * * * *",
		Input: echoIn{Msg: "tick", N: 1}, Overlap: ow.OverlapAllowAll})
	must(t, err)
	eventually(t, 30*time.Second, "three ticks' runs completed by the TypeScript worker", func() (bool, string) {
		c, err := e.client.CountRuns(ctx)
		return err == nil && c.Completed >= 3, fmt.Sprintf("%+v, %v", c, err)
	})
	s, err := e.client.PauseSchedule(ctx, "every-second")
	must(t, err)
	eventually(t, 30*time.Second, "every started run to finish", func() (bool, string) {
		c, err := e.client.CountRuns(ctx)
		return err == nil && int64(c.Completed) == s.Started, fmt.Sprintf("%+v of %d started, %v", c, s.Started, err)
	})
	page, err := e.client.ListRuns(ctx, backend.ListWorkflowRunsParams{})
	must(t, err)
	ticks := map[time.Time]bool{}
	for _, r := range page.Data {
		sr, ok := backend.ScheduledRunOf(r.Context)
		var out echoOut
		if !ok || sr.Name != "every-second" || ticks[sr.ScheduledAt] || json.Unmarshal(r.Output, &out) != nil ||
			out.By != "ts" || out.Echo != (echoIn{Msg: "tick", N: 1}) || out.RunID != r.ID {
			t.Fatalf("run %s (context %s, output %s): want a TypeScript echo of the schedule's input, one run per tick", r.ID, r.Context, r.Output)
		}
		ticks[sr.ScheduledAt] = true
	}
	// The TypeScript client reads a scheduled run like any other.
	var seen tsRun
	ts.call("get", map[string]any{"id": page.Data[0].ID}, &seen)
	if seen.ID != page.Data[0].ID || seen.Status != "completed" || seen.WorkflowName != "interop-scheduled-ts" {
		t.Errorf("TS getWorkflowRun of a scheduled run = %+v", seen)
	}
}
