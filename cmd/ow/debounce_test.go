package main

import (
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

func TestRunsStartDebounced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := decode[backend.WorkflowRun](t, e.ok("runs", "start", "reindex", "--input", `1`, "--debounce-key", "c-42", "--debounce", "1h", "--debounce-max", "2h", "--json"))
	out := e.ok("runs", "start", "reindex", "--input", `2`, "--debounce-key", "c-42", "--debounce", "1h", "--debounce-max", "2h")
	mustContain(t, "second start", out.stdout, "debounced into pending run "+first.ID)
	page, err := e.client().ListRuns(t.Context(), backend.ListWorkflowRunsParams{WorkflowName: "reindex"})
	if err != nil || len(page.Data) != 1 || string(page.Data[0].Input) != "2" {
		t.Fatalf("runs after two debounced starts: %+v, %v; want one with input 2", page, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--debounce-key", "k"}, "--debounce"},
		{[]string{"--debounce", "1s"}, "--debounce-key"},
		{[]string{"--debounce-key", "k", "--debounce", "1m", "--debounce-max", "1s"}, "debounce.maxDelay"},
		{[]string{"--debounce-key", "k", "--debounce", "1s", "--idempotency-key", "i"}, "idempotencyKey"},
	} {
		r := e.run(append([]string{"runs", "start", "reindex"}, c.args...)...)
		if r.code != 1 {
			t.Errorf("%v: exit %d, want 1", c.args, r.code)
		}
		mustContain(t, "stderr", r.stderr, c.want)
	}
}
