package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
)

// TestForkFromAStep: a fork made through the API reuses the run's result
// of the step before the one named and executes that one again, on both
// backends; an unknown step is a 400 naming fromStep, an unknown run a
// 404.
func TestForkFromAStep(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		key := "fork-" + t.Name()
		failing.Store(key, true)
		run := s.start("flaky", key)
		s.waitStatus(run.ID, "failed")
		failing.Delete(key)

		var fork api.Run
		s.must(http.StatusCreated, "POST", "/v1/runs/"+run.ID+"/fork", map[string]string{"fromStep": "second"}).decode(t, &fork)
		if fork.ID == run.ID || fork.WorkflowName != "flaky" || fork.Status != "pending" {
			t.Fatalf("fork %+v, want a new pending run of flaky", fork)
		}
		if out := s.waitStatus(fork.ID, "completed").Output; string(out) != `"one+two"` {
			t.Errorf("the fork's output %s, want \"one+two\"", out)
		}
		if s.calls.get(key+"/first") != 1 || s.calls.get(key+"/second") != 2 {
			t.Errorf("calls: first %d (want 1: reused), second %d (want 2)", s.calls.get(key+"/first"), s.calls.get(key+"/second"))
		}
		if got := s.waitStatus(run.ID, "failed"); got.Status != "failed" {
			t.Errorf("the forked run is %s, want it left failed", got.Status)
		}
		var hist api.List[api.Event]
		s.must(http.StatusOK, "GET", "/v1/runs/"+fork.ID+"/history", nil).decode(t, &hist)
		var types []string
		for _, e := range hist.Data {
			types = append(types, e.Type+":"+e.StepName)
		}
		got := strings.Join(types, " ")
		reused, mark, again := strings.Index(got, "step_completed:first"), strings.Index(got, "run_forked:"), strings.Index(got, "step_started:second")
		if reused < 0 || mark < reused || again < mark {
			t.Errorf("the fork's history %s, want the reused first step, the fork's mark, then second", got)
		}

		e := s.must(http.StatusBadRequest, "POST", "/v1/runs/"+run.ID+"/fork", map[string]string{"fromStep": "thrid"}).apiError(t)
		if e.Code != api.CodeInvalidArgument || e.Field != "fromStep" || !strings.Contains(e.Message, `"thrid"`) || !strings.Contains(e.Message, `"second"`) {
			t.Errorf("fork from an unknown step: %+v, want invalid_argument on fromStep naming it and the run's steps", e)
		}
		if e := s.must(http.StatusBadRequest, "POST", "/v1/runs/"+run.ID+"/fork", map[string]string{}).apiError(t); e.Field != "fromStep" {
			t.Errorf("fork without fromStep: %+v", e)
		}
		if e := s.must(http.StatusNotFound, "POST", "/v1/runs/wrun_unknown/fork", map[string]string{"fromStep": "first"}).apiError(t); e.Code != api.CodeNotFound {
			t.Errorf("fork of an unknown run: %+v", e)
		}
	})
}
