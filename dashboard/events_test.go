package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestTheEventsPagesShowTriggersFlowControl: a trigger stored with a
// singleton (go migration 23) is shown with its mode and key, a batched
// one with its size and timeout; the event the singleton's active run
// turned away shows its effect "skipped" in grey, not in a success's
// green, and an event appended to a batch shows "batched" as queued.
func TestTheEventsPagesShowTriggersFlowControl(t *testing.T) {
	eachBackend(t, siteOptions{noWorker: true}, func(t *testing.T, s *site) {
		es := s.b.(backend.EventStore) // both backends store events
		if _, err := es.PutEventTriggers(s.ctx, "greet", []backend.EventTrigger{{
			WorkflowName: "greet", Kind: backend.TriggerStart, EventName: "user.signed_up",
			Singleton: &backend.Singleton{Key: "signup", Mode: backend.SingletonSkip},
		}}, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := es.PutEventTriggers(s.ctx, "tally", []backend.EventTrigger{{
			WorkflowName: "tally", Kind: backend.TriggerStart, EventName: "order.placed",
			Batch: &backend.BatchOptions{MaxSize: 10, Timeout: time.Hour},
		}}, "test"); err != nil {
			t.Fatal(err)
		}
		// No worker: the first event's run stays active, so the second is
		// skipped.
		var evs []*backend.PublishedEvent
		for range 2 {
			ev, err := s.c.PublishEvent(s.ctx, "user.signed_up", map[string]string{"user": "ada"}, ow.PublishOptions{})
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
		}
		batched, err := s.c.PublishEvent(s.ctx, "order.placed", map[string]int{"n": 1}, ow.PublishOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := s.client()
		p := s.must(c, http.StatusOK, "GET", "/events", nil)
		for _, want := range []string{`data-flow="singleton">singleton, skip, key <span class="mono">signup</span>`, `data-flow="batch">batched by 10 or 3600 s`} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the events page does not show %q: %.3000s", want, p.body)
			}
		}
		p = s.must(c, http.StatusOK, "GET", "/events/"+evs[0].ID, nil)
		if !strings.Contains(p.body, `<span class="badge s-completed">started</span>`) {
			t.Errorf("the first event's page does not show its run started: %.3000s", p.body)
		}
		p = s.must(c, http.StatusOK, "GET", "/events/"+evs[1].ID, nil)
		if !strings.Contains(p.body, `<span class="badge s-canceled">skipped</span>`) {
			t.Errorf("the second event's page does not show it skipped, in grey: %.3000s", p.body)
		}
		p = s.must(c, http.StatusOK, "GET", "/events/"+batched.ID, nil)
		if !strings.Contains(p.body, `<span class="badge s-queued">batched</span>`) {
			t.Errorf("the batched event's page does not show it batched, as queued: %.3000s", p.body)
		}
	})
}
