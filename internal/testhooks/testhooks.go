// Package testhooks lets package owtest drive a worker pass by pass
// without the root package exporting a method that only tests need.
package testhooks

import (
	"context"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Tick claims runs for the free slots of worker (an *openworkflow.Worker)
// and executes one pass of each, returning when those passes have ended,
// with the number of runs claimed. Package openworkflow sets it.
var Tick func(ctx context.Context, worker any) (int, error)

// Deliver hands event e to worker (an *openworkflow.Worker) as its
// subscription would, so that a test can stage an event's arrival at a
// moment it chooses (a pause announced before the run's pass began).
// Package openworkflow sets it.
var Deliver func(worker any, e backend.Event)

// Idle reports whether worker (an *openworkflow.Worker) could take a run
// its own process starts in the start's transaction now: started, with a
// free slot, and its last claim found no more runs than free slots (the
// crash tests wait for it before such a start). Package openworkflow sets
// it.
var Idle func(worker any) bool
