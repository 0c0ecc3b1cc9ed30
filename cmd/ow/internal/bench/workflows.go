package bench

import (
	"context"
	"fmt"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// The bench workflows. tsbench/bench.mjs defines the same ones, with the
// same names, step names, inputs and outputs.
const (
	nameOne    = "bench-one"    // 1 step (W0, W0b, W2)
	nameSeq3   = "bench-seq3"   // 3 sequential steps (W1, W5)
	nameKeyed  = "bench-keyed"  // bench-seq3 with a concurrency limit per key (W1k)
	nameFanOut = "bench-fanout" // 10 parallel steps, then 1 (W3)
	nameSleep  = "bench-sleep"  // durable sleep of sleepFor, then 1 step (W4)
)

// fanOutWidth is the number of parallel steps of bench-fanout.
const fanOutWidth = 10

// W1k's keys and limit: run i has concurrency key "key-<i mod keyedKeys>",
// and at most keyedLimit runs per key hold a slot at once.
const (
	keyedKeys  = 100
	keyedLimit = 5
)

// fairKeys is W1f's number of fairness keys.
const fairKeys = 100

// sleepFor is bench-sleep's durable sleep.
const sleepFor = 2 * time.Second

// Input is every bench workflow's input: the run's index in its workload.
type Input struct {
	I int `json:"i"`
}

// StepResult is what every step returns: a tiny JSON object, no I/O, so
// the bench measures the engine's cost of durability and not user work.
type StepResult struct {
	I int `json:"i"`
	K int `json:"k"`
}

// Output is every bench workflow's output: the input index and the sum of
// i+k over the results of its function steps, k = 0, 1, … in step order.
// It proves that each step's recorded result reached the workflow.
type Output struct {
	I   int `json:"i"`
	Sum int `json:"sum"`
}

// expectedOutput is the output of run i of a workflow with n function
// steps: Σ_{k<n} (i+k).
func expectedOutput(i, n int) Output { return Output{I: i, Sum: n*i + n*(n-1)/2} }

// step is the body of step k of run i.
func step(i, k int) func(context.Context) (StepResult, error) {
	return func(context.Context) (StepResult, error) { return StepResult{I: i, K: k}, nil }
}

// sequence runs n sequential steps "step-0" … and sums their results.
func sequence(ctx ow.Context, in Input, n int) (Output, error) {
	out := Output{I: in.I}
	for k := range n {
		r, err := ow.Run(ctx, fmt.Sprintf("step-%d", k), step(in.I, k))
		if err != nil {
			return Output{}, err
		}
		out.Sum += r.I + r.K
	}
	return out, nil
}

var (
	oneStep = ow.Define(ow.Spec{Name: nameOne}, func(ctx ow.Context, in Input) (Output, error) {
		return sequence(ctx, in, 1)
	})

	seq3 = ow.Define(ow.Spec{Name: nameSeq3}, func(ctx ow.Context, in Input) (Output, error) {
		return sequence(ctx, in, 3)
	})

	keyed = ow.Define(ow.Spec{Name: nameKeyed, Limits: ow.Limits{ConcurrencyPerKey: keyedLimit}},
		func(ctx ow.Context, in Input) (Output, error) {
			return sequence(ctx, in, 3)
		})

	fanOut = ow.Define(ow.Spec{Name: nameFanOut}, func(ctx ow.Context, in Input) (Output, error) {
		fs := make([]*ow.Future[StepResult], fanOutWidth)
		for k := range fanOutWidth {
			fs[k] = ow.Go(ctx, fmt.Sprintf("branch-%d", k), step(in.I, k))
		}
		out := Output{I: in.I}
		for _, f := range fs {
			r, err := f.Get()
			if err != nil {
				return Output{}, err
			}
			out.Sum += r.I + r.K
		}
		r, err := ow.Run(ctx, "final", step(in.I, fanOutWidth))
		if err != nil {
			return Output{}, err
		}
		out.Sum += r.I + r.K
		return out, nil
	})

	sleepThenStep = ow.Define(ow.Spec{Name: nameSleep}, func(ctx ow.Context, in Input) (Output, error) {
		if err := ow.Sleep(ctx, "sleep", sleepFor); err != nil {
			return Output{}, err
		}
		return sequence(ctx, in, 1)
	})
)

// definitions are what every bench worker registers (W1k's adds keyed).
func definitions() []ow.Definition {
	return []ow.Definition{oneStep, seq3, fanOut, sleepThenStep}
}
