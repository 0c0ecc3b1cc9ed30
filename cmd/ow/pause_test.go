package main

import (
	"context"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

func TestRunsPauseResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	c := e.client()
	h, err := c.StartByName(ctx, "greet", "v1", map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	id := h.ID

	mustContain(t, "pause", e.ok("runs", "pause", id, "--reason", "look first").stdout, "paused run "+id, "ow runs resume "+id)
	mustContain(t, "pause again", e.ok("runs", "pause", id).stdout, "already paused", `"look first"`)
	mustContain(t, "list", e.ok("runs", "list").stdout, "pending (paused)")
	mustContain(t, "get", e.ok("runs", "get", id).stdout, "status:", "pending (paused)", "paused:", `"look first"`, "ow runs resume "+id)
	run := decode[runDetail](t, e.ok("runs", "get", id, "--json")).Run
	if run == nil || run.PausedAt == nil || run.PauseReason == nil || *run.PauseReason != "look first" {
		t.Fatalf("get --json of a paused run: pausedAt %v, reason %v", run.PausedAt, run.PauseReason)
	}

	mustContain(t, "resume", e.ok("runs", "resume", id).stdout, "resumed run "+id)
	mustContain(t, "resume again", e.ok("runs", "resume", id).stdout, "neither paused nor canceled")
	if out := e.ok("runs", "list").stdout; strings.Contains(out, "(paused)") {
		t.Fatalf("list after the resume still shows a paused run:\n%s", out)
	}

	e.ok("runs", "cancel", id)
	resumed := decode[backend.WorkflowRun](t, e.ok("runs", "resume", id, "--json"))
	if resumed.ID != id || resumed.Status != backend.RunPending {
		t.Fatalf("resume of a canceled run = %s %s, want %s pending", resumed.ID, resumed.Status, id)
	}

	e.ok("runs", "cancel", id)
	r := e.run("runs", "pause", id)
	if r.code != 1 {
		t.Fatalf("pause of a canceled run: exit %d, want 1", r.code)
	}
	mustContain(t, "stderr", r.stderr, "only a pending or running run can be paused", "ow runs get "+id)
}
