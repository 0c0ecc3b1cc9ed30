package main

import (
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

func TestRunsStartSingleton(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := decode[backend.WorkflowRun](t, e.ok("runs", "start", "deploy", "--singleton", "main", "--json"))
	mustContain(t, "second skip start", e.ok("runs", "start", "deploy", "--singleton", "main").stdout, "nothing started: the singleton key has active run "+first.ID)
	r := e.run("runs", "start", "deploy", "--singleton", "main", "--singleton-skip-error")
	if r.code != 1 {
		t.Errorf("skip start with --singleton-skip-error: exit %d, want 1", r.code)
	}
	mustContain(t, "stderr", r.stderr, first.ID)
	mustContain(t, "queue start", e.ok("runs", "start", "deploy", "--singleton", "main", "--singleton-mode", "queue").stdout, "held until the singleton key's earlier runs end")
	fresh := decode[backend.WorkflowRun](t, e.ok("runs", "start", "deploy", "--singleton", "main", "--singleton-mode", "cancel", "--json"))
	if got, err := e.client().GetRun(t.Context(), first.ID); err != nil || got.Status != backend.RunCanceled {
		t.Errorf("the key's first run after a cancel start: %+v, %v; want canceled", got, err)
	}
	if fresh.ID == first.ID || fresh.AvailableAt == nil {
		t.Errorf("cancel start returned %+v, want a new due run", fresh)
	}
	for _, bad := range [][]string{
		{"--singleton", "main", "--singleton-mode", "drop"},
		{"--singleton-mode", "queue"},
		{"--singleton-skip-error"},
	} {
		r := e.run(append([]string{"runs", "start", "deploy"}, bad...)...)
		if r.code != 1 {
			t.Errorf("%v: exit %d, want 1", bad, r.code)
		}
		mustContain(t, "stderr", r.stderr, "--singleton")
	}
}
