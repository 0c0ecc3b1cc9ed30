package dashboard_test

import (
	"strings"
	"testing"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestBrowserEvents: in a real browser, the events page lists published
// events newest first with the triggers of each workflow, and one event's
// page shows the run it started and the condition that failed to
// evaluate on it; a trigger of a singleton workflow shows its mode and
// key. Screenshots under testdata/screenshots.
func TestBrowserEvents(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		name := strings.TrimPrefix(s.t.Name(), "TestBrowserEvents/")
		es := s.b.(backend.EventStore)
		if _, err := es.PutEventTriggers(s.ctx, "greet", []backend.EventTrigger{
			{Kind: backend.TriggerStart, EventName: "user.signed-up", Condition: "event.data.plan == 'pro'"},
			{Kind: backend.TriggerCancel, EventName: "user.deleted"},
		}, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := es.PutEventTriggers(s.ctx, "stuck", []backend.EventTrigger{
			{Kind: backend.TriggerStart, EventName: "user.signed-up", Condition: "event.data.referrer == 'x'"},
		}, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := es.PutEventTriggers(s.ctx, "tally", []backend.EventTrigger{
			{Kind: backend.TriggerStart, EventName: "order.placed", Singleton: &backend.Singleton{Key: "orders", Mode: backend.SingletonSkip}},
		}, "test"); err != nil {
			t.Fatal(err)
		}
		pub, err := s.c.PublishEvent(s.ctx, "user.signed-up", map[string]string{"plan": "pro"}, ow.PublishOptions{Key: "acct-1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.c.PublishEvent(s.ctx, "user.deleted", map[string]string{"id": "u1"}, ow.PublishOptions{}); err != nil {
			t.Fatal(err)
		}
		b := newTab(t, s)
		b.open("/events")
		b.until("the two events, newest first, and the triggers",
			`document.querySelectorAll('#events-table tbody tr').length === 2 &&
			 document.querySelector('#events-table tbody tr td').textContent === 'user.deleted' &&
			 document.querySelector('#triggers-table tr[data-workflow="greet"]').textContent.includes("event.data.plan == 'pro'") &&
			 document.querySelector('#triggers-table tr[data-workflow="greet"] td:nth-child(3)').textContent.includes('user.deleted') &&
			 document.querySelector('#triggers-table tr[data-workflow="tally"] [data-flow="singleton"]').textContent.includes('skip')`)
		b.screenshot(name + "-events")

		b.open("/events?name=user.signed-up")
		if n := eval[int](b, `document.querySelectorAll('#events-table tbody tr').length`); n != 1 {
			t.Fatalf("filtered by name: %d rows, want 1", n)
		}
		b.open("/events/" + pub.ID)
		b.until("the started run and the recorded match error",
			`document.querySelector('tr[data-effect="started"] a').textContent === `+jsq(pub.Started[0])+` &&
			 document.querySelector('tr[data-effect="error"] .match-error').textContent.includes('referrer')`)
		b.screenshot(name + "-event")
		b.open("/events/evt_missing")
		b.until("not found", `document.body.textContent.includes('No such event')`)
	})
}
