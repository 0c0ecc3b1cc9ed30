package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
)

// TestPauseAndResumeThroughTheAPI: a parked run paused through the API
// shows paused with its reason, stays paused when paused again, resumes,
// and a canceled run resumes in place; the refusals answer 400 and 409
// with their codes, on both backends.
func TestPauseAndResumeThroughTheAPI(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		tok := "pause-" + strings.ReplaceAll(t.Name(), "/", "-")
		run := s.start("approval", map[string]any{"Token": tok, "N": 1})
		s.until("the run waits on its hook", func() bool { return s.hookExists(tok) })

		var paused api.Run
		s.must(http.StatusOK, "POST", "/v1/runs/"+run.ID+"/pause", map[string]string{"reason": "checking"}).decode(t, &paused)
		if !paused.Paused || paused.PausedAt == nil || paused.PauseReason == nil || *paused.PauseReason != "checking" || paused.Status != "running" {
			t.Fatalf("paused run %+v; want running, paused for checking", paused)
		}
		var again api.Run
		s.must(http.StatusOK, "POST", "/v1/runs/"+run.ID+"/pause", map[string]string{"reason": "other"}).decode(t, &again)
		if !again.Paused || *again.PauseReason != "checking" {
			t.Fatalf("second pause %+v; want still paused with the first reason", again)
		}
		var got api.Run
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID, nil).decode(t, &got)
		if !got.Paused {
			t.Fatalf("GET of a paused run %+v; want paused", got)
		}
		if e := s.must(http.StatusBadRequest, "POST", "/v1/runs/"+run.ID+"/pause", map[string]string{"reason": strings.Repeat("x", 1001)}).apiError(t); e.Code != api.CodeInvalidArgument || e.Field != "reason" {
			t.Errorf("pause with a long reason: %+v", e)
		}

		var resumed api.Run
		s.must(http.StatusOK, "POST", "/v1/runs/"+run.ID+"/resume", nil).decode(t, &resumed)
		if resumed.Paused || resumed.PausedAt != nil || resumed.PauseReason != nil {
			t.Fatalf("resumed run %+v; want not paused", resumed)
		}

		// A canceled run resumes in place, same id, pending.
		s.must(http.StatusOK, "POST", "/v1/runs/"+run.ID+"/cancel", nil)
		var back api.Run
		s.must(http.StatusOK, "POST", "/v1/runs/"+run.ID+"/resume", nil).decode(t, &back)
		if back.ID != run.ID || back.Status != "pending" || back.FinishedAt != nil {
			t.Fatalf("resumed canceled run %+v; want the same run pending", back)
		}
		s.until("the resumed run waits on its hook again", func() bool { return s.hookExists(tok) })

		// Refusals.
		done := s.start("add", map[string]int{"A": 1})
		s.waitStatus(done.ID, "completed")
		if e := s.must(http.StatusConflict, "POST", "/v1/runs/"+done.ID+"/pause", nil).apiError(t); e.Code != api.CodeRunTerminal {
			t.Errorf("pause of a completed run: %+v", e)
		}
		if e := s.must(http.StatusConflict, "POST", "/v1/runs/"+done.ID+"/resume", nil).apiError(t); e.Code != api.CodeRunTerminal {
			t.Errorf("resume of a completed run: %+v", e)
		}
		key := "pause-flaky-" + t.Name()
		failing.Store(key, true)
		defer failing.Delete(key)
		failed := s.start("flaky", key)
		s.waitStatus(failed.ID, "failed")
		if e := s.must(http.StatusConflict, "POST", "/v1/runs/"+failed.ID+"/resume", nil).apiError(t); e.Code != api.CodeRunNotCanceled {
			t.Errorf("resume of a failed run: %+v", e)
		}
		if e := s.must(http.StatusNotFound, "POST", "/v1/runs/wrun_missing/pause", nil).apiError(t); e.Code != api.CodeNotFound {
			t.Errorf("pause of a missing run: %+v", e)
		}
	})
}
