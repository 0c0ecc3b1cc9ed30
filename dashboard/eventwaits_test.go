package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// eventWaiter waits for the "order.paid" event of its order.
var eventWaiter = ow.Define(ow.Spec{Name: "event-waiter"}, func(ctx ow.Context, in struct {
	OrderID string `json:"orderId"`
}) (string, error) {
	ev, _, err := ow.WaitForEvent[any](ctx, "order.paid", `event.data.orderId == input.orderId`, time.Hour)
	return ev.ID, err
})

func TestTheRunPageShowsTheRunsEventWaits(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		id := s.start("event-waiter", map[string]string{"orderId": "o-1"})
		c := s.client()
		var p answer
		s.until("the run page shows the open event wait", func() bool {
			p = s.must(c, http.StatusOK, "GET", "/runs/"+id, nil)
			return strings.Contains(p.body, `id="event-waits-title"`)
		})
		for _, want := range []string{"order.paid", "event.data.orderId == input.orderId", `badge s-waiting">waiting`, "indexed"} {
			if !strings.Contains(p.body, want) && !strings.Contains(p.body, strings.ReplaceAll(want, "==", "=\u003d")) {
				t.Errorf("the run page's event waits do not show %q", want)
			}
		}
		ev, err := s.c.PublishEvent(s.ctx, "order.paid", map[string]string{"orderId": "o-1"}, ow.PublishOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.waitStatus(id, "completed")
		p = s.must(c, http.StatusOK, "GET", "/runs/"+id, nil)
		if !strings.Contains(p.body, `badge s-completed">received`) || !strings.Contains(p.body, ev.ID) {
			t.Errorf("the run page does not show the wait received %s", ev.ID)
		}
	})
}
