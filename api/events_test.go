package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
)

func TestEventsArePublishedListedAndShowWhatTheyDid(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		// Declarations as a worker with these workflows stores them: echo
		// starts on big orders; a condition reading a missing key errors.
		if _, err := s.b.(backend.EventStore).PutEventTriggers(s.ctx, "echo", []backend.EventTrigger{
			{Kind: backend.TriggerStart, EventName: "order.created", Condition: "event.data.amount > 100.0"},
		}, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.b.(backend.EventStore).PutEventTriggers(s.ctx, "add", []backend.EventTrigger{
			{Kind: backend.TriggerStart, EventName: "order.created", Condition: "event.data.coupon == 'x'"},
		}, "test"); err != nil {
			t.Fatal(err)
		}
		var one api.PublishEventsResult
		s.must(http.StatusOK, "POST", "/v1/events", `{"name":"order.created","data":{"amount":500},"key":"tenant-a","idempotencyKey":"k1"}`).decode(t, &one)
		if len(one.Events) != 1 || len(one.Events[0].Started) != 1 || one.Events[0].Duplicate {
			t.Fatalf("publish one: %+v", one)
		}
		run := s.waitStatus(one.Events[0].Started[0], "completed")
		if !strings.Contains(string(run.Output), `"amount":500`) || !strings.Contains(string(run.Output), one.Events[0].ID) {
			t.Fatalf("the triggered run's output (its input, echoed) = %s", run.Output)
		}
		var dup api.PublishEventsResult
		s.must(http.StatusOK, "POST", "/v1/events", `{"name":"order.created","data":{"amount":900},"idempotencyKey":"k1"}`).decode(t, &dup)
		if dup.Events[0].ID != one.Events[0].ID || !dup.Events[0].Duplicate || len(dup.Events[0].Started) != 0 {
			t.Fatalf("duplicate: %+v", dup)
		}
		var many api.PublishEventsResult
		s.must(http.StatusOK, "POST", "/v1/events", `[{"name":"order.created","data":{"amount":1}},{"name":"other"}]`).decode(t, &many)
		if len(many.Events) != 2 || len(many.Events[0].Started) != 0 {
			t.Fatalf("publish many: %+v", many)
		}
		var list api.List[api.StoredEvent]
		s.must(http.StatusOK, "GET", "/v1/events?limit=2", nil).decode(t, &list)
		if len(list.Data) != 2 || list.Data[0].ID != many.Events[1].ID || !list.HasMore || list.Cursor == nil {
			t.Fatalf("list: %+v", list)
		}
		var rest api.List[api.StoredEvent]
		s.must(http.StatusOK, "GET", "/v1/events?limit=2&cursor="+*list.Cursor, nil).decode(t, &rest)
		if len(rest.Data) != 1 || rest.Data[0].ID != one.Events[0].ID || rest.HasMore {
			t.Fatalf("second page: %+v", rest)
		}
		var named api.List[api.StoredEvent]
		s.must(http.StatusOK, "GET", "/v1/events?name=other", nil).decode(t, &named)
		if len(named.Data) != 1 || named.Data[0].Name != "other" {
			t.Fatalf("by name: %+v", named)
		}
		var got api.StoredEvent
		s.must(http.StatusOK, "GET", "/v1/events/"+one.Events[0].ID, nil).decode(t, &got)
		var kinds []string
		for _, f := range got.Effects {
			kinds = append(kinds, f.Kind)
		}
		if strings.Join(kinds, ",") != "error,started" || got.Effects[0].Message == nil || got.Effects[0].WorkflowName != "add" || !strings.Contains(*got.Effects[0].Message, "coupon") {
			t.Fatalf("effects: %+v", got.Effects)
		}
		if e := s.must(http.StatusNotFound, "GET", "/v1/events/evt_nope", nil).apiError(t); e.Code != api.CodeNotFound {
			t.Fatalf("missing event: %+v", e)
		}
		var ts api.List[api.EventTrigger]
		s.must(http.StatusOK, "GET", "/v1/event-triggers?workflow=echo", nil).decode(t, &ts)
		if len(ts.Data) != 1 || ts.Data[0].Condition != "event.data.amount > 100.0" {
			t.Fatalf("triggers: %+v", ts)
		}
	})
}

func TestABadEventRequestIsRefusedNamingWhatAndStoresNothing(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		for _, c := range []struct{ body, field string }{
			{`{"data":{}}`, "name"},
			{`[{"name":"ok"},{"name":""}]`, "[1].name"},
			{`[{"name":"ok"},{"name":"x","idempotencyKey":""}]`, "[1].idempotencyKey"},
			{`{"name":"x","data":"\ud800"}`, "data"},
			{`[]`, ""},
			{`{"name":"x","extra":1}`, ""},
			{`{"name":"x","data":"` + strings.Repeat("a", backend.MaxEventDataBytes) + `"}`, ""},
		} {
			r := s.do("POST", "/v1/events", c.body)
			if r.status != http.StatusBadRequest && r.status != http.StatusRequestEntityTooLarge {
				t.Errorf("%.60s: %d %s", c.body, r.status, r.body)
				continue
			}
			if e := r.apiError(t); c.field != "" && e.Field != c.field {
				t.Errorf("%.60s: field %q, want %q (%s)", c.body, e.Field, c.field, e.Message)
			}
		}
		var many strings.Builder
		many.WriteString("[")
		for i := 0; i <= backend.MaxEventsPerPublish; i++ {
			if i > 0 {
				many.WriteString(",")
			}
			fmt.Fprintf(&many, `{"name":"e"}`)
		}
		many.WriteString("]")
		if r := s.do("POST", "/v1/events", many.String()); r.status != http.StatusBadRequest {
			t.Errorf("5,001 events: %d %s", r.status, r.body)
		}
		var list api.List[api.StoredEvent]
		s.must(http.StatusOK, "GET", "/v1/events", nil).decode(t, &list)
		if len(list.Data) != 0 {
			t.Fatalf("refused requests stored %d events", len(list.Data))
		}
	})
}

func TestEventTriggersAreDeclaredThroughTheAPIWithTheirCELCheckedFirst(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		for _, bad := range []struct {
			body        string
			field, want string
		}{
			{`{"triggers":[{"event":"order.created","if":"event.data.amount >"}]}`, "triggers[0].if", "1:"},
			{`{"triggers":[{"event":"a"}],"cancelOn":[{"event":"b","if":"input.x == evnt.data.x"}]}`, "cancelOn[0].if", "1:"},
			{`{"triggers":[{"event":"a","if":"event.data.x + 1"}]}`, "triggers[0].if", "bool"},
			{`{"triggers":[{"event":""}]}`, "triggers[0].event", "event"},
		} {
			e := s.must(http.StatusBadRequest, "PUT", "/v1/event-triggers/echo", bad.body).apiError(t)
			if e.Field != bad.field || !strings.Contains(e.Message, bad.want) {
				t.Errorf("PUT %s answered field %q, %q; want field %q naming %q", bad.body, e.Field, e.Message, bad.field, bad.want)
			}
		}
		var none api.List[api.EventTrigger]
		s.must(http.StatusOK, "GET", "/v1/event-triggers?workflow=echo", nil).decode(t, &none)
		if len(none.Data) != 0 {
			t.Fatalf("refused declarations stored %+v", none.Data)
		}
		var res api.EventTriggersResult
		s.must(http.StatusOK, "PUT", "/v1/event-triggers/echo", `{"triggers":[{"event":"order.created","if":"event.data.amount > 100.0"}]}`).decode(t, &res)
		if !res.Changed || len(res.Data) != 1 || res.Data[0].Condition != "event.data.amount > 100.0" || res.Data[0].DeclaredBy != "api" {
			t.Fatalf("declared: %+v", res)
		}
		var pub api.PublishEventsResult
		s.must(http.StatusOK, "POST", "/v1/events", `{"name":"order.created","data":{"amount":500}}`).decode(t, &pub)
		if len(pub.Events[0].Started) != 1 {
			t.Fatalf("the declared trigger started %v, want one run", pub.Events[0].Started)
		}
		s.must(http.StatusOK, "PUT", "/v1/event-triggers/echo", `{"triggers":[{"event":"order.created","if":"event.data.amount > 100.0"}]}`).decode(t, &res)
		if res.Changed {
			t.Fatalf("the same declarations again: changed %+v", res)
		}
	})
}
