package openworkflow_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

func TestPublishedEventsAreStoredListedNewestFirstAndDeduplicatedByIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	first, err := e.client.PublishEvent(e.ctx, "order.created", map[string]any{"amount": 150}, ow.PublishOptions{IdempotencyKey: "k1", Key: "tenant-a"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.ID, "evt_") || first.Duplicate {
		t.Fatalf("first publish: %+v", first)
	}
	again, err := e.client.PublishEvent(e.ctx, "order.created", map[string]any{"amount": 1}, ow.PublishOptions{IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID || !again.Duplicate {
		t.Fatalf("a publish with the same idempotency key = %+v, want the first event's id %s, duplicate", again, first.ID)
	}
	out, err := e.client.PublishEvents(e.ctx, []ow.Event{{Name: "order.paid"}, {Name: "order.created", Data: json.RawMessage(`{"amount":2}`)}})
	if err != nil {
		t.Fatal(err)
	}
	page, err := e.client.ListEvents(e.ctx, backend.ListEventsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range page.Data {
		ids = append(ids, ev.ID)
	}
	if want := []string{out[1].ID, out[0].ID, first.ID}; strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("list = %v, want newest first %v (the duplicate stored nothing)", ids, want)
	}
	byName, err := e.client.ListEvents(e.ctx, backend.ListEventsParams{Name: "order.created", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(byName.Data) != 1 || byName.Data[0].ID != out[1].ID || byName.Next == nil {
		t.Fatalf("first page by name: %+v", byName)
	}
	next, err := e.client.ListEvents(e.ctx, backend.ListEventsParams{Name: "order.created", Limit: 1, After: *byName.Next})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Data) != 1 || next.Data[0].ID != first.ID || next.Next != nil {
		t.Fatalf("second page by name: %+v", next)
	}
	got, err := e.client.GetEvent(e.ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Data) != `{"amount":150}` || got.Key == nil || *got.Key != "tenant-a" || got.Name != "order.created" {
		t.Fatalf("get = %+v data %s", got, got.Data)
	}
	if _, err := e.client.GetEvent(e.ctx, "evt_missing"); !errors.Is(err, backend.ErrEventNotFound) {
		t.Fatalf("get of a missing event: %v", err)
	}
}

func TestAnInvalidEventInAPublishStoresNothing(t *testing.T) {
	e := newEnv(t)
	for _, bad := range [][]ow.Event{
		{{Name: "ok"}, {Name: ""}},
		{{Name: "ok"}, {Name: "big", Data: json.RawMessage(`"` + strings.Repeat("x", backend.MaxEventDataBytes) + `"`)}},
		{{Name: "ok"}, {Name: "nul\x00name"}},
		{{Name: "ok"}, {Name: "bad json", Data: json.RawMessage(`{`)}},
	} {
		if _, err := e.client.PublishEvents(e.ctx, bad); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("publish %q: err = %v, want ErrInvalidArgument", bad[1].Name, err)
		}
	}
	page, err := e.client.ListEvents(e.ctx, backend.ListEventsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 0 {
		t.Fatalf("stored %d events of refused publishes", len(page.Data))
	}
}
