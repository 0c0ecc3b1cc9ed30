package openworkflow

import (
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

// TestStartFairness: a Spec's Fairness applies to every start, its empty
// key standing for the start's concurrency key; WithFairness overrides
// it; a start without either has none.
func TestStartFairness(t *testing.T) {
	spec := Fairness{Weight: 3}
	for _, c := range []struct {
		name string
		opts []StartOption
		want *backend.Fairness
	}{
		{"no fairness", []StartOption{WithConcurrencyKey("c-1")}, nil},
		{"the Spec's, keyed by the concurrency key", []StartOption{withSpecFairness(spec), WithConcurrencyKey("c-1")}, &backend.Fairness{Key: "c-1", Weight: 3}},
		{"the Spec's without a concurrency key: the empty key", []StartOption{withSpecFairness(spec)}, &backend.Fairness{Weight: 3}},
		{"the Spec's own key", []StartOption{withSpecFairness(Fairness{Key: "t"}), WithConcurrencyKey("c-1")}, &backend.Fairness{Key: "t"}},
		{"WithFairness overrides the Spec's", []StartOption{withSpecFairness(spec), WithFairness("k", 2)}, &backend.Fairness{Key: "k", Weight: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p backend.CreateWorkflowRunParams
			newStartOptions(c.opts).apply(&p)
			if (p.Fairness == nil) != (c.want == nil) || p.Fairness != nil && *p.Fairness != *c.want {
				t.Fatalf("fairness %+v, want %+v", p.Fairness, c.want)
			}
		})
	}
}

// TestRegisterRefusesABadFairness: a Spec whose Fairness is invalid is
// refused at registration, naming it.
func TestRegisterRefusesABadFairness(t *testing.T) {
	if err := checkFairness(Spec{Name: "wf", Fairness: &Fairness{Key: "k", Weight: -1}}); err == nil {
		t.Fatal("a negative weight was accepted")
	}
	if err := checkFairness(Spec{Name: "wf", Fairness: &Fairness{Key: "k"}}); err != nil {
		t.Fatalf("a valid Fairness was refused: %v", err)
	}
}
