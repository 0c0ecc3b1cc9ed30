package openworkflow

import (
	"fmt"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Fairness puts runs under fair shares between keys (tenants, customers):
// when runs of many keys wait, claims take turns between the keys in
// proportion to their weights, so a key with 100,000 queued runs delays a
// key with one run by at most one claim round, at any priority the two
// share. See [backend.Fairness] for the fields and docs/flow-control.md,
// "Fair shares", for how it is enforced.
//
// In [Spec].Fairness, an empty Key means each start's concurrency key
// ([WithConcurrencyKey]; "" when the start has none); per start,
// [WithFairness] overrides it.
type Fairness = backend.Fairness

// WithFairness puts the run under fair shares with key and weight (0:
// the default, 1; clamped to [0.001, 1000]): claims take turns between
// the keys whose runs wait, a key of weight 2 about twice as often as a
// key of weight 1. It overrides the Spec's Fairness. A key that is not
// valid text or is longer than 64 bytes, or a negative or non-finite
// weight, fails the start with an error wrapping [ErrInvalidArgument].
// Runs started with it wait out of the TypeScript SDK's claim (see
// docs/interop.md); a run of a workflow with limits is first admitted by
// its limits, in their order.
func WithFairness(key string, weight float64) StartOption {
	return func(o *startOptions) { o.fairness = &Fairness{Key: key, Weight: weight} }
}

// withSpecFairness is the Spec's Fairness as a start option: it applies
// unless the start has [WithFairness], its empty key standing for the
// start's concurrency key.
func withSpecFairness(f Fairness) StartOption {
	return func(o *startOptions) { o.specFairness = &f }
}

// resolvedFairness is the fairness a start with options o gets: its
// WithFairness, else the Spec's (an empty key taking the concurrency
// key), else none.
func (o startOptions) resolvedFairness() *backend.Fairness {
	if o.fairness != nil {
		return o.fairness
	}
	if o.specFairness == nil {
		return nil
	}
	f := *o.specFairness
	if f.Key == "" && o.concurrencyKey != nil {
		f.Key = *o.concurrencyKey
	}
	return &f
}

// checkFairness refuses a Spec whose Fairness is invalid.
func checkFairness(s Spec) error {
	if s.Fairness == nil {
		return nil
	}
	if err := s.Fairness.Validate(); err != nil {
		return fmt.Errorf("workflow %s: Spec.Fairness: %w", s, err)
	}
	return nil
}
