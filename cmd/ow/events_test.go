package main

import (
	"context"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

func TestEventsPublishListAndGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client()
	if _, err := c.Backend().(backend.EventStore).PutEventTriggers(context.Background(), "ship", []backend.EventTrigger{
		{Kind: backend.TriggerStart, EventName: "order.created", Condition: "event.data.amount > 100.0"},
	}, "test"); err != nil {
		t.Fatal(err)
	}
	first := decode[backend.PublishedEvent](t, e.ok("--json", "events", "publish", "order.created", "--data", `{"amount":150}`, "--id", "k1", "--key", "tenant-a"))
	if len(first.Started) != 1 || first.Duplicate {
		t.Fatalf("publish: %+v", first)
	}
	mustContain(t, "duplicate", e.ok("events", "publish", "order.created", "--id", "k1").stdout, first.ID, "nothing done")
	mustContain(t, "small order", e.ok("events", "publish", "order.created", "--data", `{"amount":1}`).stdout, "started 0 run(s)")
	page := decode[backend.Page[backend.EventRecord]](t, e.ok("--json", "events", "list", "--limit", "1"))
	if len(page.Data) != 1 || page.Next == nil {
		t.Fatalf("list: %+v", page)
	}
	mustContain(t, "list by name", e.ok("events", "list", "--name", "order.created").stdout, first.ID, `{"amount":150}`)
	mustContain(t, "get", e.ok("events", "get", first.ID).stdout, "started", "ship", first.Started[0])
	if r := e.run("events", "publish", "x", "--data", "{"); r.code == 0 {
		t.Fatal("bad --data accepted")
	}
	if r := e.run("events", "list", "--cursor", "zz"); r.code == 0 {
		t.Fatal("bad --cursor accepted")
	}
}
