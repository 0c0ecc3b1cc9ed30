// Package testhooks lets package owtest drive a worker pass by pass
// without the root package exporting a method that only tests need.
package testhooks

import "context"

// Tick claims runs for the free slots of worker (an *openworkflow.Worker)
// and executes one pass of each, returning when those passes have ended,
// with the number of runs claimed. Package openworkflow sets it.
var Tick func(ctx context.Context, worker any) (int, error)
