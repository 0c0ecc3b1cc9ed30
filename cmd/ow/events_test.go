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

// TestEventsDeclareAndTriggers: 'ow events declare' stores a workflow's
// triggers and cancelOn declarations (a publish then starts its run),
// refuses a bad condition naming it and storing nothing, and --none
// removes them; 'ow events triggers' lists them with their conditions and
// flow control.
func TestEventsDeclareAndTriggers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mustContain(t, "declare", e.ok("events", "declare", "ship",
		"--triggers", `[{"event":"order.created","if":"event.data.amount > 100.0"}]`,
		"--cancel-on", `[{"event":"order.canceled","if":"event.data.orderId == input.orderId"}]`).stdout,
		"stored 1 trigger(s) and 1 cancelOn declaration(s) of ship")
	mustContain(t, "declare again", e.ok("events", "declare", "ship",
		"--triggers", `[{"event":"order.created","if":"event.data.amount > 100.0"}]`,
		"--cancel-on", `[{"event":"order.canceled","if":"event.data.orderId == input.orderId"}]`).stdout, "nothing changed")
	if _, err := e.client().Backend().(backend.EventStore).PutEventTriggers(context.Background(), "tally", []backend.EventTrigger{
		{Kind: backend.TriggerStart, EventName: "order.placed", Singleton: &backend.Singleton{Key: "orders", Mode: backend.SingletonSkip}},
	}, "test"); err != nil {
		t.Fatal(err)
	}
	out := e.ok("events", "triggers").stdout
	mustContain(t, "triggers", out, "ship", "start", "order.created if event.data.amount > 100.0", "cancel", "order.canceled",
		"tally", `[singleton skip, key "orders"]`)
	ts := decode[[]backend.EventTrigger](t, e.ok("--json", "events", "triggers", "ship"))
	if len(ts) != 2 {
		t.Fatalf("ow events triggers ship: %+v, want its 2 declarations", ts)
	}
	p := decode[backend.PublishedEvent](t, e.ok("--json", "events", "publish", "order.created", "--data", `{"amount":150}`))
	if len(p.Started) != 1 {
		t.Fatalf("publish after declare: %+v, want one run started", p)
	}

	// A bad condition is refused with its place, and nothing is stored.
	r := e.run("events", "declare", "ship", "--triggers", `[{"event":"order.created","if":"event.data.amount >"}]`)
	if r.code == 0 {
		t.Fatal("a condition that does not compile was accepted")
	}
	mustContain(t, "bad condition", r.stderr, "Triggers[0]", "order.created")
	if got := decode[[]backend.EventTrigger](t, e.ok("--json", "events", "triggers", "ship")); len(got) != 2 || got[0].Condition != ts[0].Condition {
		t.Fatalf("after a refused declare: %+v, want the 2 declarations as they were", got)
	}
	// A value of the wrong shape is refused naming the flag and the shape.
	mustContain(t, "not an array", e.run("events", "declare", "ship", "--cancel-on", `{"event":"x"}`).stderr,
		"invalid --cancel-on", `JSON array of {"event","if"} objects`)
	mustContain(t, "unknown field", e.run("events", "declare", "ship", "--triggers", `[{"name":"x"}]`).stderr,
		"invalid --triggers", `unknown field "name"`)
	for _, bad := range [][]string{
		{"events", "declare", "ship"},
		{"events", "declare", "ship", "--none", "--triggers", `[{"event":"x"}]`},
	} {
		if r := e.run(bad...); r.code == 0 {
			t.Fatalf("%v accepted", bad)
		}
	}

	mustContain(t, "none", e.ok("events", "declare", "ship", "--none").stdout, "removed the event declarations of ship")
	mustContain(t, "none again", e.ok("events", "declare", "ship", "--none").stdout, "ship had no event declarations")
	if got := decode[[]backend.EventTrigger](t, e.ok("--json", "events", "triggers", "ship")); len(got) != 0 {
		t.Fatalf("after --none: %+v, want none", got)
	}
}
