package main

import (
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

// TestFairQueuesCommand: runs start --fairness-key puts the run in the
// fair queue of its key, and ow fair-queues lists the keys; a weight
// without a key, or a bad weight, is refused.
func TestFairQueuesCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mustContain(t, "fair start", e.ok("runs", "start", "deploy", "--fairness-key", "t-7", "--fairness-weight", "2").stdout, `in the fair queue of key "t-7"`)
	e.ok("runs", "start", "deploy", "--fairness-key", "t-8")
	mustContain(t, "fair-queues", e.ok("fair-queues").stdout, "t-7  2       1       0")
	page := decode[backend.FairQueues](t, e.ok("fair-queues", "--json", "--limit", "1"))
	if len(page.Queues) != 1 || page.Queues[0].Key != "t-7" || page.Next == nil {
		t.Errorf("fair-queues --json --limit 1: %+v, want key t-7 and a next page", page)
	}
	for _, bad := range [][]string{
		{"--fairness-weight", "2"},
		{"--fairness-key", "k", "--fairness-weight", "-1"},
	} {
		r := e.run(append([]string{"runs", "start", "deploy"}, bad...)...)
		if r.code != 1 {
			t.Errorf("%v: exit %d, want 1", bad, r.code)
		}
		mustContain(t, "stderr", r.stderr, "--fairness")
	}
}
