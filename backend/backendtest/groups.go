package backendtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Write groups: the writes of one pass apply whole or not at all, in
// order, whatever fails and wherever in the group it fails, and one
// group's failure leaves the other groups of the batch alone.

func testWriteGroups(t *testing.T, s *suite) {
	t.Run("a group applies whole or not at all, whichever of its writes the database refuses", func(t *testing.T) {
		t.Parallel()
		const steps = 3 // a group: three step inserts, then the run's completion
		for bad := range steps {
			t.Run(fmt.Sprintf("the write at position %d", bad), func(t *testing.T) {
				t.Parallel()
				b := s.newBackend(t)
				w := newWorkerID()
				before := startRun(t, b, w, backend.CreateWorkflowRunParams{})
				victim := startRun(t, b, w, backend.CreateWorkflowRunParams{})
				after := startRun(t, b, w, backend.CreateWorkflowRunParams{})
				// An attempt the victim already has: inserting its id again
				// is refused by the database itself (a duplicate key), not by
				// any check before it.
				existing := insertStep(victim.ID, w, "earlier", backend.StepCompleted, `0`, "")
				requireApplied(t, "the victim's earlier step", applyWrites(t, b, existing))
				group := func(run *backend.WorkflowRun) []backend.Write {
					var g []backend.Write
					for i := range steps {
						g = append(g, insertStep(run.ID, w, fmt.Sprintf("s%d", i), backend.StepCompleted, fmt.Sprint(i), ""))
					}
					return append(g, completeWrite(run.ID, w, `"done"`))
				}
				failing := group(victim)
				failing[bad].Step.ID = existing.Step.ID
				errs := applyGroups(t, b, group(before), failing, group(after))
				if errs[0] != nil || errs[2] != nil {
					t.Fatalf("the groups beside the failing one: %v, %v; want both applied", errs[0], errs[2])
				}
				if errs[1] == nil {
					t.Fatal("the group with a duplicate step id applied")
				}
				for _, r := range []*backend.WorkflowRun{before, after} {
					if got := getRun(t, b, r.ID); got.Status != backend.RunCompleted {
						t.Errorf("run %s of a good group is %s, want completed", r.ID, got.Status)
					}
					requireStepCount(t, b, r.ID, steps)
				}
				got := getRun(t, b, victim.ID)
				if got.Status != backend.RunRunning || got.WorkerID == nil || *got.WorkerID != w {
					t.Errorf("the failing group's run is %s under %v, want still running under %s", got.Status, got.WorkerID, w)
				}
				requireStepCount(t, b, victim.ID, 1) // only the earlier attempt: nothing of the group
			})
		}
	})

	t.Run("a group with an invalid write applies nothing, the others apply", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		victim := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		other := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		for pos, what := range []string{"a step whose output is a lone surrogate", "a completion whose output is not JSON"} {
			g := []backend.Write{
				insertStep(victim.ID, w, "a", backend.StepCompleted, `1`, ""),
				completeWrite(victim.ID, w, `2`),
			}
			if pos == 0 {
				g[0].Step.Output = json.RawMessage(`"\ud800"`)
			} else {
				g[1].Output = json.RawMessage(`{`)
			}
			errs := applyGroups(t, b, g, []backend.Write{insertStep(other.ID, w, fmt.Sprint("ok", pos), backend.StepCompleted, `1`, "")})
			requireErrorIs(t, what, errs[0], backend.ErrInvalidArgument)
			if errs[1] != nil {
				t.Fatalf("%s: the other group: %v", what, errs[1])
			}
			requireStepCount(t, b, victim.ID, 0)
			if got := getRun(t, b, victim.ID); got.Status != backend.RunRunning {
				t.Fatalf("%s: run is %s, want still running", what, got.Status)
			}
		}
		requireStepCount(t, b, other.ID, 2)
	})

	t.Run("a group of the wrong shape is refused whole", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		r1 := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		r2 := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		shapes := map[string][]backend.Write{
			"a transition before a step write": {completeWrite(r1.ID, w, `1`), insertStep(r1.ID, w, "late", backend.StepCompleted, `1`, "")},
			"writes of two runs":               {insertStep(r1.ID, w, "a", backend.StepCompleted, `1`, ""), insertStep(r2.ID, w, "b", backend.StepCompleted, `1`, "")},
			"an insert without an attempt id": {{Kind: backend.WriteInsertStep, WorkflowRunID: r1.ID, WorkerID: w,
				Step: &backend.StepAttempt{StepName: "x", Kind: backend.StepFunction, Status: backend.StepCompleted}}},
			"an empty group": {},
		}
		for what, g := range shapes {
			errs := applyGroups(t, b, g)
			requireErrorIs(t, what, errs[0], backend.ErrInvalidArgument)
		}
		for _, r := range []*backend.WorkflowRun{r1, r2} {
			requireStepCount(t, b, r.ID, 0)
			if got := getRun(t, b, r.ID); got.Status != backend.RunRunning {
				t.Fatalf("run %s is %s after refused groups, want running", r.ID, got.Status)
			}
		}
	})

	t.Run("a malformed write is refused with ErrInvalidArgument, naming its run, while a group beside it applies", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		other := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		malformed := map[string]backend.Write{
			"an unknown kind":                 {Kind: 99, WorkflowRunID: r.ID, WorkerID: w},
			"an insert without a step":        {Kind: backend.WriteInsertStep, WorkflowRunID: r.ID, WorkerID: w},
			"an insert without a step name":   {Kind: backend.WriteInsertStep, WorkflowRunID: r.ID, WorkerID: w, Step: &backend.StepAttempt{ID: newStepID(), Kind: backend.StepFunction}},
			"an insert with an odd status":    {Kind: backend.WriteInsertStep, WorkflowRunID: r.ID, WorkerID: w, Step: &backend.StepAttempt{ID: newStepID(), StepName: "x", Kind: backend.StepFunction, Status: "done"}},
			"an insert with invalid context":  {Kind: backend.WriteInsertStep, WorkflowRunID: r.ID, WorkerID: w, Step: &backend.StepAttempt{ID: newStepID(), StepName: "x", Kind: backend.StepSleep, Context: json.RawMessage(`{`)}},
			"a finish without a step id":      {Kind: backend.WriteFinishStep, WorkflowRunID: r.ID, WorkerID: w, Step: &backend.StepAttempt{Status: backend.StepCompleted}},
			"a finish to running":             {Kind: backend.WriteFinishStep, WorkflowRunID: r.ID, WorkerID: w, Step: &backend.StepAttempt{ID: newStepID(), Status: backend.StepRunning}},
			"a reschedule with invalid error": {Kind: backend.WriteRescheduleRun, WorkflowRunID: r.ID, WorkerID: w, Error: json.RawMessage(`nope`)},
		}
		n := 0
		for what, bad := range malformed {
			errs := applyGroups(t, b, []backend.Write{bad}, []backend.Write{insertStep(other.ID, w, what, backend.StepCompleted, `1`, "")})
			requireErrorIs(t, what, errs[0], backend.ErrInvalidArgument)
			if !strings.Contains(errs[0].Error(), r.ID) {
				t.Fatalf("%s: error %q does not name the run", what, errs[0])
			}
			if errs[1] != nil {
				t.Fatalf("%s: the group beside it: %v", what, errs[1])
			}
			n++
		}
		requireRun(t, "run after its malformed writes", getRun(t, b, r.ID), r)
		requireStepCount(t, b, r.ID, 0)
		requireStepCount(t, b, other.ID, n)
	})

	t.Run("a group the fence refuses applies nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		owner, stale := newWorkerID(), newWorkerID()
		r := startRun(t, b, owner, backend.CreateWorkflowRunParams{})
		errs := applyGroups(t, b, []backend.Write{
			insertStep(r.ID, stale, "a", backend.StepCompleted, `1`, ""),
			insertStep(r.ID, stale, "b", backend.StepCompleted, `2`, ""),
			completeWrite(r.ID, stale, `3`),
		})
		requireWriteRefused(t, "a stale worker's group", errs[0], r.ID)
		requireStepCount(t, b, r.ID, 0)
		if got := getRun(t, b, r.ID); got.Status != backend.RunRunning || *got.WorkerID != owner {
			t.Fatalf("run is %s under %v, want running under its owner", got.Status, got.WorkerID)
		}
	})

	t.Run("a completion past the run's deadline fails the run with the deadline error", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		deadline := clk.Now().Add(time.Minute)
		r := startRun(t, b, w, backend.CreateWorkflowRunParams{DeadlineAt: &deadline})
		clk.Set(deadline.Add(time.Millisecond)) // the deadline passes while the run executes
		errs := applyGroups(t, b, []backend.Write{insertStep(r.ID, w, "last", backend.StepCompleted, `1`, ""), completeWrite(r.ID, w, `"late"`)})
		if errs[0] != nil {
			t.Fatalf("the late pass's group: %v, want applied (as a failure)", errs[0])
		}
		got := getRun(t, b, r.ID)
		if got.Status != backend.RunFailed || got.Output != nil || !jsonEqual(got.Error, backend.DeadlineExceededError()) {
			t.Fatalf("run = {%s, output %s, error %s}, want failed with %s and no output", got.Status, got.Output, got.Error, backend.DeadlineExceededError())
		}
		requireTimeAt(t, "finished_at", got.FinishedAt, clk.Now())
		requireStepCount(t, b, r.ID, 1)
	})

	t.Run("lookups by an id no backend can hold find nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		for _, id := range []string{"wrun_\x00", "wrun_\xff\xfe"} {
			_, err := b.GetWorkflowRun(t.Context(), id)
			requireErrorIs(t, fmt.Sprintf("GetWorkflowRun(%q)", id), err, backend.ErrRunNotFound)
			_, err = b.CancelWorkflowRun(t.Context(), id)
			requireErrorIs(t, fmt.Sprintf("CancelWorkflowRun(%q)", id), err, backend.ErrRunNotFound)
			_, err = b.GetStepAttempt(t.Context(), id)
			requireErrorIs(t, fmt.Sprintf("GetStepAttempt(%q)", id), err, backend.ErrStepNotFound)
			page, err := b.ListStepAttempts(t.Context(), backend.ListStepAttemptsParams{WorkflowRunID: id})
			if err != nil || len(page.Data) != 0 {
				t.Fatalf("ListStepAttempts(%q) = %v, %v; want an empty page", id, page, err)
			}
			if _, err := b.CreateWorkflowRun(t.Context(), backend.CreateWorkflowRunParams{WorkflowName: "wf" + id[5:]}); !errors.Is(err, backend.ErrInvalidArgument) {
				t.Fatalf("CreateWorkflowRun with workflow name %q: %v, want ErrInvalidArgument", "wf"+id[5:], err)
			}
		}
	})
}
