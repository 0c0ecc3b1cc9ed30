package backendtest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

func testStepAttempts(t *testing.T, s *suite) {
	kinds := []struct {
		kind    backend.StepKind
		context string
	}{
		{backend.StepFunction, ""},
		{backend.StepSleep, `{"kind":"sleep","resumeAt":"2030-01-02T03:04:05.678Z"}`},
		{backend.StepWorkflow, `{"kind":"workflow","timeoutAt":null}`},
		{backend.StepSignalSend, ""},
		{backend.StepSignalWait, `{"kind":"signal-wait","signal":"approve","timeoutAt":"2030-01-02T03:04:05.678Z"}`},
	}
	for _, k := range kinds {
		t.Run("creates a running "+string(k.kind)+" attempt on an owned run", func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			w := newWorkerID()
			run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
			start := time.Now()
			got := createStep(t, b, run.ID, w, "step-"+string(k.kind), k.kind, k.context)
			win := since(start)
			if got.ID == "" {
				t.Fatal("created step attempt has no id")
			}
			want := &backend.StepAttempt{
				NamespaceID:   b.NamespaceID(),
				ID:            got.ID,
				WorkflowRunID: run.ID,
				StepName:      "step-" + string(k.kind),
				Kind:          k.kind,
				Status:        backend.StepRunning,
				Config:        json.RawMessage(`{}`),
				Context:       rawOrNil(k.context),
				StartedAt:     requireTimeIn(t, "started_at", got.StartedAt, win),
				CreatedAt:     *requireTimeIn(t, "created_at", &got.CreatedAt, win),
			}
			requireStep(t, "created step attempt", got, want)
			requireStep(t, "step attempt read back", getStep(t, b, got.ID), want)
			requireRun(t, "run after creating a step attempt", getRun(t, b, run.ID), run)
		})
	}

	t.Run("refuses to create an attempt on a run owned by another worker, with ErrNotOwner", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		run := startRun(t, b, newWorkerID(), backend.CreateWorkflowRunParams{})
		_, err := Single(b).CreateStepAttempt(t.Context(), CreateStepAttemptParams{WorkflowRunID: run.ID, WorkerID: newWorkerID(), StepName: "s", Kind: backend.StepFunction})
		requireErrorIs(t, "create by a stranger", err, backend.ErrNotOwner)
		requireStepCount(t, b, run.ID, 0)
	})

	t.Run("returns ErrStepNotFound for an unknown attempt", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		_, err := b.GetStepAttempt(t.Context(), "step_missing")
		requireErrorIs(t, "GetStepAttempt of an unknown id", err, backend.ErrStepNotFound)
	})

	t.Run("completes a running attempt with its output", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		step := createStep(t, b, run.ID, w, "s", backend.StepFunction, "")
		start := time.Now()
		got, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: w, Output: json.RawMessage(`{"rows":3}`)})
		if err != nil {
			t.Fatal(err)
		}
		want := *step
		want.Status = backend.StepCompleted
		want.Output = json.RawMessage(`{"rows":3}`)
		want.FinishedAt = requireTimeIn(t, "finished_at", got.FinishedAt, since(start))
		requireStep(t, "completed step attempt", got, &want)
		requireStep(t, "completed step attempt read back", getStep(t, b, step.ID), &want)
	})

	t.Run("completes an attempt idempotently, keeping the first output and finish time", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		step := createStep(t, b, run.ID, w, "s", backend.StepFunction, "")
		first, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: w, Output: json.RawMessage(`"first"`)})
		if err != nil {
			t.Fatal(err)
		}
		second, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: w, Output: json.RawMessage(`"second"`)})
		if err != nil {
			t.Fatalf("completing a completed attempt again: %v", err)
		}
		requireStep(t, "second complete", second, first)
		requireStep(t, "attempt read back after the second complete", getStep(t, b, step.ID), first)
	})

	t.Run("stores a nil step output as JSON null", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		step := createStep(t, b, run.ID, w, "s", backend.StepFunction, "")
		if _, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: w}); err != nil {
			t.Fatal(err)
		}
		requireJSON(t, "output", getStep(t, b, step.ID).Output, json.RawMessage(`null`))
	})

	t.Run("fails a running attempt with its error", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		step := createStep(t, b, run.ID, w, "s", backend.StepFunction, "")
		errJSON := json.RawMessage(`{"name":"TypeError","message":"x is undefined","stack":"TypeError: x\n    at f"}`)
		start := time.Now()
		got, err := Single(b).FailStepAttempt(t.Context(), FailStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: w, Error: errJSON})
		if err != nil {
			t.Fatal(err)
		}
		want := *step
		want.Status = backend.StepFailed
		want.Error = errJSON
		want.FinishedAt = requireTimeIn(t, "finished_at", got.FinishedAt, since(start))
		requireStep(t, "failed step attempt", got, &want)
		requireStep(t, "failed step attempt read back", getStep(t, b, step.ID), &want)
		requireRun(t, "run after a failed step attempt", getRun(t, b, run.ID), run)
	})

	writes := []struct {
		name  string
		write func(b backend.Backend, t *testing.T, runID, stepID, worker string) error
	}{
		{"WriteFinishStep completing an attempt", func(b backend.Backend, t *testing.T, runID, stepID, worker string) error {
			_, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: runID, StepAttemptID: stepID, WorkerID: worker, Output: json.RawMessage(`1`)})
			return err
		}},
		{"WriteFinishStep failing an attempt", func(b backend.Backend, t *testing.T, runID, stepID, worker string) error {
			_, err := Single(b).FailStepAttempt(t.Context(), FailStepAttemptParams{WorkflowRunID: runID, StepAttemptID: stepID, WorkerID: worker, Error: json.RawMessage(`{"message":"x"}`)})
			return err
		}},
	}
	for _, wr := range writes {
		t.Run(wr.name+" refuses an attempt of a run that is no longer running, with ErrNotOwner", func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			w := newWorkerID()
			run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
			step := createStep(t, b, run.ID, w, "s", backend.StepFunction, "")
			completeRun(t, b, run.ID, w, `1`)
			requireErrorIs(t, wr.name+" after the run completed", wr.write(b, t, run.ID, step.ID, w), backend.ErrNotOwner)
			requireStep(t, "step attempt after the refused write", getStep(t, b, step.ID), step)
		})

		t.Run(wr.name+" refuses an unknown attempt with ErrStepNotFound", func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			w := newWorkerID()
			run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
			requireErrorIs(t, wr.name+" of an unknown attempt", wr.write(b, t, run.ID, "step_missing", w), backend.ErrStepNotFound)
		})
	}
}

func listSteps(t testing.TB, b backend.Backend, p backend.ListStepAttemptsParams) *backend.Page[backend.StepAttempt] {
	t.Helper()
	page, err := b.ListStepAttempts(t.Context(), p)
	if err != nil {
		t.Fatalf("ListStepAttempts(%+v): %v", p, err)
	}
	return page
}

func pageStepIDs(p *backend.Page[backend.StepAttempt]) []string {
	ids := make([]string, len(p.Data))
	for i, a := range p.Data {
		ids[i] = a.ID
	}
	return ids
}

func requireStepCount(t testing.TB, b backend.Backend, runID string, want int) {
	t.Helper()
	if got := len(listSteps(t, b, backend.ListStepAttemptsParams{WorkflowRunID: runID}).Data); got != want {
		t.Fatalf("run %s has %d step attempts, want %d", runID, got, want)
	}
}

// createSteps creates n function attempts on an owned run, oldest first.
func createSteps(t testing.TB, b backend.Backend, runID, worker string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = createStep(t, b, runID, worker, "step", backend.StepFunction, "").ID
	}
	return ids
}

func testListStepAttempts(t *testing.T, s *suite) {
	t.Run("lists one run's attempts oldest first", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		ids := createSteps(t, b, run.ID, w, 3)
		other := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		createSteps(t, b, other.ID, w, 2)

		page := listSteps(t, b, backend.ListStepAttemptsParams{WorkflowRunID: run.ID})
		requireIDs(t, "listed attempts", pageStepIDs(page), ids)
		requireCursors(t, "the only page", page, false, false)
		requireStep(t, "listed attempt", &page.Data[0], getStep(t, b, ids[0]))
	})

	t.Run("returns an empty page without cursors for a run without attempts", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		run := createRun(t, b, backend.CreateWorkflowRunParams{})
		page := listSteps(t, b, backend.ListStepAttemptsParams{WorkflowRunID: run.ID})
		if page.Data == nil || len(page.Data) != 0 {
			t.Fatalf("listed %#v for a new run, want an empty, non-nil list", page.Data)
		}
		requireCursors(t, "empty page", page, false, false)
	})

	for _, c := range []struct {
		name         string
		steps, limit int
	}{
		{"paginates forward with After and back with Before", 5, 2},
		{"has no next page when the last page is exactly full", 4, 2},
		{"has a single page when the limit equals the number of attempts", 3, 3},
		{"returns 100 attempts per page when no limit is given", backend.DefaultPageSize + 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			w := newWorkerID()
			run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
			ids := createSteps(t, b, run.ID, w, c.steps)
			list := func(after, before string) ([]string, *string, *string) {
				page := listSteps(t, b, backend.ListStepAttemptsParams{WorkflowRunID: run.ID, Limit: c.limit, After: after, Before: before})
				return pageStepIDs(page), page.Next, page.Prev
			}
			limit := c.limit
			if limit == 0 {
				limit = backend.DefaultPageSize
			}
			requirePages(t, list, limit, ids)
		})
	}

	t.Run("rejects both After and Before, and limits out of range, with ErrInvalidArgument", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		createSteps(t, b, run.ID, w, 3)
		first := listSteps(t, b, backend.ListStepAttemptsParams{WorkflowRunID: run.ID, Limit: 1})
		for what, p := range map[string]backend.ListStepAttemptsParams{
			"both cursors":                   {WorkflowRunID: run.ID, After: *first.Next, Before: *first.Next},
			"a negative limit":               {WorkflowRunID: run.ID, Limit: -1},
			"a limit above the largest page": {WorkflowRunID: run.ID, Limit: backend.MaxPageSize + 1},
		} {
			_, err := b.ListStepAttempts(t.Context(), p)
			requireErrorIs(t, what, err, backend.ErrInvalidArgument)
		}
	})
}

func testLinkChild(t *testing.T, s *suite) {
	t.Run("links a running workflow attempt to its child run", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		step := createStep(t, b, run.ID, w, "child", backend.StepWorkflow, `{"kind":"workflow","timeoutAt":null}`)
		child := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "child"})
		ns := b.NamespaceID()
		got, err := Single(b).SetStepAttemptChildWorkflowRun(t.Context(), SetStepAttemptChildWorkflowRunParams{
			WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: w, ChildWorkflowRunNamespaceID: ns, ChildWorkflowRunID: child.ID})
		if err != nil {
			t.Fatal(err)
		}
		want := *step
		want.ChildWorkflowRunNamespaceID = &ns
		want.ChildWorkflowRunID = &child.ID
		requireStep(t, "linked attempt", got, &want)
		requireStep(t, "linked attempt read back", getStep(t, b, step.ID), &want)
	})

	t.Run("refuses when the parent run is not owned by the worker, with ErrNotOwner", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		step := createStep(t, b, run.ID, w, "child", backend.StepWorkflow, `{"kind":"workflow","timeoutAt":null}`)
		child := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "child"})
		_, err := Single(b).SetStepAttemptChildWorkflowRun(t.Context(), SetStepAttemptChildWorkflowRunParams{
			WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: newWorkerID(), ChildWorkflowRunNamespaceID: b.NamespaceID(), ChildWorkflowRunID: child.ID})
		requireErrorIs(t, "link by a stranger", err, backend.ErrNotOwner)
		requireStep(t, "attempt after the refused link", getStep(t, b, step.ID), step)
	})

	t.Run("refuses when the attempt is no longer running, with ErrStepNotRunning", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		step := createStep(t, b, run.ID, w, "child", backend.StepWorkflow, `{"kind":"workflow","timeoutAt":null}`)
		done, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: w, Output: json.RawMessage(`1`)})
		if err != nil {
			t.Fatal(err)
		}
		child := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "child"})
		_, err = Single(b).SetStepAttemptChildWorkflowRun(t.Context(), SetStepAttemptChildWorkflowRunParams{
			WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: w, ChildWorkflowRunNamespaceID: b.NamespaceID(), ChildWorkflowRunID: child.ID})
		requireErrorIs(t, "link of a completed attempt", err, backend.ErrStepNotRunning)
		requireStep(t, "attempt after the refused link", getStep(t, b, step.ID), done)
	})
}

func testListStepHistories(t *testing.T, s *suite) {
	t.Run("returns each run's attempts as ListStepAttempts does, and nothing for runs without any or of another namespace", func(t *testing.T) {
		t.Parallel()
		b, other := s.newBackend(t), s.newBackend(t)
		hr, ok := b.(backend.HistoryReader)
		if !ok {
			t.Skip("the backend does not implement backend.HistoryReader")
		}
		w := newWorkerID()
		x := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "x"})
		y := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "y"})
		empty := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "empty"})
		foreign := startRun(t, other, w, backend.CreateWorkflowRunParams{WorkflowName: "foreign"})
		createSteps(t, b, x.ID, w, 3)
		createSteps(t, b, y.ID, w, 2)
		createSteps(t, other, foreign.ID, w, 1)

		got, err := hr.ListStepHistories(t.Context(), []string{x.ID, y.ID, empty.ID, foreign.ID, "wr_missing"})
		if err != nil {
			t.Fatalf("ListStepHistories: %v", err)
		}
		if len(got) != 2 {
			t.Fatalf("ListStepHistories returned histories of %d runs, want 2 (x and y)", len(got))
		}
		for _, r := range []*backend.WorkflowRun{x, y} {
			want := stepsOf(t, b, r.ID)
			if len(got[r.ID]) != len(want) {
				t.Fatalf("history of run %s: %d attempts, want %d", r.WorkflowName, len(got[r.ID]), len(want))
			}
			for i := range want {
				requireStep(t, fmt.Sprintf("history of run %s, attempt %d", r.WorkflowName, i), &got[r.ID][i], &want[i])
			}
		}
		none, err := hr.ListStepHistories(t.Context(), nil)
		if err != nil || len(none) != 0 {
			t.Fatalf("ListStepHistories(nil) = %v, %v; want no histories", none, err)
		}
	})
}
