package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
)

func TestRunsFork(t *testing.T) {
	bothEnvs(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.client()
		b := c.Backend().(backend.Backend)
		h, err := c.StartByName(ctx, "order", "", map[string]int{"id": 7})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: []string{"w"}, LeaseDuration: time.Hour}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"fetch", "charge"} {
			a, err := backendtest.Single(b).CreateStepAttempt(ctx, backendtest.CreateStepAttemptParams{WorkflowRunID: h.ID, WorkerID: "w", StepName: name, Kind: backend.StepFunction})
			if err == nil {
				_, err = backendtest.Single(b).CompleteStepAttempt(ctx, backendtest.CompleteStepAttemptParams{WorkflowRunID: h.ID, StepAttemptID: a.ID, WorkerID: "w", Output: json.RawMessage(`"` + name + ` done"`)})
			}
			if err != nil {
				t.Fatal(err)
			}
		}

		out := e.ok("runs", "fork", h.ID, "--from-step", "charge").stdout
		mustContain(t, "fork", out, "forked run "+h.ID, `from step "charge"`, "new run wrun_")
		forkID := strings.Fields(out[strings.Index(out, "new run ")+len("new run "):])[0]
		page, err := c.ListSteps(ctx, backend.ListStepAttemptsParams{WorkflowRunID: forkID})
		if err != nil || len(page.Data) != 2 || page.Data[0].StepName != "fetch" || string(page.Data[0].Output) != `"fetch done"` {
			t.Fatalf("the fork's steps = %+v, %v; want fetch's result and the fork's mark", page, err)
		}

		r := e.run("runs", "fork", h.ID, "--from-step", "chagre")
		if r.code != 1 {
			t.Fatalf("fork from an unknown step: exit %d", r.code)
		}
		mustContain(t, "stderr", r.stderr, `"chagre"`, `"fetch"`, `"charge"`, "ow runs get "+h.ID)
		r = e.run("runs", "fork", h.ID)
		mustContain(t, "stderr without --from-step", r.stderr, "--from-step is required")
		r = e.run("runs", "fork", "wrun_nope", "--from-step", "fetch")
		mustContain(t, "stderr of an unknown run", r.stderr, `no run "wrun_nope"`)
	})
}
