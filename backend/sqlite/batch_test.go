package sqlite

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// The SQLite side of group commit, beyond the shared suite: the injected
// clock, malformed writes, the savepoint around each write, concurrent
// batches, and batch creates on the fake clock.

func insertCompleted(runID, worker, name string, output string) backend.Write {
	return backend.Write{
		Kind: backend.WriteInsertStep, WorkflowRunID: runID, WorkerID: worker,
		Step: &backend.StepAttempt{StepName: name, Kind: backend.StepFunction, Status: backend.StepCompleted, Output: json.RawMessage(output)},
	}
}

func steps(t *testing.T, b *Backend, runID string) []backend.StepAttempt {
	t.Helper()
	page, err := b.ListStepAttempts(t.Context(), backend.ListStepAttemptsParams{WorkflowRunID: runID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return page.Data
}

func getRun(t *testing.T, b *Backend, runID string) *backend.WorkflowRun {
	t.Helper()
	r, err := b.GetWorkflowRun(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestApplyWritesStampsTimesFromTheInjectedClock(t *testing.T) {
	clock := newFakeClock()
	b, _ := openTest(t, clock)
	r := mustCreate(t, b, backend.CreateWorkflowRunParams{})
	mustClaim(t, b, time.Hour, "w")
	clock.Advance(time.Minute)
	now := clock.Now()
	ins := insertCompleted(r.ID, "w", "s", `{"a":1}`)
	errs := b.ApplyWrites(t.Context(), []backend.Write{ins, {Kind: backend.WriteCompleteRun, WorkflowRunID: r.ID, WorkerID: "w"}})
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("ApplyWrites: %v", errs)
	}
	if ins.Step.ID == "" {
		t.Fatal("the step id the backend chose was not written back to Write.Step.ID")
	}
	got := steps(t, b, r.ID)
	if len(got) != 1 || got[0].ID != ins.Step.ID {
		t.Fatalf("attempts = %+v, want the one inserted with id %s", got, ins.Step.ID)
	}
	s := got[0]
	for name, ts := range map[string]*time.Time{"started_at": s.StartedAt, "finished_at": s.FinishedAt, "created_at": &s.CreatedAt, "updated_at": &s.UpdatedAt} {
		if ts == nil || !ts.Equal(now) {
			t.Errorf("step %s = %v, want the clock's %v", name, ts, now)
		}
	}
	run := getRun(t, b, r.ID)
	if run.Status != backend.RunCompleted || string(run.Output) != "null" || run.FinishedAt == nil || !run.FinishedAt.Equal(now) {
		t.Fatalf("run = {%s, %s, finished %v}, want completed with null at %v", run.Status, run.Output, run.FinishedAt, now)
	}
}

func TestApplyWritesRejectsMalformedWritesAlone(t *testing.T) {
	b, _ := openTest(t, nil)
	r := mustCreate(t, b, backend.CreateWorkflowRunParams{})
	mustClaim(t, b, time.Hour, "w")
	bad := map[string]backend.Write{
		"an unknown kind":                 {Kind: 99, WorkflowRunID: r.ID, WorkerID: "w"},
		"an insert without a step":        {Kind: backend.WriteInsertStep, WorkflowRunID: r.ID, WorkerID: "w"},
		"an insert without a step name":   {Kind: backend.WriteInsertStep, WorkflowRunID: r.ID, WorkerID: "w", Step: &backend.StepAttempt{Kind: backend.StepFunction}},
		"an insert with an odd status":    {Kind: backend.WriteInsertStep, WorkflowRunID: r.ID, WorkerID: "w", Step: &backend.StepAttempt{StepName: "x", Kind: backend.StepFunction, Status: "done"}},
		"an insert with invalid context":  {Kind: backend.WriteInsertStep, WorkflowRunID: r.ID, WorkerID: "w", Step: &backend.StepAttempt{StepName: "x", Kind: backend.StepSleep, Context: json.RawMessage(`{`)}},
		"a finish without a step id":      {Kind: backend.WriteFinishStep, WorkflowRunID: r.ID, WorkerID: "w", Step: &backend.StepAttempt{Status: backend.StepCompleted}},
		"a finish to running":             {Kind: backend.WriteFinishStep, WorkflowRunID: r.ID, WorkerID: "w", Step: &backend.StepAttempt{ID: "step_x", Status: backend.StepRunning}},
		"a reschedule with invalid error": {Kind: backend.WriteRescheduleRun, WorkflowRunID: r.ID, WorkerID: "w", Error: json.RawMessage(`nope`)},
	}
	for name, w := range bad {
		t.Run(name, func(t *testing.T) {
			good := insertCompleted(r.ID, "w", "good "+name, `1`)
			errs := b.ApplyWrites(t.Context(), []backend.Write{w, good})
			if !errors.Is(errs[0], backend.ErrInvalidArgument) {
				t.Fatalf("malformed write: %v, want ErrInvalidArgument", errs[0])
			}
			if !strings.Contains(errs[0].Error(), r.ID) {
				t.Fatalf("error %q does not name the run", errs[0])
			}
			if errs[1] != nil {
				t.Fatalf("the good write beside it: %v", errs[1])
			}
		})
	}
}

func TestApplyWritesToAMissingRunIsRefusedByTheFence(t *testing.T) {
	b, _ := openTest(t, nil)
	for _, w := range []backend.Write{
		insertCompleted("wrun_missing", "w", "s", `1`),
		{Kind: backend.WriteFinishStep, WorkflowRunID: "wrun_missing", WorkerID: "w", Step: &backend.StepAttempt{ID: "step_x", Status: backend.StepCompleted}},
		{Kind: backend.WriteCompleteRun, WorkflowRunID: "wrun_missing", WorkerID: "w"},
		{Kind: backend.WriteParkRun, WorkflowRunID: "wrun_missing", WorkerID: "w", AvailableAt: time.Now()},
		{Kind: backend.WriteRescheduleRun, WorkflowRunID: "wrun_missing", WorkerID: "w", AvailableAt: time.Now()},
		{Kind: backend.WriteFailRun, WorkflowRunID: "wrun_missing", WorkerID: "w"},
	} {
		err := b.ApplyWrites(t.Context(), []backend.Write{w})[0]
		if !errors.Is(err, backend.ErrNotOwner) || !errors.Is(err, backend.ErrRunNotFound) {
			t.Errorf("%s of a missing run: %v, want ErrNotOwner and ErrRunNotFound", w.Kind, err)
		}
		if err != nil && !strings.Contains(err.Error(), w.Kind.String()) {
			t.Errorf("error %q does not name the write kind %q", err, w.Kind)
		}
	}
}

// TestAWriteThatFailsHalfWayLeavesNothingBehind makes the parent wake-up
// of a child's completion fail (a trigger aborts it): the completion is
// rolled back to its savepoint, with its event, and the next write of the
// batch still applies.
func TestAWriteThatFailsHalfWayLeavesNothingBehind(t *testing.T) {
	b, _ := openTest(t, nil)
	if _, err := b.db.ExecContext(t.Context(), `
		CREATE TRIGGER "explode_on_wake" BEFORE UPDATE OF "available_at" ON "workflow_runs"
		WHEN NEW."workflow_name" = 'explode' AND OLD."worker_id" IS NULL AND NEW."worker_id" IS NULL
		BEGIN SELECT RAISE(ABORT, 'wake-up refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
	parent := mustCreate(t, b, backend.CreateWorkflowRunParams{WorkflowName: "explode"})
	mustClaim(t, b, time.Hour, "wp")
	wait, err := b.CreateStepAttempt(t.Context(), backend.CreateStepAttemptParams{WorkflowRunID: parent.ID, WorkerID: "wp", StepName: "child", Kind: backend.StepWorkflow})
	if err != nil {
		t.Fatal(err)
	}
	child := mustCreate(t, b, backend.CreateWorkflowRunParams{ParentStepAttemptNamespaceID: &b.ns, ParentStepAttemptID: &wait.ID})
	if _, err := b.SetStepAttemptChildWorkflowRun(t.Context(), backend.SetStepAttemptChildWorkflowRunParams{
		WorkflowRunID: parent.ID, StepAttemptID: wait.ID, WorkerID: "wp", ChildWorkflowRunNamespaceID: b.ns, ChildWorkflowRunID: child.ID,
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.ApplyWrites(t.Context(), []backend.Write{{Kind: backend.WriteParkRun, WorkflowRunID: parent.ID, WorkerID: "wp", AvailableAt: time.Now().Add(time.Hour)}})[0]; err != nil {
		t.Fatalf("park the parent: %v", err)
	}
	if got := mustClaim(t, b, time.Hour, "wc"); len(got) != 1 || got[0].ID != child.ID {
		t.Fatalf("claimed %v, want the child", ids(got))
	}
	other := mustCreate(t, b, backend.CreateWorkflowRunParams{WorkflowName: "other"})
	mustClaim(t, b, time.Hour, "wo")

	events, err := b.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	errs := b.ApplyWrites(t.Context(), []backend.Write{
		{Kind: backend.WriteCompleteRun, WorkflowRunID: child.ID, WorkerID: "wc", Output: json.RawMessage(`"child"`)},
		{Kind: backend.WriteCompleteRun, WorkflowRunID: other.ID, WorkerID: "wo", Output: json.RawMessage(`"other"`)},
	})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "wake-up refused") {
		t.Fatalf("child's completion: %v, want the trigger's error", errs[0])
	}
	if errs[1] != nil {
		t.Fatalf("other run's completion: %v", errs[1])
	}
	if got := getRun(t, b, child.ID); got.Status != backend.RunRunning || got.WorkerID == nil || *got.WorkerID != "wc" || got.Output != nil {
		t.Fatalf("child = {%s, %v, %s}, want still running under wc with no output", got.Status, got.WorkerID, got.Output)
	}
	if got := getRun(t, b, other.ID); got.Status != backend.RunCompleted {
		t.Fatalf("other run is %s, want completed", got.Status)
	}
	waitEvent(t, events, backend.Event{Kind: backend.EventRunFinished, WorkflowRunID: other.ID})
	select {
	case e := <-events:
		t.Fatalf("unexpected event %+v after the batch (the rolled-back completion must not announce itself)", e)
	default:
	}
}

// TestConcurrentBatchesAllApply sends batches from many goroutines
// through two backends on one file, one standing for another process.
func TestConcurrentBatchesAllApply(t *testing.T) {
	a, path := openTest(t, nil)
	other := openAt(t, path, nil, false)
	const goroutines, runsEach, stepsEach = 6, 5, 4
	type owned struct{ id, worker string }
	var all [][]owned
	for g := range goroutines {
		var mine []owned
		for range runsEach {
			r := mustCreate(t, a, backend.CreateWorkflowRunParams{})
			w := fmt.Sprintf("g%d-%s", g, r.ID)
			got := mustClaim(t, a, time.Hour, w)
			if len(got) != 1 || got[0].ID != r.ID {
				t.Fatalf("claimed %v, want %s", ids(got), r.ID)
			}
			mine = append(mine, owned{r.ID, w})
		}
		all = append(all, mine)
	}
	var wg sync.WaitGroup
	for g, mine := range all {
		be := a
		if g%2 == 1 {
			be = other
		}
		wg.Go(func() {
			for s := range stepsEach {
				var ws []backend.Write
				for _, o := range mine {
					ws = append(ws, insertCompleted(o.id, o.worker, fmt.Sprintf("s%d", s), fmt.Sprint(s)))
				}
				if s == stepsEach-1 {
					for _, o := range mine {
						ws = append(ws, backend.Write{Kind: backend.WriteCompleteRun, WorkflowRunID: o.id, WorkerID: o.worker})
					}
				}
				for i, err := range be.ApplyWrites(t.Context(), ws) {
					if err != nil {
						t.Errorf("goroutine %d batch %d write %d: %v", g, s, i, err)
					}
				}
			}
		})
	}
	wg.Wait()
	for _, mine := range all {
		for _, o := range mine {
			if n := len(steps(t, a, o.id)); n != stepsEach {
				t.Errorf("run %s has %d attempts, want %d", o.id, n, stepsEach)
			}
			if r := getRun(t, a, o.id); r.Status != backend.RunCompleted {
				t.Errorf("run %s is %s, want completed", o.id, r.Status)
			}
		}
	}
}

func TestCreateWorkflowRunsWithAMissingParentInsertsNothing(t *testing.T) {
	b, _ := openTest(t, nil)
	ps := []backend.CreateWorkflowRunParams{
		{WorkflowName: "a"},
		{WorkflowName: "b", ParentStepAttemptNamespaceID: &b.ns, ParentStepAttemptID: ptr("step_missing")},
	}
	runs, err := b.CreateWorkflowRuns(t.Context(), ps)
	if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "entry 1") || runs != nil {
		t.Fatalf("CreateWorkflowRuns = %d runs, %v; want none and ErrInvalidArgument naming entry 1", len(runs), err)
	}
	counts, err := b.CountWorkflowRuns(t.Context())
	if err != nil || counts != (backend.RunCounts{}) {
		t.Fatalf("counts = %+v, %v; want no runs", counts, err)
	}
}

func TestCreateWorkflowRunsFollowsTheInjectedClock(t *testing.T) {
	clock := newFakeClock()
	b, _ := openTest(t, clock)
	first, err := b.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{{WorkflowName: "wf", IdempotencyKey: ptr("k")}})
	if err != nil {
		t.Fatal(err)
	}
	if !first[0].CreatedAt.Equal(clock.Now()) || !first[0].AvailableAt.Equal(clock.Now()) {
		t.Fatalf("created_at %v, available_at %v; want the clock's %v", first[0].CreatedAt, first[0].AvailableAt, clock.Now())
	}
	clock.Advance(backend.IdempotencyPeriod - time.Millisecond)
	again, err := b.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{{WorkflowName: "wf", IdempotencyKey: ptr("k")}})
	if err != nil || again[0].ID != first[0].ID {
		t.Fatalf("within the window: %v, %v; want run %s again", again, err, first[0].ID)
	}
	clock.Advance(2 * time.Millisecond)
	later, err := b.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{{WorkflowName: "wf", IdempotencyKey: ptr("k")}})
	if err != nil || later[0].ID == first[0].ID {
		t.Fatalf("after the window: %v, %v; want a new run", later, err)
	}
}
