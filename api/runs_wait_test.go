package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
)

// POST /v1/runs?wait=… answers once the run finished, with its output or
// error (201, or 200 for an idempotent replay), or, when the wait ends
// first, 202 with the run as it stands; a wait it cannot honour is refused
// before anything starts (issue 24).
func TestStartAndWait(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		t.Run("a run that finishes within the wait answers 201 with its output", func(t *testing.T) {
			var run api.Run
			s.must(http.StatusCreated, "POST", "/v1/runs?wait=30s", map[string]any{"workflowName": "add", "input": map[string]int{"A": 20, "B": 22}, "idempotencyKey": "wait-1"}).decode(t, &run)
			if run.Status != "completed" || string(run.Output) != "42" || run.FinishedAt == nil {
				t.Fatalf("waited start answered %+v; want the completed run with output 42", run)
			}
			// The same start again is a replay of a finished run: 200 at once.
			var again api.Run
			s.must(http.StatusOK, "POST", "/v1/runs?wait=5", map[string]any{"workflowName": "add", "input": map[string]int{"A": 20, "B": 22}, "idempotencyKey": "wait-1"}).decode(t, &again)
			if again.ID != run.ID || again.Status != "completed" || string(again.Output) != "42" {
				t.Fatalf("replayed waited start answered %+v; want run %s completed with 42", again, run.ID)
			}
		})
		t.Run("a run that fails within the wait answers 201 with its error", func(t *testing.T) {
			failing.Store("wait-fail", true)
			t.Cleanup(func() { failing.Delete("wait-fail") })
			var run api.Run
			s.must(http.StatusCreated, "POST", "/v1/runs?wait=30s", map[string]any{"workflowName": "flaky", "input": "wait-fail"}).decode(t, &run)
			if run.Status != "failed" || !strings.Contains(string(run.Error), "second step refused") || run.Output != nil {
				t.Fatalf("waited start of a failing run answered %+v; want it failed with the step's error", run)
			}
		})
		t.Run("a run still going when the wait ends answers 202 with the run as it stands", func(t *testing.T) {
			var run api.Run
			r := s.must(http.StatusAccepted, "POST", "/v1/runs?wait=300ms", map[string]any{"workflowName": "approval", "input": map[string]any{"Token": "wait-hook", "N": 1}})
			r.decode(t, &run)
			if run.Status != "pending" && run.Status != "running" {
				t.Fatalf("202 answered %+v; want the run pending or running", run)
			}
			if run.Output != nil || run.FinishedAt != nil {
				t.Fatalf("an unfinished run was answered with an end: %+v", run)
			}
			s.must(http.StatusOK, "POST", "/v1/runs/"+run.ID+"/cancel", nil)
		})
		t.Run("a wait out of bounds or unreadable is refused and starts nothing", func(t *testing.T) {
			for _, wait := range []string{"0", "0s", "-1s", "61s", "2m", "soon", "NaN", "Inf", "1e400"} {
				e := s.must(http.StatusBadRequest, "POST", "/v1/runs?wait="+wait, map[string]any{"workflowName": "add", "input": map[string]int{"A": 1, "B": 1}, "idempotencyKey": "bad-wait"}).apiError(t)
				if e.Field != "wait" || !strings.Contains(e.Message, "wait must") {
					t.Errorf("wait=%s answered %+v; want 400 on field wait", wait, e)
				}
			}
			// The key was never used: a start with it now is new (201).
			s.must(http.StatusCreated, "POST", "/v1/runs", map[string]any{"workflowName": "add", "input": map[string]int{"A": 1, "B": 1}, "idempotencyKey": "bad-wait"})
		})
	})
}
