package main

import (
	"strings"
	"testing"
)

// TestRunsStartSaysWhenAKeyWasReused: `ow runs start --idempotency-key`
// says when the key already started a run (a replay) and fails, naming
// the run, when that run's input is not this one's (issue 19).
func TestRunsStartSaysWhenAKeyWasReused(t *testing.T) {
	e := newEnv(t)
	first := e.ok("runs", "start", "greet", "--input", `{"who":"ada","n":1}`, "--idempotency-key", "k1").stdout
	mustContain(t, "first start", first, "started run wrun_")
	id := strings.Fields(strings.TrimPrefix(first, "started run "))[0]
	mustContain(t, "replay", e.ok("runs", "start", "greet", "--input", `{"n":1.0,"who":"ada"}`, "--idempotency-key", "k1").stdout,
		"the key already started run "+id)
	r := e.run("runs", "start", "greet", "--input", `{"who":"bob"}`, "--idempotency-key", "k1")
	if r.code == 0 || !strings.Contains(r.stderr, "idempotency key reused with a different input") || !strings.Contains(r.stderr, id) {
		t.Fatalf("another input under the key: exit %d, stderr %q; want an error naming run %s", r.code, r.stderr, id)
	}
	bad := e.run("runs", "start", "gr\xffeet")
	if bad.code == 0 || !strings.Contains(bad.stderr, "workflowName") || !strings.Contains(bad.stderr, "not valid text") {
		t.Fatalf("a workflow name of invalid UTF-8: exit %d, stderr %q; want it refused, naming the field", bad.code, bad.stderr)
	}
}
