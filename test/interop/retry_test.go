package interop

import (
	"reflect"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestRunRetriedByGoIsFinishedByTSWorker: a run a TypeScript worker failed
// at its second step, retried from Go (Client.RetryRun, which adds an
// attempt of Go's own kind "retry" to its history), is claimed again by
// the TypeScript worker, which replays the completed first step without
// running it, ignores the retry mark and runs only the failed step again
// (docs/interop.md, "A run retried by hand").
func TestRunRetriedByGoIsFinishedByTSWorker(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	ts.startWorker(2, tsWorkflow{Name: "interop-fail-second", Kind: "fail-second"})

	wf := ow.Declare[struct{}, string](ow.Spec{Name: "interop-fail-second"})
	h, err := wf.Start(contextWithTimeout(t, 30*time.Second), e.client, struct{}{})
	must(t, err)
	failed := e.waitFinished(h.ID, 30*time.Second)
	if failed.Status != backend.RunFailed || !strings.Contains(string(failed.Error), "second step refused") {
		t.Fatalf("run %s is %s with error %s; want failed by its second step", h.ID, failed.Status, failed.Error)
	}
	if got := ts.stepEvents(h.ID); !reflect.DeepEqual(got, []string{"first", "second"}) {
		t.Fatalf("TypeScript ran steps %v before the retry, want [first second]", got)
	}

	ts.call("setSecondFails", map[string]any{"fails": false}, nil)
	if _, err := e.client.RetryRun(contextWithTimeout(t, 10*time.Second), backend.RetryWorkflowRunParams{WorkflowRunID: h.ID}); err != nil {
		t.Fatalf("RetryRun: %v", err)
	}
	if out := result(t, h, 30*time.Second); out != "one+two" {
		t.Errorf("output %q after the retry, want one+two", out)
	}
	if got := ts.stepEvents(h.ID); !reflect.DeepEqual(got, []string{"first", "second", "second"}) {
		t.Errorf("TypeScript ran steps %v in all, want [first second second]: the first step replayed, not run again", got)
	}
	var kinds []string
	for _, s := range e.steps(h.ID) {
		kinds = append(kinds, s.StepName+"/"+string(s.Kind)+"/"+string(s.Status))
	}
	if len(kinds) != 4 || !strings.HasPrefix(kinds[2], "__retry:") {
		t.Errorf("attempts %v; want first, the failed second, the retry mark, the completed second", kinds)
	}
}
