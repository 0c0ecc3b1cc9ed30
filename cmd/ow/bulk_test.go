package main

import (
	"context"
	"io"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestRunsBulk: ow runs bulk counts first (--dry-run changes nothing),
// refuses to act unconfirmed when stdin is not a terminal, names a bad
// query's position, starts a durable action that a worker drives, and
// get --follow, list and cancel-action show and stop it.
func TestRunsBulk(t *testing.T) {
	e := newEnv(t)
	e.ok("migrate")
	terminal := stdinIsTerminal
	stdinIsTerminal = func(io.Reader) bool { return false } // as under CI, whatever runs the test
	t.Cleanup(func() { stdinIsTerminal = terminal })
	c := e.client()
	ctx := context.Background()
	for range 4 {
		if _, err := c.Backend().CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "cleanup-me"}); err != nil {
			t.Fatal(err)
		}
	}
	q := `workflow = "cleanup-me" AND status = "pending"`

	r := e.ok("runs", "bulk", "cancel", "--query", q, "--dry-run")
	mustContain(t, "dry run", r.stdout, "would act on 4 runs", "nothing was changed")

	r = e.run("runs", "bulk", "cancel", "--query", q)
	if r.code == 0 {
		t.Fatalf("an unconfirmed bulk cancel without a terminal succeeded:\n%s", r.stdout)
	}
	mustContain(t, "refusal", r.stderr, "confirm with --yes", "4 runs")

	r = e.run("runs", "bulk", "cancel", "--query", `status = "nope"`, "--yes")
	mustContain(t, "bad query", r.stderr, "invalid query at 1:10", "unknown status")
	r = e.run("runs", "bulk", "cancel", "--yes")
	mustContain(t, "missing --query", r.stderr, "--query is required")
	if page, _ := c.ListBulkActions(ctx, backend.ListBulkActionsParams{}); len(page.Data) != 0 {
		t.Fatalf("refused commands stored %d actions, want none", len(page.Data))
	}

	r = e.ok("--json", "runs", "bulk", "cancel", "--query", q, "--yes", "--background", "--reason", "test")
	act := decode[backend.BulkAction](t, r)
	if act.State != backend.BulkRunning || act.Matched != 4 || act.Reason != "test" {
		t.Fatalf("started action = %+v, want running with 4 matched and its reason", act)
	}

	b, err := e.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: 1, BulkActionPoll: 20 * time.Millisecond})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctx)

	r = e.ok("runs", "bulk", "get", act.ID, "--follow")
	mustContain(t, "followed action", r.stdout, "completed", "acted      4")
	r = e.ok("runs", "bulk", "list")
	mustContain(t, "list", r.stdout, act.ID, "cancel", "completed", q)
	r = e.run("runs", "bulk", "cancel-action", act.ID)
	mustContain(t, "cancel of a completed action", r.stderr, "has already ended")
	r = e.run("runs", "bulk", "get", "bulk_nope")
	mustContain(t, "missing action", r.stderr, "no bulk action", "ow runs bulk list")
	for _, id := range []string{act.ID} {
		got, err := c.GetBulkAction(ctx, id)
		if err != nil || got.Acted != 4 {
			t.Fatalf("action after the run = %+v, %v", got, err)
		}
	}
}
