package interop

import (
	"encoding/json"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// A run an event starts is an ordinary pending run to TypeScript: with a
// trigger stored for a workflow only a TypeScript worker registered, the
// TypeScript worker executes the triggered run (the event as its input),
// while a Go worker executes the run of its own triggered workflow beside
// it; the TypeScript client counts both. Events, triggers and effects are
// in tables of this SDK's own, which TypeScript never reads.
func TestATriggeredRunIsAnOrdinaryRunToTypeScript(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ctx := contextWithTimeout(t, time.Minute)
	ts := e.ts()
	ts.startWorker(2, tsWorkflow{Name: "ts-echo", Kind: "echo"})
	goWf := ow.Define(ow.Spec{Name: "go-on-order", Triggers: []ow.EventTrigger{{Event: "order.created", If: "event.data.msg == 'hi'"}}},
		func(ctx ow.Context, in json.RawMessage) (string, error) { return "go", nil })
	defer e.goWorker(goWf)()
	if _, err := e.b.PutEventTriggers(ctx, "ts-echo", []backend.EventTrigger{{Kind: backend.TriggerStart, EventName: "order.created"}}, "interop test"); err != nil {
		t.Fatal(err)
	}
	// The Go worker stores its trigger at start.
	waitUntil(t, 30*time.Second, "the Go worker's trigger to be stored", func() bool {
		ts, err := e.b.ListEventTriggers(ctx, "go-on-order")
		return err == nil && len(ts) == 1
	})
	pub, err := e.client.PublishEvent(ctx, "order.created", map[string]string{"msg": "hi"}, ow.PublishOptions{Key: "customer-1"})
	must(t, err)
	if len(pub.Started) != 2 {
		t.Fatalf("started %v, want a run of ts-echo and one of go-on-order", pub.Started)
	}
	for _, id := range pub.Started {
		var r *backend.WorkflowRun
		waitUntil(t, 30*time.Second, "run "+id+" to complete", func() bool {
			r, err = e.client.GetRun(ctx, id)
			return err == nil && r.Status.Normalize() == backend.RunCompleted
		})
		switch r.WorkflowName {
		case "ts-echo":
			var out struct {
				Echo struct {
					ID   string            `json:"id"`
					Data map[string]string `json:"data"`
				} `json:"echo"`
				By string `json:"by"`
			}
			must(t, json.Unmarshal(r.Output, &out))
			if out.By != "ts" || out.Echo.ID != pub.ID || out.Echo.Data["msg"] != "hi" {
				t.Errorf("the TypeScript worker's output %s; want the event as input, executed by ts", r.Output)
			}
		case "go-on-order":
			if string(r.Output) != `"go"` {
				t.Errorf("the Go run's output %s", r.Output)
			}
		}
	}
	var counts backend.RunCounts
	ts.call("count", nil, &counts)
	if counts.Completed != 2 {
		t.Errorf("TS counts %+v, want the 2 triggered runs completed", counts)
	}
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
