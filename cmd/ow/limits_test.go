package main

import (
	"context"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

func TestRunsStartWithPriorityAndConcurrencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := decode[backend.WorkflowRun](t, e.ok("runs", "start", "sync-account", "--input", `"c-42"`, "--priority", "-3", "--concurrency-key", "c-42", "--json"))
	if run.Priority != -3 || run.ConcurrencyKey == nil || *run.ConcurrencyKey != "c-42" {
		t.Errorf("started run: priority %d key %v; want -3 and c-42", run.Priority, run.ConcurrencyKey)
	}
	stored, err := e.client().GetRun(context.Background(), run.ID)
	if err != nil || stored.Priority != -3 || stored.ConcurrencyKey == nil {
		t.Errorf("stored run: %+v, %v", stored, err)
	}
	r := e.run("runs", "start", "sync-account", "--priority", "2147483648")
	if r.code != 1 {
		t.Errorf("--priority beyond 32 bits: exit %d", r.code)
	}
	mustContain(t, "stderr", r.stderr, "--priority")
}

func TestLimitsListAndDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("migrate") // 'limits list' reads: it creates no database
	mustContain(t, "list with none", e.ok("limits", "list").stdout, "no workflow has stored limits")
	ctx := context.Background()
	c := e.client()
	ls := c.Backend().(backend.LimitStore)
	if _, err := ls.PutWorkflowLimits(ctx, "sync-account", backend.Limits{ConcurrencyPerKey: 5, RateLimit: 10, RatePeriod: time.Minute}); err != nil {
		t.Fatal(err)
	}
	h, err := c.StartByName(ctx, "sync-account", "", nil)
	if err != nil || h.Run.QueuedAt == nil {
		t.Fatalf("a run of the limited workflow: %+v, %v; want it waiting for admission", h, err)
	}
	mustContain(t, "runs get of a waiting run", e.ok("runs", "get", h.ID).stdout, "waiting for admission:", "ow limits list")
	out := e.ok("limits", "list").stdout
	mustContain(t, "list", out, "WORKFLOW", "PER KEY", "sync-account", "10 per 1m")
	got := decode[[]backend.WorkflowLimits](t, e.ok("limits", "list", "--json"))
	if len(got) != 1 || got[0].ConcurrencyPerKey != 5 {
		t.Errorf("list --json = %+v", got)
	}
	mustContain(t, "delete", e.ok("limits", "delete", "sync-account").stdout, "removed the limits of sync-account", "1 waiting run(s) released")
	if r, err := c.GetRun(ctx, h.ID); err != nil || r.QueuedAt != nil || r.AvailableAt == nil {
		t.Errorf("after delete the run is %+v, %v; want an ordinary pending run", r, err)
	}
	mustContain(t, "list after delete", e.ok("limits", "list").stdout, "no workflow has stored limits")

	// Two declarations that differ: the list names who declared each.
	d := c.Backend().(backend.LimitDeclarer)
	if _, _, err := d.DeclareWorkflowLimits(ctx, "sync-account", backend.Limits{Concurrency: 2}, "worker a (sync-account v1)"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.DeclareWorkflowLimits(ctx, "sync-account", backend.Limits{Concurrency: 4}, "worker b (sync-account v2)"); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "list after a conflicting declaration", e.ok("limits", "list").stdout, "DECLARED BY", "REPLACED",
		"the limits concurrency 2 (declared by worker a (sync-account v1)) were replaced by concurrency 4 (declared by worker b (sync-account v2))")
	got = decode[[]backend.WorkflowLimits](t, e.ok("limits", "list", "--json"))
	if len(got) != 1 || got[0].Replaced == nil || got[0].Replaced.Concurrency != 2 || got[0].DeclaredBy != "worker b (sync-account v2)" {
		t.Errorf("list --json after a conflicting declaration = %+v", got)
	}
}
