package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
)

// TestFairQueues: runs started with fairness wait in the fair queue (no
// available_at, out of the TypeScript claim), and GET /v1/fair-queues
// lists their keys by key, in pages; a bad fairness is a 400 naming it.
func TestFairQueues(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		for i, key := range []string{"b", "a", "a"} {
			r := s.start("unregistered-fair", i, "fairness", map[string]any{"key": key, "weight": 2})
			if r.Status != "pending" || r.AvailableAt != nil {
				t.Fatalf("fair start: status %s available at %v, want pending, waiting in the fair queue", r.Status, r.AvailableAt)
			}
		}
		var page api.FairQueueList
		s.must(http.StatusOK, "GET", "/v1/fair-queues?limit=1", nil).decode(t, &page)
		if len(page.Data) != 1 || page.Data[0].Key != "a" || page.Data[0].Queued != 2 || page.Data[0].Weight != 2 || !page.HasMore || page.Cursor == nil {
			t.Fatalf("first page %+v, want key a with 2 queued runs of weight 2, and more", page)
		}
		s.must(http.StatusOK, "GET", "/v1/fair-queues?limit=1&cursor="+*page.Cursor, nil).decode(t, &page)
		if len(page.Data) != 1 || page.Data[0].Key != "b" || page.Data[0].Queued != 1 || page.HasMore {
			t.Fatalf("second page %+v, want key b alone", page)
		}
		for _, c := range []struct {
			fairness map[string]any
			names    string
		}{
			{map[string]any{"key": strings.Repeat("k", 65)}, "fairness.key"},
			{map[string]any{"key": "k", "weight": -1}, "fairness.weight"},
			{map[string]any{"key": "k", "extra": 1}, "extra"},
		} {
			r := s.do("POST", "/v1/runs", map[string]any{"workflowName": "unregistered-fair", "fairness": c.fairness})
			if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), c.names) {
				t.Errorf("start with fairness %v answered %d %s, want 400 naming %s", c.fairness, r.status, r.body, c.names)
			}
		}
	})
}
