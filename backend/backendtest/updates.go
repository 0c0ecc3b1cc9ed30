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

// updates returns b's UpdateStore, skipping the test without one.
func updates(t testing.TB, b backend.Backend) backend.UpdateStore {
	t.Helper()
	u, ok := b.(backend.UpdateStore)
	if !ok {
		t.Skip("the backend has no UpdateStore")
	}
	return u
}

// admit admits update id named name with input to run.
func admit(t testing.TB, b backend.Backend, runID, id, name, input string) *backend.RunUpdate {
	t.Helper()
	u, err := updates(t, b).AdmitRunUpdate(t.Context(), backend.AdmitRunUpdateParams{WorkflowRunID: runID, UpdateID: id, Name: name, Input: rawOrNil(input)})
	if err != nil {
		t.Fatalf("AdmitRunUpdate(%s, %s): %v", runID, id, err)
	}
	return u
}

func getUpdate(t testing.TB, b backend.Backend, runID, id string) *backend.RunUpdate {
	t.Helper()
	u, err := updates(t, b).GetRunUpdate(t.Context(), runID, id)
	if err != nil {
		t.Fatalf("GetRunUpdate(%s, %s): %v", runID, id, err)
	}
	return u
}

func settle(t testing.TB, b backend.Backend, p backend.SettleRunUpdateParams) {
	t.Helper()
	if err := updates(t, b).SettleRunUpdate(t.Context(), p); err != nil {
		t.Fatalf("SettleRunUpdate(%+v): %v", p, err)
	}
}

// requireUpdate checks an update's id, name, seq, state, input, result and
// error.
func requireUpdate(t testing.TB, what string, got *backend.RunUpdate, id, name string, seq int64, state backend.RunUpdateState, input, result, errJSON string) {
	t.Helper()
	if got.ID != id || got.Name != name || got.Seq != seq || got.State != state {
		t.Fatalf("%s = {id %s, name %s, seq %d, state %s}; want {%s, %s, %d, %s}", what, got.ID, got.Name, got.Seq, got.State, id, name, seq, state)
	}
	requireJSON(t, what+": input", got.Input, json.RawMessage(input))
	if result == "" {
		if len(got.Result) != 0 {
			t.Fatalf("%s: result = %s, want none", what, got.Result)
		}
	} else {
		requireJSON(t, what+": result", got.Result, json.RawMessage(result))
	}
	if errJSON == "" {
		if len(got.Error) != 0 {
			t.Fatalf("%s: error = %s, want none", what, got.Error)
		}
	} else {
		requireJSON(t, what+": error", got.Error, json.RawMessage(errJSON))
	}
	if state.Settled() != (got.SettledAt != nil) {
		t.Fatalf("%s: settled_at = %v with state %s", what, got.SettledAt, state)
	}
}

// testUpdates specifies the UpdateStore: updates of runs (go migration 15;
// control-and-events.md §4.4).
func testUpdates(t *testing.T, s *suite) {
	t.Run("admission is idempotent per update id: the same id returns the stored row, in any state, even after the run finished", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "cart"})
		first := admit(t, b, run.ID, "u1", "add", `{"item":"apple"}`)
		if first.Duplicate {
			t.Fatalf("first admission = %+v; want not a duplicate", first)
		}
		requireUpdate(t, "first admission", first, "u1", "add", 1, backend.UpdateAdmitted, `{"item":"apple"}`, "", "")
		again := admit(t, b, run.ID, "u1", "add", `{"item":"pear"}`)
		if !again.Duplicate {
			t.Fatalf("second admission of u1 = %+v; want a duplicate", again)
		}
		requireUpdate(t, "second admission of u1", again, "u1", "add", 1, backend.UpdateAdmitted, `{"item":"apple"}`, "", "")
		second := admit(t, b, run.ID, "u2", "add", ``)
		requireUpdate(t, "another id", second, "u2", "add", 2, backend.UpdateAdmitted, `null`, "", "")

		settle(t, b, backend.SettleRunUpdateParams{WorkflowRunID: run.ID, WorkerID: w, UpdateID: "u1", State: backend.UpdateCompleted, Result: json.RawMessage(`3`)})
		completeRun(t, b, run.ID, w, `"done"`)
		after := admit(t, b, run.ID, "u1", "add", `{"item":"apple"}`)
		if !after.Duplicate {
			t.Fatalf("admission of u1 after the run finished = %+v; want the stored row", after)
		}
		requireUpdate(t, "u1 after the run finished", after, "u1", "add", 1, backend.UpdateCompleted, `{"item":"apple"}`, `3`, "")

		_, err := updates(t, b).AdmitRunUpdate(t.Context(), backend.AdmitRunUpdateParams{WorkflowRunID: run.ID, UpdateID: "u3", Name: "add"})
		requireErrorIs(t, "a new update id on a completed run", err, backend.ErrRunTerminal)
		_, err = updates(t, b).AdmitRunUpdate(t.Context(), backend.AdmitRunUpdateParams{WorkflowRunID: "wr_missing", UpdateID: "u1", Name: "add"})
		requireErrorIs(t, "an update of a missing run", err, backend.ErrRunNotFound)
		_, err = updates(t, b).GetRunUpdate(t.Context(), run.ID, "u3")
		requireErrorIs(t, "GetRunUpdate of an id never admitted", err, backend.ErrUpdateNotFound)
		list, err := updates(t, b).ListRunUpdates(t.Context(), run.ID, false)
		if err != nil || len(list) != 2 || list[0].ID != "u1" || list[1].ID != "u2" {
			t.Fatalf("ListRunUpdates = %+v, %v; want u1 then u2", list, err)
		}
		open, err := updates(t, b).ListRunUpdates(t.Context(), run.ID, true)
		if err != nil || len(open) != 1 || open[0].ID != "u2" {
			t.Fatalf("ListRunUpdates(only admitted) = %+v, %v; want u2", open, err)
		}
	})

	t.Run("wakes a parked run now, keeping the wake-up time its sleep recorded; an owned run is left as it is", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "sleeper"})
		resumeAt := ms(time.Now().Add(farFuture))
		sleep := createStep(t, b, run.ID, w, "nap", backend.StepSleep, fmt.Sprintf(`{"kind":"sleep","resumeAt":%q}`, backend.FormatTime(resumeAt)))
		admit(t, b, run.ID, "while-owned", "poke", `1`)
		requireRun(t, "owned run after an admission", getRun(t, b, run.ID), run)
		park(t, b, run.ID, w, resumeAt)
		start := time.Now()
		admit(t, b, run.ID, "while-parked", "poke", `2`)
		requireStep(t, "the sleep after the wake", getStep(t, b, sleep.ID), sleep)
		requireWoken(t, b, run, since(start))
	})

	t.Run("a duplicate admission of an admitted update wakes the parked run again", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "sleeper"})
		admit(t, b, run.ID, "u1", "poke", `1`)
		park(t, b, run.ID, w, ms(time.Now().Add(farFuture)))
		start := time.Now()
		admit(t, b, run.ID, "u1", "poke", `1`)
		requireWoken(t, b, run, since(start))
	})

	t.Run("a rejection writes only the update's row: no step attempt, the run untouched; the first settlement wins", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ch := subscribe(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "strict"})
		createSteps(t, b, run.ID, w, 2)
		admit(t, b, run.ID, "bad", "set", `-1`)
		settle(t, b, backend.SettleRunUpdateParams{WorkflowRunID: run.ID, WorkerID: w, UpdateID: "bad", State: backend.UpdateRejected,
			Error: json.RawMessage(`{"message":"must be positive"}`)})
		awaitEvent(t, ch, "the update's settlement event", func(e backend.Event) bool {
			return e.Kind == backend.EventUpdateSettled && e.WorkflowRunID == run.ID && e.UpdateID == "bad"
		})
		requireUpdate(t, "rejected update", getUpdate(t, b, run.ID, "bad"), "bad", "set", 1, backend.UpdateRejected, `-1`, "", `{"message":"must be positive"}`)
		requireStepCount(t, b, run.ID, 2)
		requireRun(t, "run after the rejection", getRun(t, b, run.ID), run)
		settle(t, b, backend.SettleRunUpdateParams{WorkflowRunID: run.ID, WorkerID: w, UpdateID: "bad", State: backend.UpdateCompleted, Result: json.RawMessage(`1`)})
		requireUpdate(t, "update settled twice", getUpdate(t, b, run.ID, "bad"), "bad", "set", 1, backend.UpdateRejected, `-1`, "", `{"message":"must be positive"}`)
	})

	t.Run("settling is fenced on the run's lease", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "fenced"})
		admit(t, b, run.ID, "u", "set", `1`)
		err := updates(t, b).SettleRunUpdate(t.Context(), backend.SettleRunUpdateParams{WorkflowRunID: run.ID, WorkerID: "someone-else", UpdateID: "u",
			State: backend.UpdateCompleted, Result: json.RawMessage(`1`)})
		requireErrorIs(t, "a settlement by a worker without the lease", err, backend.ErrNotOwner)
		requireUpdate(t, "update after the refused settlement", getUpdate(t, b, run.ID, "u"), "u", "set", 1, backend.UpdateAdmitted, `1`, "", "")
		err = updates(t, b).SettleRunUpdate(t.Context(), backend.SettleRunUpdateParams{WorkflowRunID: run.ID, WorkerID: w, UpdateID: "u", State: backend.UpdateAdmitted})
		requireErrorIs(t, "a settlement to a state that is not final", err, backend.ErrInvalidArgument)
	})

	t.Run("refuses more than the in-flight limit and inputs over 1 MiB, storing nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "busy"})
		for i := range backend.MaxInFlightUpdates {
			admit(t, b, run.ID, fmt.Sprintf("u%d", i), "poke", `1`)
		}
		_, err := updates(t, b).AdmitRunUpdate(t.Context(), backend.AdmitRunUpdateParams{WorkflowRunID: run.ID, UpdateID: "one-too-many", Name: "poke"})
		requireErrorIs(t, "an admission past the in-flight limit", err, backend.ErrTooManyUpdates)
		settle(t, b, backend.SettleRunUpdateParams{WorkflowRunID: run.ID, WorkerID: w, UpdateID: "u0", State: backend.UpdateCompleted, Result: json.RawMessage(`1`)})
		admit(t, b, run.ID, "one-too-many", "poke", `1`) // room again
		big := json.RawMessage(`"` + strings.Repeat("x", backend.MaxUpdateInputBytes) + `"`)
		_, err = updates(t, b).AdmitRunUpdate(t.Context(), backend.AdmitRunUpdateParams{WorkflowRunID: run.ID, UpdateID: "big", Name: "poke", Input: big})
		requireErrorIs(t, "an input over the limit", err, backend.ErrInvalidArgument)
		_, err = updates(t, b).AdmitRunUpdate(t.Context(), backend.AdmitRunUpdateParams{WorkflowRunID: run.ID, UpdateID: "bad-json", Name: "poke", Input: json.RawMessage(`{`)})
		requireErrorIs(t, "an input that is not JSON", err, backend.ErrInvalidArgument)
		if _, err := updates(t, b).GetRunUpdate(t.Context(), run.ID, "big"); !errors.Is(err, backend.ErrUpdateNotFound) {
			t.Fatalf("GetRunUpdate of a refused admission: %v; want ErrUpdateNotFound", err)
		}
	})
	t.Run("refuses a new update to a paused run, storing nothing, and admits it once the run is resumed", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		if _, ok := b.(backend.RunPauser); !ok {
			t.Skip("the backend does not implement backend.RunPauser")
		}
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "busy"})
		admit(t, b, run.ID, "before", "poke", `1`)
		pauseRun(t, b, run.ID, "")
		_, err := updates(t, b).AdmitRunUpdate(t.Context(), backend.AdmitRunUpdateParams{WorkflowRunID: run.ID, UpdateID: "while-paused", Name: "poke"})
		requireErrorIs(t, "an admission to a paused run", err, backend.ErrRunPaused)
		if _, err := updates(t, b).GetRunUpdate(t.Context(), run.ID, "while-paused"); !errors.Is(err, backend.ErrUpdateNotFound) {
			t.Fatalf("GetRunUpdate of a refused admission: %v; want ErrUpdateNotFound", err)
		}
		// An update admitted before the pause is still answered by its id.
		if again := admit(t, b, run.ID, "before", "poke", `1`); !again.Duplicate {
			t.Fatalf("the update admitted before the pause: Duplicate = false, want the stored row")
		}
		resumeRun(t, b, run.ID)
		admit(t, b, run.ID, "while-paused", "poke", `2`)
	})
}
