package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
)

// TestUpdateRun: POST /v1/runs/{id}/updates/{name} answers the handler's
// result (200), the same update for a repeated updateId (its handler run
// once), 422 update_rejected with the validator's message, 202 when the
// wait ends first (then GET .../{name}/{updateId} follows it), 409 for a
// new update to a finished run, 404 for a missing run, 400 for a bad wait.
func TestUpdateRun(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		run := s.start("counter", "api-upd")
		base := "/v1/runs/" + run.ID + "/updates/"
		var first, again api.RunUpdate
		s.must(http.StatusOK, "POST", base+"add?wait=20s", map[string]any{"input": 2, "updateId": "u1"}).decode(t, &first)
		if first.State != "completed" || string(first.Result) != `"added 2"` || first.ID != "u1" || first.Duplicate {
			t.Fatalf("first update answered %+v; want completed \"added 2\"", first)
		}
		s.must(http.StatusOK, "POST", base+"add", map[string]any{"input": 2, "updateId": "u1"}).decode(t, &again)
		if !again.Duplicate || string(again.Result) != `"added 2"` {
			t.Fatalf("repeated updateId answered %+v; want the first update, duplicate", again)
		}
		if n := s.calls.get("api-upd/add"); n != 1 {
			t.Fatalf("the handler ran %d times for one updateId; want 1", n)
		}

		// In this order (a slice, not a map), which the list below checks.
		for _, c := range []struct {
			name string
			body map[string]any
			want string
		}{
			{"add", map[string]any{"input": -1}, "-1 is not positive"},
			{"subtract", map[string]any{"input": 1}, `unknown update "subtract"`},
		} {
			name, want := c.name, c.want
			e := s.must(http.StatusUnprocessableEntity, "POST", base+name+"?wait=20s", c.body).apiError(t)
			if e.Code != api.CodeUpdateRejected || !strings.Contains(e.Message, want) {
				t.Errorf("rejected update %s answered %+v; want update_rejected saying %q", name, e, want)
			}
		}

		var admitted, followed api.RunUpdate
		s.must(http.StatusAccepted, "POST", base+"add?wait=0s", map[string]any{"input": 5}).decode(t, &admitted)
		if admitted.State != "admitted" || admitted.ID == "" {
			t.Fatalf("update with wait=0s answered %+v; want admitted with an id", admitted)
		}
		s.must(http.StatusOK, "GET", base+"add/"+admitted.ID+"?wait=20s", nil).decode(t, &followed)
		if followed.State != "completed" || string(followed.Result) != `"added 5"` {
			t.Fatalf("GET of the admitted update answered %+v; want completed \"added 5\"", followed)
		}
		s.must(http.StatusNotFound, "GET", base+"other/"+admitted.ID, nil)
		s.must(http.StatusNotFound, "GET", base+"add/no-such-update", nil)
		var list api.List[api.RunUpdate]
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID+"/updates", nil).decode(t, &list)
		var states []string
		for _, u := range list.Data {
			states = append(states, u.Name+":"+u.State)
		}
		if got := strings.Join(states, " "); got != "add:completed add:rejected subtract:rejected add:completed" {
			t.Errorf("the run's updates: %s", got)
		}

		if e := s.must(http.StatusBadRequest, "POST", base+"add?wait=2m", map[string]any{"input": 1}).apiError(t); e.Field != "wait" {
			t.Errorf("a wait over the cap answered %+v; want invalid_argument on wait", e)
		}
		if e := s.must(http.StatusBadRequest, "POST", base+"add", map[string]any{"input": 1, "updateId": ""}).apiError(t); e.Field != "updateId" {
			t.Errorf("an empty updateId answered %+v; want invalid_argument on updateId", e)
		}
		s.must(http.StatusNotFound, "POST", "/v1/runs/no-such-run/updates/add", map[string]any{"input": 1})

		s.must(http.StatusAccepted, "POST", "/v1/runs/"+run.ID+"/signals/stop", nil)
		s.waitStatus(run.ID, "completed")
		if e := s.must(http.StatusConflict, "POST", base+"add", map[string]any{"input": 1}).apiError(t); e.Code != api.CodeRunTerminal {
			t.Errorf("a new update to a completed run answered %+v; want run_terminal", e)
		}
		s.must(http.StatusOK, "POST", base+"add", map[string]any{"input": 2, "updateId": "u1"}).decode(t, &again)
		if string(again.Result) != `"added 2"` {
			t.Errorf("a settled updateId after the run finished answered %+v; want its result", again)
		}
	})
}
