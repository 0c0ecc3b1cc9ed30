package openworkflow

import (
	"github.com/openworkflow-go/openworkflow/backend"
)

// Singleton admits at most one active run of a workflow per key, as
// Inngest's singleton functions: see [backend.Singleton] for what
// "active" is and how the decision is taken (at the start, under a lock
// per key), and docs/flow-control.md. Set it per start ([WithSingleton])
// or on the workflow's [Spec] (the default of its [Workflow.Start]).
type Singleton = backend.Singleton

// SingletonMode is what a singleton start does when the key has an active
// run: [SingletonSkip], [SingletonQueue] or [SingletonCancel].
type SingletonMode = backend.SingletonMode

// The singleton modes ([backend.SingletonMode] says each in full).
const (
	// SingletonSkip starts nothing and returns the handle of the key's
	// active run (RunHandle.SingletonSkipped set; with
	// [WithSingletonSkipError], with [ErrSingletonSkipped] too).
	SingletonSkip = backend.SingletonSkip
	// SingletonQueue starts the run held until the key's earlier runs
	// have ended, one at a time, first started first released.
	SingletonQueue = backend.SingletonQueue
	// SingletonCancel is cancel-in-progress: the key's active runs are
	// canceled (their workers stop at their next step boundary) and the
	// run starts.
	SingletonCancel = backend.SingletonCancel
)

// ErrSingletonSkipped is returned, with the handle of the key's active
// run, by a start in mode skip given [WithSingletonSkipError] that found
// an active run of its key and started nothing.
var ErrSingletonSkipped = backend.ErrSingletonSkipped

// WithSingleton makes the start a singleton start of key in mode (skip,
// queue or cancel): at most one active run of the workflow per key
// ([Singleton]). It overrides the Spec's Singleton. A key that is not
// valid text or is longer than 1,024 bytes, or an unknown mode, fails the
// start with an error wrapping [ErrInvalidArgument]. Starts in a batch
// ([Workflow.StartMany]) cannot be singletons.
func WithSingleton(key string, mode SingletonMode) StartOption {
	return func(o *startOptions) { o.singleton = &Singleton{Key: key, Mode: mode} }
}

// WithSingletonSkipError makes a singleton start in mode skip that found
// an active run return that run's handle together with an error wrapping
// [ErrSingletonSkipped] (as DBOS's ErrQueueDeduplicated), instead of the
// handle alone. It changes nothing for other modes or other starts.
func WithSingletonSkipError() StartOption {
	return func(o *startOptions) { o.singletonSkipError = true }
}
