package api_test

import (
	"net/http"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
)

// TestARunThatContinuedAsNewShowsItsLineageBothWays: a run that continued
// as new is completed and names its successor (continuedTo); each
// successor names the run it continues and its generation
// (continuedFrom), on both backends.
func TestARunThatContinuedAsNewShowsItsLineageBothWays(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		first := s.start("countdown", 2)
		id := first.ID
		var chain []api.Run
		for range 3 {
			r := s.waitStatus(id, "completed")
			var got api.Run
			s.must(http.StatusOK, "GET", "/v1/runs/"+id, nil).decode(t, &got)
			if n := len(chain); n > 0 {
				if got.ContinuedFrom == nil || got.ContinuedFrom.RunID != chain[n-1].ID || got.ContinuedFrom.Generation != n {
					t.Fatalf("run %s continuedFrom = %+v, want %s generation %d", id, got.ContinuedFrom, chain[n-1].ID, n)
				}
			} else if got.ContinuedFrom != nil {
				t.Fatalf("the chain's first run has continuedFrom %+v", got.ContinuedFrom)
			}
			chain = append(chain, got)
			if got.ContinuedTo == "" {
				if string(r.Output) != `"liftoff"` {
					t.Fatalf("the chain's last run output %s, want \"liftoff\"", r.Output)
				}
				break
			}
			if want := `{"continuedAsNew":{"runId":"` + got.ContinuedTo + `"}}`; string(got.Output) != want {
				t.Fatalf("the continued run's output %s, want %s", got.Output, want)
			}
			id = got.ContinuedTo
		}
		if len(chain) != 3 {
			t.Fatalf("the chain has %d runs, want 3", len(chain))
		}
	})
}
