package owtest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/owtest"
)

var greet = ow.Define(ow.Spec{Name: "greet"}, func(ctx ow.Context, name string) (string, error) {
	upper, err := ow.Run(ctx, "shout", func(context.Context) (string, error) { return strings.ToUpper(name), nil })
	if err != nil {
		return "", err
	}
	if err := ow.Sleep(ctx, "pause", time.Hour); err != nil {
		return "", err
	}
	return "hello, " + upper, nil
})

func TestAnEnvMovesARunAsItsClockIsAdvanced(t *testing.T) {
	env := owtest.New(t, ow.WorkerOptions{}, greet)
	h, err := greet.Start(t.Context(), env.Client, "ada")
	if err != nil {
		t.Fatal(err)
	}
	env.Drain()
	if r := env.Run(h.ID); r.Status != backend.RunRunning || r.WorkerID != nil {
		t.Fatalf("after the first drain the run is %s under %v, want parked on its sleep", r.Status, r.WorkerID)
	}
	env.Clock.Advance(time.Hour - time.Second)
	if n := env.Tick(); n != 0 {
		t.Fatalf("a second before the sleep ends, %d runs were claimed", n)
	}
	env.Clock.Advance(time.Second)
	env.Drain()
	out, err := h.Result(t.Context())
	if err != nil || out != "hello, ADA" {
		t.Fatalf("result %q, %v; want hello, ADA", out, err)
	}
	if steps := env.Steps(h.ID); len(steps) != 2 {
		t.Fatalf("%d step attempts, want the step and the sleep", len(steps))
	}
}
