package crash

import (
	"context"
	"errors"
	"fmt"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// The workflows the worker processes execute. The test process starts their
// runs through declarations (no body), the worker processes register the
// definitions made by newDefinitions.
var (
	sequenceSpec = ow.Spec{Name: "crashtest-sequence"}
	diamondSpec  = ow.Spec{Name: "crashtest-diamond"}
	l3Spec       = ow.Spec{Name: "crashtest-l3"}

	countdownSpec    = ow.Spec{Name: "crashtest-countdown"}
	sequenceWorkflow = ow.Declare[int, int](sequenceSpec)
	// countdownWorkflow runs one step, "tick-<n>", then continues as new
	// with n-1 until n is 0, and returns the number of runs of its chain
	// (each run adds 1 to what it was given).
	countdownWorkflow = ow.Declare[countdown, int](countdownSpec)
	diamondWorkflow   = ow.Declare[int, int](diamondSpec)
	l3Workflow        = ow.Declare[int, int](l3Spec)
)

// countdown is the countdown workflow's input: the links left after this
// run, and the runs of the chain before it.
type countdown struct {
	Left int `json:"left"`
	Runs int `json:"runs"`
}

// l3Steps are the steps of the L3 workflow (ow bench's L3 shape: three
// sequential steps), in order.
var l3Steps = []string{"l3-one", "l3-two", "l3-three"}

// l3Output is what the L3 workflow returns for in.
func l3Output(in int) int { return (in+1)*2 + 10 }

// Step keys of the sequence workflow, in order. blockingStep is the one the
// first worker process of the crash test never finishes.
const (
	stepAddOne   = "add-one"
	stepDouble   = "double"
	stepAddTen   = "add-ten"
	stepMinus    = "subtract-three"
	blockingStep = stepAddTen
)

// sequenceSteps are the sequence workflow's steps in execution order.
var sequenceSteps = []string{stepAddOne, stepDouble, stepAddTen, stepMinus}

// sequenceOutput is what the sequence workflow returns for in.
func sequenceOutput(in int) int { return (in+1)*2 + 10 - 3 }

// The updatable workflow handles update "add" (its handler logged as
// updateHandlerKey, its validator as updateValidatorKey) and returns the
// number signal "stop" carries.
var (
	updatableSpec      = ow.Spec{Name: "crashtest-updatable"}
	updatableWorkflow  = ow.Declare[int, int](updatableSpec)
	updateName         = "add"
	updateHandlerKey   = "update-handler"
	updateValidatorKey = "update-validator"
)

// Step keys of the diamond workflow: prepare, then left and right in
// parallel, then combine.
const (
	stepPrepare = "prepare"
	stepLeft    = "left"
	stepRight   = "right"
	stepCombine = "combine"
)

// diamondSteps are the diamond workflow's steps.
var diamondSteps = []string{stepPrepare, stepLeft, stepRight, stepCombine}

// diamondOutput is what the diamond workflow returns for in.
func diamondOutput(in int) int { return (in+1)*2 + (in+1)*3 }

// stepRecorder wraps step functions so every execution is logged, and
// makes the configured step block until its context ends.
type stepRecorder struct {
	log   *stepLogWriter
	block string        // key of a step that blocks; "" for none
	work  time.Duration // simulated work per step
}

// run is ow.Run with the execution logged; the step name is its durable
// key (each name occurs once per run).
func run[T any](ctx ow.Context, r *stepRecorder, name string, fn func() T) (T, error) {
	return ow.Run(ctx, name, recorded(r, ctx.RunInfo().ID, name, fn))
}

// spawn is ow.Go with the execution logged.
func spawn[T any](ctx ow.Context, r *stepRecorder, name string, fn func() T) *ow.Future[T] {
	return ow.Go(ctx, name, recorded(r, ctx.RunInfo().ID, name, fn))
}

// recorded makes the step function of fn: it logs its start, does the
// simulated work (or blocks, for the blocking step), computes fn and logs
// its end. A step whose context ends first returns the context's error.
func recorded[T any](r *stepRecorder, runID, key string, fn func() T) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		var zero T
		if err := r.log.step(eventStart, runID, key); err != nil {
			return zero, err
		}
		defer func() { _ = r.log.step(eventEnd, runID, key) }()
		if key == r.block {
			<-ctx.Done()
			return zero, context.Cause(ctx)
		}
		if r.work > 0 {
			t := time.NewTimer(r.work)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return zero, context.Cause(ctx)
			case <-t.C:
			}
		}
		return fn(), nil
	}
}

// newDefinitions returns the workflow definitions a worker process
// registers, with their steps recorded by r.
func newDefinitions(r *stepRecorder) []ow.Definition {
	sequence := ow.Define(sequenceSpec, func(ctx ow.Context, in int) (int, error) {
		a, err := run(ctx, r, stepAddOne, func() int { return in + 1 })
		if err != nil {
			return 0, err
		}
		b, err := run(ctx, r, stepDouble, func() int { return a * 2 })
		if err != nil {
			return 0, err
		}
		c, err := run(ctx, r, stepAddTen, func() int { return b + 10 })
		if err != nil {
			return 0, err
		}
		return run(ctx, r, stepMinus, func() int { return c - 3 })
	})
	diamond := ow.Define(diamondSpec, func(ctx ow.Context, in int) (int, error) {
		a, err := run(ctx, r, stepPrepare, func() int { return in + 1 })
		if err != nil {
			return 0, err
		}
		left := spawn(ctx, r, stepLeft, func() int { return a * 2 })
		right := spawn(ctx, r, stepRight, func() int { return a * 3 })
		l, lerr := left.Get()
		rr, rerr := right.Get()
		if err := errors.Join(lerr, rerr); err != nil {
			return 0, err
		}
		return run(ctx, r, stepCombine, func() int { return l + rr })
	})
	countdownDef := ow.Define(countdownSpec, func(ctx ow.Context, in countdown) (int, error) {
		runs, err := run(ctx, r, fmt.Sprintf("tick-%d", in.Left), func() int { return in.Runs + 1 })
		if err != nil {
			return 0, err
		}
		if in.Left > 0 {
			return 0, ow.ContinueAsNew(countdown{Left: in.Left - 1, Runs: runs})
		}
		return runs, nil
	})
	updatable := ow.Define(updatableSpec, func(ctx ow.Context, in int) (int, error) {
		runID := ctx.RunInfo().ID
		err := ow.HandleUpdate(ctx, updateName, func(sctx context.Context, n int) (int, error) {
			return recorded(r, runID, updateHandlerKey, func() int { return in + n })(sctx)
		}, func(int) error {
			// A validator's run is logged as a start and end of its own key.
			_ = r.log.step(eventStart, runID, updateValidatorKey)
			_ = r.log.step(eventEnd, runID, updateValidatorKey)
			return nil
		})
		if err != nil {
			return 0, err
		}
		n, _, err := ow.WaitForSignal[int](ctx, "stop", ow.WithTimeout(time.Hour))
		return n, err
	})
	l3 := ow.Define(l3Spec, func(ctx ow.Context, in int) (int, error) {
		a, err := run(ctx, r, l3Steps[0], func() int { return in + 1 })
		if err != nil {
			return 0, err
		}
		b, err := run(ctx, r, l3Steps[1], func() int { return a * 2 })
		if err != nil {
			return 0, err
		}
		return run(ctx, r, l3Steps[2], func() int { return b + 10 })
	})
	return []ow.Definition{sequence, diamond, l3, scheduledWorkflow, countdownDef, updatable, newWaitEventDefinition(r)}
}
