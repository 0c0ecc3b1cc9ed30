package api_test

import (
	"net/http"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
)

// eventWaiter waits for the "order.paid" event of its order and returns
// the event's id.
var eventWaiter = ow.Define(ow.Spec{Name: "event-waiter"}, func(ctx ow.Context, in struct {
	OrderID string `json:"orderId"`
}) (string, error) {
	ev, ok, err := ow.WaitForEvent[any](ctx, "order.paid", `event.data.orderId == input.orderId`, time.Hour)
	if err != nil || !ok {
		return "", err
	}
	return ev.ID, nil
})

func TestRunEventWaitsShowTheOpenWaitThenItsDelivery(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		run := s.start("event-waiter", map[string]string{"orderId": "o-1"})
		var ws api.List[api.EventWait]
		s.until("the run's event wait is listed", func() bool {
			s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID+"/event-waits", nil).decode(t, &ws)
			return len(ws.Data) == 1
		})
		w := ws.Data[0]
		if w.Status != "open" || w.EventName != "order.paid" || w.Match != `event.data.orderId == input.orderId` || !w.Indexed ||
			w.TimeoutAt.Sub(w.CreatedAt) < 59*time.Minute {
			t.Fatalf("open wait = %+v", w)
		}
		p, err := ow.NewClient(s.b).PublishEvent(s.ctx, "order.paid", map[string]string{"orderId": "o-1"}, ow.PublishOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.waitStatus(run.ID, "completed")
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID+"/event-waits", nil).decode(t, &ws)
		if len(ws.Data) != 1 || ws.Data[0].Status != "delivered" || ws.Data[0].EventID == nil || *ws.Data[0].EventID != p.ID {
			t.Fatalf("waits after the delivery = %+v", ws.Data)
		}
		s.must(http.StatusNotFound, "GET", "/v1/runs/wrun_00000000000000000000000000/event-waits", nil)
		s.must(http.StatusBadRequest, "GET", "/v1/runs/"+run.ID+"/event-waits?bogus=1", nil)
	})
}
