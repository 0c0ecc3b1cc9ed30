package openworkflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	ow "github.com/openworkflow-go/openworkflow"
)

// TestIdempotentStartSaysWhenItsInputWasDropped: a keyed start that finds
// an earlier run returns it (OpenWorkflow's semantics, so that Go and
// TypeScript share one database) and says so: Reused for a replay,
// InputDiffers and a Conflict error naming the run when the new input was
// dropped (issue 19). Inputs are compared as JSON values.
func TestIdempotentStartSaysWhenItsInputWasDropped(t *testing.T) {
	b := openTestBackend(t, nil)
	c := ow.NewClient(b)
	ctx := context.Background()
	first, err := c.StartByName(ctx, "order", "", map[string]any{"id": 7, "items": []int{1, 2}}, ow.WithIdempotencyKey("order-7"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Reused || first.InputDiffers || first.Conflict() != nil {
		t.Fatalf("the first start: Reused %v, InputDiffers %v, Conflict %v; want a new run", first.Reused, first.InputDiffers, first.Conflict())
	}
	// The same input, written otherwise (key order, number form).
	replay, err := c.StartByName(ctx, "order", "", map[string]any{"items": []float64{1.0, 2}, "id": 7.0}, ow.WithIdempotencyKey("order-7"))
	if err != nil {
		t.Fatal(err)
	}
	if replay.ID != first.ID || !replay.Reused || replay.InputDiffers || replay.Conflict() != nil {
		t.Fatalf("a replay: run %s, Reused %v, InputDiffers %v; want %s, Reused, same input", replay.ID, replay.Reused, replay.InputDiffers, first.ID)
	}
	other, err := c.StartByName(ctx, "order", "", map[string]any{"id": 8}, ow.WithIdempotencyKey("order-7"))
	if err != nil {
		t.Fatalf("a start whose key matched a run of another input: %v; want the run, as OpenWorkflow answers", err)
	}
	cerr := other.Conflict()
	if other.ID != first.ID || !other.Reused || !other.InputDiffers || !errors.Is(cerr, ow.ErrIdempotencyConflict) ||
		!strings.Contains(cerr.Error(), first.ID) || !strings.Contains(cerr.Error(), `"order-7"`) {
		t.Fatalf("another input: run %s, Reused %v, InputDiffers %v, Conflict %v; want %s flagged, the error naming the run and the key",
			other.ID, other.Reused, other.InputDiffers, cerr, first.ID)
	}
	many, err := c.StartManyByName(ctx, "order", "", []any{1, 2}, ow.WithIdempotencyKey("batch"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.StartManyByName(ctx, "order", "", []any{1, 3}, ow.WithIdempotencyKey("batch"))
	if err != nil {
		t.Fatal(err)
	}
	if many[0].Reused || !again[0].Reused || again[0].InputDiffers || !again[1].Reused || !again[1].InputDiffers {
		t.Fatalf("StartMany again: %+v %+v; want both reused, the second with another input", again[0], again[1])
	}
}
