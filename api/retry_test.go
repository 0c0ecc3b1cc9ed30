package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
)

// TestRetryFromFailedStep: a failed run retried through the API runs
// again from its failed step; the completed step's function is not called
// again, on both backends.
func TestRetryFromFailedStep(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		key := "retry-" + t.Name()
		failing.Store(key, true)
		run := s.start("flaky", key)
		failed := s.waitStatus(run.ID, "failed")
		if !strings.Contains(string(failed.Error), "second step refused") {
			t.Fatalf("failed with %s", failed.Error)
		}
		if s.calls.get(key+"/first") != 1 || s.calls.get(key+"/second") != 1 {
			t.Fatalf("calls before the retry: first %d, second %d", s.calls.get(key+"/first"), s.calls.get(key+"/second"))
		}
		// Only a failed run can be retried.
		done := s.start("add", map[string]int{"A": 1})
		s.waitStatus(done.ID, "completed")
		if e := s.must(http.StatusConflict, "POST", "/v1/runs/"+done.ID+"/retry", nil).apiError(t); e.Code != api.CodeRunNotFailed {
			t.Errorf("retry of a completed run: %+v", e)
		}

		failing.Delete(key)
		deadline := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		var retried api.Run
		s.must(http.StatusOK, "POST", "/v1/runs/"+run.ID+"/retry", map[string]string{"deadlineAt": deadline.Format(time.RFC3339)}).decode(t, &retried)
		if retried.Status != "pending" || retried.Error != nil || retried.FinishedAt != nil || retried.DeadlineAt == nil || !retried.DeadlineAt.Equal(deadline) {
			t.Fatalf("retried run %+v", retried)
		}
		out := s.waitStatus(run.ID, "completed").Output
		if string(out) != `"one+two"` {
			t.Errorf("output %s", out)
		}
		if s.calls.get(key+"/first") != 1 || s.calls.get(key+"/second") != 2 {
			t.Errorf("calls after the retry: first %d (want 1), second %d (want 2)", s.calls.get(key+"/first"), s.calls.get(key+"/second"))
		}
		// The history shows the retry.
		var hist api.List[api.Event]
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID+"/history", nil).decode(t, &hist)
		var types []string
		for _, e := range hist.Data {
			types = append(types, e.Type)
		}
		if !strings.Contains(strings.Join(types, " "), "step_failed run_retried") {
			t.Errorf("history %v", types)
		}
	})
}
